"""Naming the fault a step hides: the faults a learner picks from, and a guess judged on the step's run.

A wrong guess is answered with evidence, from data the scenario declares anyway: the guessed fault
is what another step of the scenario hides, and that step's checks are the symptoms it shows, so
they are evaluated over this step's run and those it measures false are what the evidence
contradicts. A fault no step of the scenario hides is described by the fault catalogue's symptom.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tinylab.config import FAULTS, ConfigError, RunConfig
from tinylab.exercises import checks
from tinylab.exercises.evaluate import evaluate_checks, format_value
from tinylab.exercises.model import CheckResult, CheckSpec, Scenario, Step
from tinylab.runs.record import RunRecord


def hidden_fault(step: Step) -> str | None:
    """The fault the step injects and hides from the learner (None: it hides none)."""
    fault = step.preset.get("fault")
    return fault if "fault" in step.hidden and isinstance(fault, str) else None


def suspects(step: Step) -> tuple[str, ...]:
    """The faults the step's run could have been launched with, in name order (an order that says
    nothing of the answer); () for a step that hides no fault."""
    if hidden_fault(step) is None:
        return ()
    out = []
    for name in sorted(FAULTS):
        try:
            RunConfig.from_dict({**step.preset, "fault": name}).validate()
        except ConfigError:  # not for this version, or for one rank
            continue
        out.append(name)
    return tuple(out)


@dataclass(frozen=True)
class Diagnosis:
    guess: str
    right: bool
    #: what the guessed fault shows: its step's check descriptions, or the catalogue's symptom
    would_show: tuple[str, ...] = ()
    #: the guessed fault's checks this step's run measured and fails: what the evidence contradicts
    contradicted: tuple[CheckResult, ...] = ()
    #: why none of them could be read here ("": one could, or the step has no run yet)
    unmeasured: str = ""
    #: this step's own checks that pass on its run: what the run does show
    shown: tuple[CheckResult, ...] = ()
    has_run: bool = False
    #: why the step's kept run could not be read (deleted, another store): "" when it was, or none is kept
    missing: str = ""

    def lines(self) -> list[str]:
        """The verdict as the faces print it: a line each, for the face to wrap."""
        if self.right:
            return [f"✓ {self.guess}: that is the fault this step injects. It shows from now on wherever "
                    "the step's run is shown."]
        if self.contradicted:
            out = [f"✗ not {self.guess}: the evidence contradicts it."]
            out += [f"{self.guess} would show: {r.description}; this run has {r.detail or format_value(r.value)}"
                    for r in self.contradicted]
        else:
            out = [f"✗ not {self.guess}.", f"{self.guess} would show: {'; '.join(self.would_show)}"]
            if self.has_run and self.unmeasured:
                out.append(f"Nothing in this run contradicts it, because the run cannot show it: {self.unmeasured}")
            elif self.missing:
                out.append(f"The step's run cannot be read to weigh the guess: {self.missing}")
            elif not self.has_run:
                out.append("Run the step to weigh a guess against its run.")
        out += [f"This run shows: {r.description} ({r.detail})" if r.detail else f"This run shows: {r.description}"
                for r in self.shown]
        return out


def diagnose(scenario: Scenario, step: Step, guess: str, run: RunRecord | None,
             baseline: RunRecord | None = None, missing: str = "") -> Diagnosis:
    """Judge `guess` for the fault `step` hides, on the step's run and baseline (the real records,
    not masked; `missing`: why the kept run could not be read, when it could not); the caller has
    checked that `guess` is one of suspects(step)."""
    if guess == hidden_fault(step):
        return Diagnosis(guess, True, has_run=run is not None)
    on_gpu = run is not None and str(run.device or "").startswith("cuda")  # the evidence is the run's
    own = _run_checks(step, run, baseline, on_gpu) if run is not None else []
    shown = tuple(r for r in own if r.status == "pass")
    theirs = next((s for s in scenario.steps if hidden_fault(s) == guess), None)
    if theirs is None:
        from tinylab.training.faults import CATALOGUE

        return Diagnosis(guess, False, (CATALOGUE[guess].symptom,), shown=shown, has_run=run is not None,
                         missing=missing)
    would_show = tuple(c.description for c in theirs.checks if c.on == "run")
    if run is None:
        return Diagnosis(guess, False, would_show, missing=missing)
    if baseline is None:  # this step makes no baseline run: the symptoms that need one cannot be read
        theirs = dataclasses.replace(theirs, checks=[c for c in theirs.checks if not _reads_baseline(c)])
    results = _run_checks(theirs, run, baseline, on_gpu)
    # a value measured and the check false: the run contradicts the symptom (None: nothing was read)
    contradicted = tuple(r for r in results if r.status == "fail" and r.value is not None)
    unmeasured = next((r.detail for r in results if r.status != "pass" and r.value is None),
                      "" if results else f"{guess} shows against a baseline run, which this step does not make")
    return Diagnosis(guess, False, would_show, contradicted, unmeasured, shown, True)


def _reads_baseline(spec: CheckSpec) -> bool:
    return any(str(leaf.args[0]).startswith(checks.BASELINE) for leaf in checks.measured_leaves(checks.parse(spec.expr)))


def _run_checks(step: Step, run: RunRecord, baseline: RunRecord | None, on_gpu: bool) -> list[CheckResult]:
    """The step's checks over a run (those over a recorded output or compiled kernels read no run)."""
    over_runs = dataclasses.replace(step, checks=[c for c in step.checks if c.on == "run"])
    return evaluate_checks(over_runs, run, baseline, on_gpu, compiled={})

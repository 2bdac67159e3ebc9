"""Run one exercise step: its baseline run first (when it compares two), then its own run, the
checks evaluated live while it goes, and the attempt recorded in the progress file at the end.

One code path for `tinylab exercises check` and the lab's step screen: `run_step` is a generator
of typed progress events; the CLI prints them, the lab's worker posts them as messages.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterator, TextIO, Union

from tinylab import exercises as ex
from tinylab.config import RunConfig
# What the faces read of a scenario and its results, named here so that they import no tinylab.exercises
from tinylab.exercises import (Attempt, CheckResult, Diagnosis, Scenario, Step, format_value, get_step, hidden_fault,
                               hidden_fields, kept_attempt, progress_path, step_passed, steps_done, suspects, verdict)
from tinylab.core.errors import UserError
from tinylab.core.events import ErrorEvent
from tinylab.profilers.registry import get_adapter
from tinylab.runs.follow import watch
from tinylab.runs.store import TERMINAL, Run
from tinylab.service.launch import check_run
from tinylab.service.machine import Machine

__all__ = ["Attempt", "CheckResult", "Checked", "Diagnosis", "RunEnded", "RunStarted", "Scenario", "Step", "StepDone",
           "StepPlan", "StepProgress", "diagnose", "format_value", "get_step", "hidden_fault", "hidden_fields",
           "kept_attempt", "plan_step", "progress_path", "run_step", "step_passed", "steps_done", "suspects", "verdict",
           "without_tool"]

#: How often a running step's checks are evaluated again (they read its files).
RECHECK_S = 1.5


@dataclass(frozen=True)
class StepPlan:
    """What a step will run on this machine: resolved before anything starts, so errors come first."""

    scenario: ex.Scenario
    step: ex.Step
    device: str
    on_gpu: bool
    config: RunConfig
    baseline: RunConfig | None
    unavailable: str = ""  # why the step's tool cannot run here: only its recorded output is read
    #: the configs whose kernels the step's `on = "anatomy"` checks compile, by role (run, baseline)
    compiled: dict[str, RunConfig] = field(default_factory=dict)

    @property
    def gpu_only(self) -> bool:
        """Every check needs a GPU and there is none: nothing to run here."""
        return not self.on_gpu and bool(self.step.checks) and all(c.needs_gpu for c in self.step.checks)

    @property
    def compile_only(self) -> bool:
        """Every check reads compiled kernels: the step compiles, on any machine, and runs nothing."""
        return self.step.compile_only


@dataclass(frozen=True)
class RunStarted:
    role: str  # "baseline" or "run"
    run_id: str
    config: RunConfig


@dataclass(frozen=True)
class RunEnded:
    role: str
    run_id: str
    status: str
    seconds: float
    error: ErrorEvent | None


@dataclass(frozen=True)
class Checked:
    """The checks over the step's run as it is now (the run may still be going)."""

    results: list[ex.CheckResult]
    status: str


@dataclass(frozen=True)
class StepDone:
    results: list[ex.CheckResult]
    run_ids: list[str] = field(default_factory=list)
    note: str = ""  # why no run was started, or why the step stopped early

    @property
    def passed(self) -> bool:
        return ex.step_passed(self.results)

    @property
    def verdict(self) -> str:
        return ex.verdict(self.results)


StepProgress = Union[RunStarted, RunEnded, Checked, StepDone]

#: What a step that only compiles says instead of a run.
COMPILED_NOTE = "no run: the checks read the step's kernels, compiled on this machine for the GPUs they name"


def plan_step(scenario: ex.Scenario, step: ex.Step, machine: Machine, requested_device: str = "auto",
              overrides: dict | None = None, check: Callable[[RunConfig], RunConfig] | None = None) -> StepPlan:
    """The step's configs for this machine, each through every pre-launch check (ConfigError/UserError);
    `check` is the caller's pre-launch check (default: check_run against `machine`)."""
    overrides = overrides or {}
    device = machine.resolve(requested_device)
    config = ex.step_config(step, device, overrides)
    baseline = ex.baseline_config(step, device, overrides)
    unavailable = ""
    if step.tool:
        status = get_adapter(step.tool).available()
        unavailable = "" if status.available else f"{step.tool} is not available here: {status.reason}"
    plan = StepPlan(scenario, step, device, machine.device_type(device) == "cuda", config, baseline, unavailable,
                    ex.compiled_configs(step, overrides))
    if not plan.gpu_only and not plan.unavailable and not plan.compile_only:
        for cfg in (baseline, config):
            if cfg is not None:
                (check or (lambda c: check_run(c, machine)))(cfg)
    return plan


def run_step(plan: StepPlan, *, start: Callable[[RunConfig], Run], output: TextIO | None = None, poll_s: float = 0.2,
             recheck_s: float = RECHECK_S, stop: Callable[[], bool] = lambda: False,
             kernel_pool: Callable[[], Any] | None = None) -> Iterator[StepProgress]:
    """Baseline first and to its end (two runs at once would skew each other's timings), then the run.

    `start` launches a config (the Lab's launch: checked, detached).
    `output` receives the runs' output.log text as it grows; `stop()` ends the watching early (the
    runs keep going; nothing is recorded). Progress is recorded once the step's run has ended.
    A step whose checks all read compiled kernels runs nothing: it compiles them in
    `kernel_pool()` (the Lab's kernel_pool) and is done.
    """
    step = plan.step
    evaluate = partial(_evaluate, plan, pool=kernel_pool)
    if plan.compile_only or plan.unavailable:  # nothing to run: the checks read compiled kernels or recorded output
        results = evaluate(None, None, unavailable=plan.unavailable)
        ex.record_progress(plan.scenario.id, step.number, results, [])
        yield StepDone(results, note=COMPILED_NOTE if plan.compile_only else without_tool(step, plan.unavailable))
        return
    if plan.gpu_only:
        yield StepDone(evaluate(None, None), note="every check of this step needs a GPU: no run was started")
        return
    records = {}
    for role, cfg in (("baseline", plan.baseline), ("run", plan.config)):
        if cfg is None:
            continue
        run = start(cfg)
        yield RunStarted(role, run.id, cfg)
        started, last_check = time.monotonic(), time.monotonic()
        status = "running"
        for status in watch(run, output, poll_s, stop=stop):
            if role == "run" and status not in TERMINAL and time.monotonic() - last_check >= recheck_s:
                last_check = time.monotonic()
                yield Checked(evaluate(run.record(), records.get("baseline")), status)
        if status not in TERMINAL:  # stopped watching
            return
        records[role] = run.record()
        yield RunEnded(role, run.id, status, time.monotonic() - started, records[role].error)
        if role == "baseline" and status != "finished":
            yield StepDone(evaluate(None, records[role]), [run.id],
                           note=f"the baseline run {status}; the step's checks need it")
            return
    results = evaluate(records["run"], records.get("baseline"))
    run_ids = [r.id for r in records.values()]
    ex.record_progress(plan.scenario.id, step.number, results, run_ids)
    yield StepDone(results, run_ids)


def without_tool(step: ex.Step, why: str) -> str:
    """What a learner without the step's tool does instead: the recorded output, the NVIDIA command."""
    lines = [f"{why}."]
    if step.recorded:
        lines.append(f"Read the recorded output instead ({step.recorded.about}): tinylab hotspots {step.recorded.path}")
    if step.nvidia:
        lines.append(f"On an NVIDIA GPU the same question: {step.nvidia}")
    return "\n".join(lines)


def _evaluate(plan: StepPlan, run, baseline, pool=None, unavailable: str = "") -> list[ex.CheckResult]:
    return ex.evaluate_checks(plan.step, run, baseline, plan.on_gpu, unavailable, compiled=plan.compiled, pool=pool)


def diagnose(scenario: ex.Scenario, step: ex.Step, guess: str, progress: dict, find_run: Callable[[str], Run]
             ) -> ex.Diagnosis:
    """The learner names the fault `step` hides: `guess` judged on the runs the step keeps (its
    kept_attempt, found by `find_run`: the real records, not masked), and the right one recorded.
    UserError for a step that hides no fault, or a guess that is none of its suspects."""
    choices = ex.suspects(step)
    if not choices:
        raise UserError(f"{scenario.id} step {step.number} hides no fault: there is nothing to name")
    if guess not in choices:
        raise UserError(f"{guess!r} is not a fault step {step.number}'s run could have: choose one of {', '.join(choices)}")
    attempt = ex.kept_attempt(progress, scenario.id, step.number)
    runs = attempt.runs(step) if attempt else {}
    records, missing = {}, ""
    for role, run_id in runs.items():
        try:
            records[role] = find_run(run_id).record()
        except UserError:  # deleted since, or in another store: no evidence to weigh the guess against
            missing = f"its {role} {run_id} is not in this run store (--runs-dir names the one it ran in)"
        except OSError as exc:
            missing = f"its {role} {run_id} cannot be read: {exc.strerror or exc}"
        if missing:
            records = {}
            break
    found = ex.diagnose(scenario, step, guess, records.get("run"), records.get("baseline"), missing)
    if found.right:
        ex.record_fault_found(scenario.id, step.number)
    return found

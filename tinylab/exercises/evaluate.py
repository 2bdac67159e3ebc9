"""Evaluating a step's checks over its runs, and the verdict a learner reads."""

from __future__ import annotations

import json
import math
from typing import Any, Callable

from tinylab.exercises import checks
from tinylab.config import RunConfig
from tinylab.runs.record import RunRecord
from tinylab.exercises.loader import compiled_configs
from tinylab.exercises.measures import Compiled, Measured, RecordedOutput
from tinylab.exercises.names import TIMED_NAMES
from tinylab.exercises.model import CheckResult, CheckSpec, Step


def evaluate_checks(step: Step, run: RunRecord | None, baseline: RunRecord | None, on_gpu: bool,
                    unavailable: str = "", compiled: dict[str, RunConfig] | None = None,
                    pool: Callable[[], Any] | None = None) -> list[CheckResult]:
    """Each check of `step` over a run (and its baseline): pass, fail or skip, never an exception.

    `run` is None when the step's run was never started (every check then says why it has no
    value); `baseline` is None when the step has none, or it was not run. `unavailable` says why
    the step's tool cannot run here: its run checks are then skipped with that reason, and only
    its `on = "recorded"` checks (over the shipped output) run. Its `on = "anatomy"` checks read
    the kernels of `compiled` (role -> config; default: compiled_configs(step, {})), compiled in
    `pool()` (a context manager giving a tinylab.anatomy.Pool; default: a new one).

    A value the run did not measure fails the check with "not measured: ...", a GPU-only check
    on a CPU is skipped with its reason, a check that compares the timings of the run and its
    baseline is skipped when either ran on a busy machine (no_quiet_run), and arithmetic problems
    fail with their message.
    """
    measured = {"run": Measured(run, "run")}
    if baseline is not None:
        measured["baseline"] = Measured(baseline, "baseline run")
    recorded = RecordedOutput(step.recorded) if step.recorded else None
    anatomy = Compiled(step, compiled_configs(step, {}) if compiled is None else compiled, pool)

    def source(name: str) -> tuple[Measured, str]:
        if name.startswith(checks.BASELINE):
            if "baseline" not in measured:
                raise checks.Missing(name, "this step's baseline run has not been run")
            return measured["baseline"], name[len(checks.BASELINE):]
        return measured["run"], name

    def lookup(name: str) -> Any:
        where, base = source(name)
        return where.value(base)

    def kernels(fname: str, *parts: str) -> float:
        where, base = source(fname)
        return where.kernel_function(base, *parts)

    instead = f"; the recorded output has it: tinylab hotspots {step.recorded.path}" if step.recorded else ""
    def no_names(name: str) -> Any:  # pragma: no cover - loading rejects names in anatomy checks
        raise checks.Missing(name, "a check over compiled kernels reads no run")

    results = []
    for spec in step.checks:
        if spec.on == "recorded" and recorded is not None:
            results.append(_evaluate_one(spec, recorded.value, recorded.kernel_function, True))
        elif spec.on == "anatomy":
            results.append(_evaluate_one(spec, no_names, anatomy.function, True))
        elif unavailable:
            results.append(CheckResult(spec.name, spec.expr, spec.description, "skip", None, unavailable, spec.on))
        else:
            results.append(_evaluate_one(spec, lookup, kernels, on_gpu, instead, no_quiet_run(spec, run, baseline)))
    return results


def no_quiet_run(spec: CheckSpec, run: RunRecord | None, baseline: RunRecord | None) -> str:
    """Why `spec` cannot judge its runs, when it compares their timings (it reads a baseline's
    TIMED_NAMES) and the run or the baseline ran on a machine its load sampler found busy: the
    difference would be the contention's, not the code's. "" otherwise."""
    try:
        names = {leaf.args[0] for leaf in checks.measured_leaves(checks.parse(spec.expr)) if leaf.op == "name"}
    except checks.ExprError:  # _evaluate_one says what is wrong with it
        return ""
    if not any(n.startswith(checks.BASELINE) and checks.base_name(n) in TIMED_NAMES for n in names):
        return ""
    busy = [(role, record.busy) for role, record in (("run", run), ("baseline run", baseline))
            if record is not None and record.busy]
    if not busy:
        return ""
    if len(busy) == 1:
        return f"no quiet run: the {busy[0][0]} was on a busy machine ({busy[0][1]})"
    return f"no quiet run: the run and the baseline run were on a busy machine (run: {busy[0][1]}; " \
           f"baseline run: {busy[1][1]})"


def _evaluate_one(spec: CheckSpec, lookup: Callable, kernels: Callable, on_gpu: bool, instead: str = "",
                  no_quiet: str = "") -> CheckResult:
    """One check; `instead` says where to read what this machine's tools cannot give (a skip's
    detail), `no_quiet` why the runs it compares were too busy to judge (no_quiet_run)."""
    def result(status: str, value: Any, detail: str) -> CheckResult:
        return CheckResult(spec.name, spec.expr, spec.description, status, value, detail, spec.on)

    if spec.needs_gpu and not on_gpu:
        return result("skip", None, f"GPU-only: {spec.gpu_reason}")
    if no_quiet:
        return result("skip", None, no_quiet)
    try:
        tree = checks.parse(spec.expr)
        outcome = checks.evaluate(tree, lookup, kernels)
        shown = checks.display_operand(tree)
        value = checks.evaluate(shown, lookup, kernels) if shown is not None else outcome
        detail = _values_detail(tree, lookup, kernels)
    except checks.Unsupported as missing:
        return result("skip", None, f"not available here: {missing.reason}{instead}")
    except checks.Missing as missing:
        return result("fail", None, f"not measured: {missing.name} ({missing.reason})")
    except checks.ExprError as exc:
        return result("fail", None, f"cannot evaluate: {exc}")
    if not isinstance(outcome, bool):  # pragma: no cover - loading rejects non-boolean checks
        return result("fail", outcome, "the expression is not a true/false test")
    return result("pass" if outcome else "fail", _rounded(value), detail)


def _values_detail(tree: checks.Node, lookup: Callable, kernels: Callable) -> str:
    """name=value for every value the check reads ("?" where `or` never needed one)."""
    parts: dict[str, str] = {}
    for leaf in checks.measured_leaves(tree):
        text = checks.leaf_text(leaf)
        try:
            parts[text] = format_value(checks.evaluate(leaf, lookup, kernels))
        except (checks.Missing, checks.ExprError):
            parts[text] = "?"
    return ", ".join(f"{k}={v}" for k, v in parts.items())


def _rounded(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.4g}")
    return value


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def step_passed(results: list[CheckResult]) -> bool:
    """All checks that ran passed, and at least one ran: skipped checks prove nothing."""
    ran = [r for r in results if r.status != "skip"]
    return bool(ran) and all(r.status == "pass" for r in ran)


#: What a check read (CheckResult.on), as a verdict says it.
_READ = {"run": "the run", "recorded": "the recorded output", "anatomy": "the compiled kernels"}


def verdict(results: list[CheckResult]) -> str:
    """A step's checks in one line: what passed or failed, and what was skipped and why. "all checks
    passed" only when none was skipped: a CPU that ran only the recorded-output checks says so."""
    ran = [r for r in results if r.status != "skip"]
    failed = sum(r.status == "fail" for r in ran)
    skipped = [r for r in results if r.status == "skip"]
    reasons = sorted({r.detail for r in skipped})
    why = f" ({reasons[0]})" if len(reasons) == 1 else " (each says why)"
    skips = f"{len(skipped)} skipped{why}" if skipped else ""
    if not ran:
        return "no check could run here" + (f": {skips}" if skips else "")
    if failed:
        return f"{failed} of {len(ran)} checks failed" + (f"; {skips}" if skips else "")
    if not skipped:
        return "all checks passed"
    read = {on: sum(r.on == on for r in ran) for on in ("recorded", "anatomy")}
    read = {"run": len(ran) - sum(read.values()), **read}
    alone = next((on for on, n in read.items() if n == len(ran)), None)
    what = f"over {_READ[alone]}" if alone else ", ".join(  # the rest read the run
        f"{n} over {_READ[on]}" for on, n in read.items() if n and on != "run")
    return f"{len(ran)} of {len(results)} checks ran and passed ({what}); {skips}"

"""A learner's progress: which steps passed, with the runs that passed them, which faults the learner
named and whose answers were revealed, in a small JSON file of their own; and from it, what a step
still hides of its run."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinylab.core.errors import UserError
from tinylab.core.safeio import UnsafeFile, read_json, write_atomic
from tinylab.exercises.evaluate import step_passed
from tinylab.exercises.model import CheckResult, PROGRESS_ENV, PROGRESS_LIMIT, Scenario, Step

# ----------------------------------------------------------------------------- progress
def progress_path() -> Path:
    override = os.environ.get(PROGRESS_ENV)
    if override:
        return Path(override)
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "tinylab" / "progress.json"


def load_progress() -> dict:
    """{"scenarios": {id: {"steps": {"N": attempt}}}}; a missing or unreadable file is empty progress.

    An attempt is {"time", "passed", "passed_at" (first time every check passed, kept), "checks":
    {name: {"status", "value", "detail"}}, "passed_checks": [...], "run_ids": [...], "passed_with"
    (the latest attempt that passed: {"time", "checks", "run_ids"}, kept through later attempts),
    "answers_at" and "found_at" (when the answers were revealed and the hidden fault named, kept)}.
    A progress file that is a FIFO, a device or larger than PROGRESS_LIMIT is a UserError: it is
    never read.
    """
    path = progress_path()
    try:
        data = read_json(path, PROGRESS_LIMIT, follow_links=True)
    except (FileNotFoundError, IsADirectoryError):
        return {"scenarios": {}}
    except UnsafeFile as exc:
        raise UserError(f"progress file ({PROGRESS_ENV}): {exc}") from None
    except UserError:  # not JSON: a fresh start, as for a missing file
        return {"scenarios": {}}
    return _well_formed(data)


def _well_formed(data: Any) -> dict:
    """Progress as readers take it: every scenario an object of `steps`, every step's attempt an
    object; anything else in a hand-edited or damaged file (steps that are a number, say) is dropped."""
    scenarios = data.get("scenarios") if isinstance(data, dict) else None
    out: dict[str, Any] = {}
    for scenario_id, entry in (scenarios.items() if isinstance(scenarios, dict) else ()):
        steps = entry.get("steps") if isinstance(entry, dict) else None
        if isinstance(steps, dict):
            out[scenario_id] = {**entry, "steps": {k: v for k, v in steps.items() if isinstance(v, dict)}}
    return {**data, "scenarios": out} if isinstance(data, dict) else {"scenarios": out}


#: When the learner revealed a step's answers, and when they named the fault it hides: kept by every
#: later attempt, each unmasking what the step hides (hidden_fields).
_KEPT_MARKS = ("answers_at", "found_at")


def record_progress(scenario_id: str, step: int, results: list[CheckResult], run_ids: list[str]) -> None:
    """Save this attempt of a step, keeping when its answers were revealed or its fault named, and
    the runs of the latest attempt that passed it (a failed retry does not take them away)."""
    data = load_progress()
    steps = data["scenarios"].setdefault(scenario_id, {}).setdefault("steps", {})
    previous = steps.get(str(step)) or {}
    now = time.time()
    passed = step_passed(results)
    attempt = {"time": now, "checks": {r.name: {"status": r.status, "value": _jsonable(r.value), "detail": r.detail}
                                       for r in results}, "run_ids": list(run_ids)}
    kept = attempt if passed else previous.get("passed_with")
    steps[str(step)] = {
        **{key: previous[key] for key in _KEPT_MARKS if previous.get(key)},
        **attempt,
        "passed": passed,
        "passed_at": previous.get("passed_at") or (now if passed else None),
        "passed_checks": [r.name for r in results if r.status == "pass"],
        **({"passed_with": kept} if isinstance(kept, dict) else {}),
    }
    _save(data)


def record_answers_revealed(scenario_id: str, step: int) -> None:
    """The learner asked for the step's answers (the lab's `a`, `exercises show --answers`): what the
    step hides is shown from now on (hidden_fields); the first time is kept."""
    _mark(scenario_id, step, "answers_at")


def record_fault_found(scenario_id: str, step: int) -> None:
    """The learner named the fault the step hides (`exercises answer`, the lab's `d`): it is shown
    from now on (hidden_fields); the first time is kept."""
    _mark(scenario_id, step, "found_at")


def _mark(scenario_id: str, step: int, key: str) -> None:
    data = load_progress()
    entry = data["scenarios"].setdefault(scenario_id, {}).setdefault("steps", {}).setdefault(str(step), {})
    if not entry.get(key):
        entry[key] = time.time()
        _save(data)


def _save(data: dict) -> None:
    """Write-then-rename, so a crash never leaves half a file."""
    path = progress_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def step_state(progress: dict, scenario_id: str, step: int) -> dict:
    """What the progress file says of one step ({} for a step never tried)."""
    return progress.get("scenarios", {}).get(scenario_id, {}).get("steps", {}).get(str(step)) or {}


def hidden_fields(progress: dict, scenario: Scenario, step: int) -> frozenset[str]:
    """The config fields of step `step`'s run still hidden from the learner: the step's `hidden`
    until the learner names the fault or reveals the answers. Passing is no reason: a step's checks
    confirm the symptom, so it passes the moment its run ends, long before the fault is found."""
    found = next((s for s in scenario.steps if s.number == step), None)
    if found is None or not found.hidden:
        return frozenset()
    state = step_state(progress, scenario.id, step)
    return frozenset() if any(state.get(key) for key in _KEPT_MARKS) else frozenset(found.hidden)


@dataclass(frozen=True)
class Attempt:
    """The attempt of a step a learner comes back to: its runs (the step's own run last, its
    baseline's before it) and its checks as they were evaluated on them."""

    passed: bool
    time: float | None
    run_ids: tuple[str, ...]
    checks: dict[str, dict[str, Any]]

    def runs(self, step: Step) -> dict[str, str]:
        """The attempt's runs by role: "baseline" (for a step that compares two) and "run"."""
        ids = self.run_ids
        if not ids:
            return {}
        return {"baseline": ids[-2], "run": ids[-1]} if step.baseline is not None and len(ids) > 1 else {"run": ids[-1]}

    def results(self, step: Step) -> list[CheckResult]:
        """The step's checks as they were evaluated on these runs (a check the file lacks, or holds
        damaged, is left out: it shows as not evaluated)."""
        out = []
        for spec in step.checks:
            got = self.checks.get(spec.name) or {}
            if got.get("status") in ("pass", "fail", "skip"):
                out.append(CheckResult(spec.name, spec.expr, spec.description, got["status"], got.get("value"),
                                       str(got.get("detail") or ""), spec.on))
        return out


def kept_attempt(progress: dict, scenario_id: str, step: int) -> Attempt | None:
    """The latest attempt that passed the step, else the latest attempt; None for a step never tried.
    What a hand-edited or damaged file holds in the wrong shape is left out, not trusted."""
    state = step_state(progress, scenario_id, step)
    kept = state.get("passed_with")
    if isinstance(kept, dict):
        passed, source = True, kept
    elif "checks" in state or "run_ids" in state:  # a file from before passed_with: its latest attempt
        passed, source = state.get("passed") is True, state
    else:
        return None
    run_ids = source.get("run_ids")
    checks = source.get("checks")
    when = source.get("time")
    return Attempt(
        passed,
        float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else None,
        tuple(r for r in run_ids if isinstance(r, str)) if isinstance(run_ids, list) else (),
        {k: v for k, v in checks.items() if isinstance(v, dict)} if isinstance(checks, dict) else {},
    )


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def steps_done(progress: dict, scenario: Scenario) -> int:
    """Steps of `scenario` whose checks have all passed at least once."""
    return sum(1 for s in scenario.steps if step_state(progress, scenario.id, s.number).get("passed_at"))

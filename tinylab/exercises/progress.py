"""A learner's progress: which steps passed and whose answers were revealed, in a small JSON file of
their own; and from it, what a step still hides of its run."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tinylab.core.errors import UserError
from tinylab.core.safeio import UnsafeFile, read_json, write_atomic
from tinylab.exercises.evaluate import step_passed
from tinylab.exercises.model import CheckResult, PROGRESS_ENV, PROGRESS_LIMIT, Scenario

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
    {name: {"status", "value", "detail"}}, "passed_checks": [...], "run_ids": [...]}. A progress
    file that is a FIFO, a device or larger than PROGRESS_LIMIT is a UserError: it is never read.
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


def record_progress(scenario_id: str, step: int, results: list[CheckResult], run_ids: list[str]) -> None:
    """Save this attempt of a step (keeping when its answers were first revealed)."""
    data = load_progress()
    steps = data["scenarios"].setdefault(scenario_id, {}).setdefault("steps", {})
    previous = steps.get(str(step)) or {}
    now = time.time()
    passed = step_passed(results)
    steps[str(step)] = {
        **({"answers_at": previous["answers_at"]} if previous.get("answers_at") else {}),
        "time": now,
        "passed": passed,
        "passed_at": previous.get("passed_at") or (now if passed else None),
        "checks": {r.name: {"status": r.status, "value": _jsonable(r.value), "detail": r.detail} for r in results},
        "passed_checks": [r.name for r in results if r.status == "pass"],
        "run_ids": list(run_ids),
    }
    _save(data)


def record_answers_revealed(scenario_id: str, step: int) -> None:
    """The learner asked for the step's answers (the lab's `a`, `exercises show --answers`): what the
    step hides is shown from now on (hidden_fields); the first time is kept."""
    data = load_progress()
    entry = data["scenarios"].setdefault(scenario_id, {}).setdefault("steps", {}).setdefault(str(step), {})
    if not entry.get("answers_at"):
        entry["answers_at"] = time.time()
        _save(data)


def _save(data: dict) -> None:
    """Write-then-rename, so a crash never leaves half a file."""
    path = progress_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def hidden_fields(progress: dict, scenario: Scenario, step: int) -> frozenset[str]:
    """The config fields of step `step`'s run still hidden from the learner: the step's `hidden`
    until the step has passed once or its answers were revealed."""
    found = next((s for s in scenario.steps if s.number == step), None)
    if found is None or not found.hidden:
        return frozenset()
    state = progress.get("scenarios", {}).get(scenario.id, {}).get("steps", {}).get(str(step)) or {}
    return frozenset() if state.get("passed_at") or state.get("answers_at") else frozenset(found.hidden)


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def steps_done(progress: dict, scenario: Scenario) -> int:
    """Steps of `scenario` whose checks have all passed at least once."""
    steps = progress.get("scenarios", {}).get(scenario.id, {}).get("steps", {})
    return sum(1 for s in scenario.steps if (steps.get(str(s.number)) or {}).get("passed_at"))

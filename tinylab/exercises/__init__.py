"""Guided exercises: scenario files, their validation, checks over real runs, and progress.

The package follows a scenario's life, a module a stage:
- `model`: what a validated scenario is (frozen dataclasses) and a check's result;
- `checks`: the small language a check is written in (parse, type-check, evaluate);
- `names`: the measured names a check may read, with their types and descriptions;
- `loader`: locating, validating and loading `exercises/<id>.toml`, and a step's RunConfigs;
- `measures`: reading those names off a run, a recorded output or the compiled kernels;
- `evaluate`: a step's checks over its runs, and the verdict;
- `progress`: which steps a learner has passed, with which runs, and what they found or revealed;
- `diagnosis`: naming the fault a step hides, a wrong guess answered by the run's evidence.

Headless on purpose: tinylab.service.exercise runs a step through this package for both the CLI
and the lab. What the faces use is named here.
"""

from tinylab.exercises import checks
from tinylab.exercises.diagnosis import Diagnosis, diagnose, hidden_fault, suspects
from tinylab.exercises.evaluate import evaluate_checks, format_value, step_passed, verdict
from tinylab.exercises.loader import (baseline_config, compiled_configs, default_root, find_scenario, get_step,
                                      load_scenario_file, load_scenarios, step_config, step_of_label)
from tinylab.exercises.measures import RecordedOutput
from tinylab.exercises.model import (LEVELS, PROGRESS_ENV, CheckResult, CheckSpec, Question, Recorded, Scenario,
                                     ScenarioError, Step)
from tinylab.exercises.names import names
from tinylab.exercises.progress import (Attempt, hidden_fields, kept_attempt, load_progress, progress_path,
                                        record_answers_revealed, record_fault_found, record_progress, step_state,
                                        steps_done)

__all__ = [
    "LEVELS", "PROGRESS_ENV", "Attempt", "CheckResult", "CheckSpec", "Diagnosis", "Question", "Recorded",
    "RecordedOutput", "Scenario", "ScenarioError", "Step", "baseline_config", "checks", "compiled_configs",
    "default_root", "diagnose", "evaluate_checks", "find_scenario", "format_value", "get_step", "hidden_fault",
    "hidden_fields", "kept_attempt", "load_progress", "load_scenario_file", "load_scenarios", "names",
    "progress_path", "record_answers_revealed", "record_fault_found", "record_progress", "step_config",
    "step_of_label", "step_passed", "step_state", "steps_done", "suspects", "verdict",
]

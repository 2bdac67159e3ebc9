"""The scenario model: what a scenario file becomes once validated (frozen dataclasses), and a check's result."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tinylab.core.errors import UserError

LEVELS = ("beginner", "intermediate", "advanced")
PROGRESS_ENV = "TINYLAB_PROGRESS_FILE"
PROGRESS_LIMIT = 16 << 20


# ----------------------------------------------------------------------------- data model
@dataclass
class Question:
    prompt: str
    answer: str
    explanation: str


@dataclass
class CheckSpec:
    name: str
    expr: str
    description: str
    needs_gpu: bool
    gpu_reason: str = ""  # why a GPU is needed: shown when the check is skipped on a CPU
    # "run": the step's run; "recorded": the step's recorded output; "anatomy": the step's kernels
    # compiled on this machine (the last two on any machine, without a run)
    on: str = "run"


@dataclass
class Recorded:
    """A real output of the step's tool, shipped with the exercises: what a learner without the tool
    (or its GPU) reads instead, and what the step's `on = "recorded"` checks read."""

    path: Path
    about: str  # where it comes from: tool, release, GPU, program


@dataclass
class Step:
    number: int  # 1-based
    title: str
    text: str  # markdown
    preset: dict  # the scenario's default preset merged with the step's own
    cpu_preset: dict  # applied on top when the run's device is a CPU
    baseline: dict | None  # preset of the comparison run (None: the step has one run)
    checks: list[CheckSpec]
    hints: list[str]
    questions: list[Question]
    tool: str | None = None  # the profiler the step is about: without it here, only the recorded output is read
    recorded: Recorded | None = None
    nvidia: str = ""  # the NVIDIA equivalent of the step's command, for a learner on an NVIDIA GPU
    #: config fields the learner must find out (a fault): masked wherever the step's run is shown
    #: until the learner names the fault or reveals the answers (tinylab.exercises.progress.hidden_fields)
    hidden: tuple[str, ...] = ()

    @property
    def compile_only(self) -> bool:
        """Every check reads compiled kernels (on = "anatomy"): the step compiles, on any machine, and runs nothing."""
        return bool(self.checks) and all(c.on == "anatomy" for c in self.checks)


@dataclass
class Scenario:
    id: str
    title: str
    level: str
    minutes: int
    summary: str
    steps: list[Step]
    path: Path
    notes: str  # instructor notes (markdown), including figures measured on GPUs
    order: int = 100  # place in the course; ties go by id


@dataclass
class CheckResult:
    name: str
    expr: str
    description: str
    status: str  # "pass" | "fail" | "skip"
    value: object
    detail: str
    on: str = "run"  # what it read, as CheckSpec.on: the step's "run", "recorded" output or compiled kernels ("anatomy")


class ScenarioError(UserError):
    """A scenario file that does not validate; the message is "FILE:LINE: problem"."""

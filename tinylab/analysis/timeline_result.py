"""What tinylab.analysis.timeline finds in a trace, as frozen typed results: each step's anatomy
(wall time, GPU busy/idle, gaps, phases, kernel categories, lanes, graph replay, diagnosis), the
shown step's memory peak, the collectives a step, and the trainer's clock beside them.

Every field keeps the name and the unit of `tinylab timeline --json`, which `Timeline.to_json()`
prints; tinylab.render.timeline lays a Timeline out for a terminal.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Gaps:
    """The idle stretches of a step's window (none of the device's events runs)."""

    count: int
    total_ms: float
    largest_ms: float
    largest_at_ms: float | None  # from the window's start
    largest_phase: str | None  # the host phase the largest gap falls in


@dataclass(frozen=True)
class PhaseTime:
    """A host phase (forward, backward, optimizer) of a step and the device work it launched."""

    name: str
    host_ms: float
    kernels: int
    kernel_ms: float


@dataclass(frozen=True)
class GraphReplay:
    """A step's graph replay: its launches and kernels, and how busy the GPU is over its span."""

    launches: int
    kernels: int
    span_ms: float
    busy_pct: float | None
    outside_ms: float  # the step's time outside the replay's span: host work between replays


@dataclass(frozen=True)
class StepAnatomy:
    """One measured step (a ProfilerStep#N window; the whole trace without one). The device fields
    (busy_ms ... idle_pct, gaps, lane) are None for a CPU run: there is no device to be busy."""

    step: int | None
    start_us: float
    wall_ms: float
    busy_ms: float | None
    compute_ms: float | None
    non_compute_ms: float | None
    idle_ms: float | None
    idle_pct: float | None
    gaps: Gaps | None
    kernels: int
    copies: int
    kernel_median_us: float | None
    phases: tuple[PhaseTime, ...]
    categories_ms: dict[str, float]  # the most time first
    lane: str | None  # a character a cell along the window: '#' busy ... '.' idle
    host_lane: str  # what the host was in: F forward, B backward, O optimizer, '.' other
    graph: GraphReplay | None
    #: device syncs and layout copies inside the step's phases, by kind: count, host ms, kernel ms
    #: (None for a step without phases: a graph replay, a foreign trace)
    host_calls: dict[str, dict[str, float]] | None = None
    diagnosis: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "phases": [dataclasses.asdict(p) for p in self.phases]}


@dataclass(frozen=True)
class MemoryPeak:
    """The memory timeline over the shown step: its peak (when, in which phase, by category) and
    a thinned series ("ms", then MB a category)."""

    peak_mb: float
    peak_at_ms: float
    peak_phase: str | None
    peak_by_category_mb: dict[str, float]
    start_mb: float
    series: dict[str, list[float]]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Communication:
    """Time in collectives a step (mean over the trace's steps) and the share hidden under compute."""

    ms: float
    hidden: float | None
    steps: int


@dataclass(frozen=True)
class TrainerTiming:
    """The trainer's own clock: the shown step's step_ms, and the median of the unprofiled steps."""

    step_ms: float
    unprofiled_ms: float
    unprofiled_steps: int


@dataclass(frozen=True)
class Timeline:
    """A trace's step anatomy. `title`, `ranks`, `rank` and `timed` are what tinylab.service.lab
    adds for a run: `ranks` is None for a trace file named by path ([] for a run of one process)."""

    source: str
    memory_source: str | None
    communication: Communication | None
    device: int | None
    has_gpu_events: bool
    steps: tuple[StepAnatomy, ...]
    shown_step: int | None
    diagnosis: str
    memory: MemoryPeak | None
    notes: tuple[str, ...]
    title: str | None = None
    ranks: tuple[int, ...] | None = None
    rank: int | None = None
    timed: TrainerTiming | None = None  # the trainer's steps are rank 0's: none for another rank

    @property
    def shown(self) -> StepAnatomy:
        """The step this timeline shows (shown_step)."""
        return next(a for a in self.steps if a.step == self.shown_step)

    def to_json(self) -> dict[str, Any]:
        """The `tinylab timeline --json` object."""
        out = {
            "source": self.source,
            "memory_source": self.memory_source,
            "communication": dataclasses.asdict(self.communication) if self.communication else None,
            "device": self.device,
            "has_gpu_events": self.has_gpu_events,
            "steps": [a.to_json() for a in self.steps],
            "shown_step": self.shown_step,
            "diagnosis": self.diagnosis,
            "memory": self.memory.to_json() if self.memory else None,
            "notes": list(self.notes),
        }
        if self.ranks is not None:  # a run's trace
            if not self.rank:
                out["timed"] = dataclasses.asdict(self.timed) if self.timed else None
            out.update(rank=self.rank, ranks=list(self.ranks))
        if self.title is not None:
            out["title"] = self.title
        return out

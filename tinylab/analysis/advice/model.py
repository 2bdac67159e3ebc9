"""What the advisor says and what it reads: the Advice item, its parts, and Facts, the run's numbers.

Rules (the family modules beside this one) are pure functions of a Facts: they read only what the
run recorded (summary, steps, ranks, the profiled step's anatomy, the kernel table, a roofline, a
compiled kernel anatomy) and return Advice or None. Reading the files into a Facts is facts.py's.

Severity, from what must be fixed first to what is fine:
- "error": the run's results are wrong (a bad init, parameters that never train): fix before speed;
- "warning": the profile cannot be trusted as it is (warm-up in the window, hidden kernels, ...);
- "suggestion": a change that can make the step faster or leaner, with a bound on the gain;
- "good": a positive finding (nothing left to gain there).

Noise (docs/advice.md): an item that claims a speedup fires only when its bound exceeds the run's
own p10-p90 step-time spread, and its Impact says how sure it is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tinylab.config import ConfigError, RunConfig
from tinylab.core.events import ProfileEvent, RankEvent, StepEvent, Summary
from tinylab.runs.record import HIDDEN

SEVERITIES = ("error", "warning", "suggestion", "good")
#: How far above the run's own spread a bound must be for each confidence: "high" at 3x the
#: spread over enough steps, "medium" at 1.5x, else "low".
SURE = ((3.0, "high"), (1.5, "medium"))
#: Measured steps below which the spread itself is too rough to be sure of more than "low".
FEW_STEPS = 5
#: ... and from which a "high" confidence is allowed.
ENOUGH_STEPS = 10


@dataclass(frozen=True)
class Quantity:
    """A number with its unit and as people read it ("89% of the step", "3.0x ln(vocab)")."""

    value: float | None
    unit: str
    text: str


@dataclass(frozen=True)
class Impact:
    """What fixing it can gain at most. `bound`: the largest factor by which `metric` (a summary
    field) can improve (a time divided, a rate multiplied by it), derived from measured shares;
    None when the item claims no number (correctness, validity, a finding that one run cannot
    size). `confidence`: for a bound, how far it stands above the run's own noise."""

    bound: float | None
    metric: str | None
    confidence: str | None
    text: str


@dataclass(frozen=True)
class Action:
    """The concrete change in this lab. `changes`: the RunConfig settings that turn this run into
    the one to try (the try-it loop launches it as run B); empty when no setting does it (a code
    change, a kernel's block size), and `text` says what to do instead."""

    text: str
    changes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Advice:
    rule: str
    severity: str
    condition: str
    measured: Quantity
    threshold: Quantity
    impact: Impact
    action: Action
    lesson: str | None  # "SCENARIO step N": the exercise step that teaches it
    evidence: tuple[str, ...]  # which file, event or number it read

    def to_json(self) -> dict[str, Any]:
        """Exactly the nine fields, as plain JSON."""
        out = dataclasses.asdict(self)
        out["evidence"] = list(self.evidence)
        return out

    @property
    def tryable(self) -> bool:
        return bool(self.action.changes)


@dataclass(frozen=True)
class Facts:
    """Everything the rules may read about one run (or one trace file: then only `timeline`)."""

    source: str  # the run's id, or the trace file's path
    config: dict[str, Any] = field(default_factory=dict)  # what ran (config.json under the start event's)
    status: str | None = None
    device: str | None = None  # "cpu", "cuda:0"; None for a trace file
    device_name: str | None = None
    device_memory_mb: float | None = None  # the GPU's capacity, when the run recorded it
    summary: Summary | None = None
    steps: tuple[StepEvent, ...] = ()
    ranks: tuple[RankEvent, ...] = ()
    profiles: tuple[ProfileEvent, ...] = ()
    timeline: dict[str, Any] | None = None  # tinylab.analysis.timeline.analyze (with "timed" for a run)
    trace: str | None = None  # the trace the timeline came from, as the evidence names it
    kernels: dict[str, Any] | None = None  # tinylab.analysis.hotspots.summarize of the whole table
    kernel_source: str | None = None  # the kernel table's file, as the evidence names it
    kernel_steps: int | None = None  # training steps the kernel table covers (None: unknown)
    roofline: dict[str, Any] | None = None  # tinylab.analysis.roofline.place, when ceilings are known
    anatomy: tuple[tuple[str, Any], ...] | None = None  # (variant, KernelReport) on the run's card
    anatomy_target: str | None = None
    capture_problem: str | None = None  # why a profile it has is empty or unreadable

    @property
    def on_gpu(self) -> bool:
        return str(self.device or "").startswith("cuda") or bool(self.timeline and self.timeline["has_gpu_events"])

    @property
    def busy(self) -> str | None:
        """Why the machine was too busy for this run's timings to be its code's, as RunRecord.busy
        asks Summary.busy (a profiled run's own steps widen its spread), or None (a trace file has
        no summary to say)."""
        return self.summary.busy(bool(self.config.get("profilers"))) if self.summary else None

    @property
    def version(self) -> str | None:
        return self.config.get("version")

    def shown_step(self) -> dict[str, Any] | None:
        """The profiled step the timeline shows (its median-wall step), or None without a trace."""
        if not self.timeline:
            return None
        return next(a for a in self.timeline["steps"] if a["step"] == self.timeline["shown_step"])

    def step_label(self) -> str:
        """The shown step as the evidence names it: "step 7", or the one window of a trace without steps."""
        shown = self.shown_step()
        return "the trace's one window" if shown is None or shown["step"] is None else f"step {shown['step']}"

    def step_ms(self) -> tuple[float | None, str]:
        """The step time bounds are taken against, and where it comes from: the unprofiled steps'
        median (the profiler slows the host), else the summary's median, else the profiled window."""
        timed = (self.timeline or {}).get("timed")
        if timed:
            return timed["unprofiled_ms"], f"the unprofiled steps' median ({timed['unprofiled_steps']} steps)"
        if self.summary and self.summary.step_ms_median:
            return self.summary.step_ms_median, "the summary's median step"
        shown = self.shown_step()
        return (shown["wall_ms"], f"the profiled {self.step_label()}") if shown else (None, "")

    def spread(self) -> tuple[float | None, int]:
        """The run's own noise: its p10-p90 step-time spread over the median (0.2 = 20 %), and how
        many steps it is measured over; from the profiled windows for a trace file."""
        s = self.summary
        if s and s.step_ms_median and s.step_ms_p10 is not None and s.step_ms_p90 is not None:
            return (s.step_ms_p90 - s.step_ms_p10) / s.step_ms_median, int(s.measured_steps or 0)
        walls = sorted(a["wall_ms"] for a in (self.timeline or {}).get("steps", []))
        if len(walls) >= 3:
            median = walls[len(walls) // 2]
            return (_quantile(walls, 0.9) - _quantile(walls, 0.1)) / median, len(walls)
        return None, len(walls)

    def run_config(self) -> RunConfig | None:
        """The run's config as a RunConfig (None for a trace file or a damaged config.json). A
        setting an exercise step hides (HIDDEN) is left at its default: an action is checked
        without it, as its text is written without it."""
        try:
            return RunConfig.from_dict({k: v for k, v in self.config.items() if v != HIDDEN}) if self.config else None
        except (ConfigError, TypeError, ValueError):
            return None


def _quantile(values: list[float], q: float) -> float:
    pos = (len(values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


# ------------------------------------------------------------------------------- shared parts
def speedup(facts: Facts, bound: float | None, what: str, metric: str = "step_ms_median") -> Impact | None:
    """The Impact of a speedup claim, or None when the claim does not stand out of the run's
    noise: the bound's gain (bound - 1) must exceed the run's own p10-p90 spread."""
    if bound is None or bound <= 1.0:
        return None
    spread, steps = facts.spread()
    gain = bound - 1.0
    if spread is None:
        return Impact(bound, metric, "low", f"at most {ratio(bound)} ({what}); low confidence: the run has no "
                                            "step-time spread to judge its noise by")
    if gain <= spread:
        return None
    sure = next((name for factor, name in SURE if gain > factor * spread), "low")
    if steps < FEW_STEPS or (sure == "high" and steps < ENOUGH_STEPS):
        sure = "low" if steps < FEW_STEPS else "medium"
    return Impact(bound, metric, sure, f"at most {ratio(bound)} ({what}); {sure} confidence: the gain is "
                                       f"{gain / spread:.1f}x the run's p10-p90 spread of {spread:.0%} over {steps} "
                                       "steps" if spread > 0 else
                  f"at most {ratio(bound)} ({what}); {sure} confidence: the {steps} measured steps did not vary")


def finding(facts: Facts, share: float, what: str) -> Impact:
    """The Impact of a finding that one run cannot size beyond its measured `share` of the step:
    the bound 1/(1-share) when it stands out of the noise, else a sentence that says it does not."""
    bound = 1.0 / (1.0 - share) if 0 <= share < 1 else None
    claim = speedup(facts, bound, what)
    if claim is not None:
        return claim
    spread, _ = facts.spread()
    noise = f" inside this run's p10-p90 spread of {spread:.0%}" if spread is not None else ""
    return Impact(None, None, None, f"{what}: {percent(share)} of the step, a gain{noise} that one run cannot measure")


def percent(share: float) -> str:
    """A share as people read it, small ones included: "12%", "1.5%", "<0.1%"."""
    return f"{share:.0%}" if share >= 0.1 else f"{share:.1%}" if share >= 0.001 else "<0.1%"


def without_fault(facts: Facts, fault: str, text: str) -> Action:
    """The fix of a teaching fault the run was launched with (the same run without it), else `text`."""
    if facts.config.get("fault") == fault:
        return action(facts, f"the same run without --fault {fault}", {"fault": None})
    return action(facts, text, {})


def ratio(value: float) -> str:
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def action(facts: Facts, text: str, changes: dict[str, Any]) -> Action:
    """An Action whose changes are kept only when the changed config is one the lab accepts (the
    same checks a launch makes, less the machine's); otherwise its text says why it cannot run."""
    cfg = facts.run_config()
    if not changes or cfg is None:
        return Action(text, {})
    text = f"{text}: {flags(changes)}" if flags(changes) else text
    try:
        changed = dataclasses.replace(cfg, **changes)
        changed.validate()
        if str(facts.device or "").startswith("cuda") or not changed.cuda_graph:
            return Action(text, dict(changes))
        changed.check_device("cpu")
    except (ConfigError, TypeError) as exc:
        return Action(f"{text} (not here: {exc})", {})
    return Action(text, dict(changes))


def flags(changes: dict[str, Any]) -> str:
    """The run flags that make the changes ("--version v2 --torch-compile --no-cuda-graph")."""
    out = []
    for key, value in changes.items():
        flag = "--" + key.replace("_", "-")
        if key == "fault" and value is None:
            continue  # said by the action's text: "the same run without --fault NAME"
        if isinstance(value, bool):
            out.append(flag if value else "--no-" + flag[2:])
        else:
            out.append(f"{flag} {value}")
    return " ".join(out)


def evidence_of_summary(facts: Facts, *keys: str) -> str:
    s = facts.summary
    parts = ", ".join(f"{k}={s.text(k)}" for k in keys) if s else "no summary"
    return f"events.jsonl summary: {parts}"


def category_ms(facts: Facts, category: str) -> tuple[float | None, str]:
    """A kernel category's time in one step (ms) and where it comes from: the profiled step's
    anatomy, else the kernel table over the steps it covers; (None, "") when neither has it."""
    shown = facts.shown_step()
    if shown is not None and shown["busy_ms"] is not None:
        return shown["categories_ms"].get(category, 0.0), f"{facts.trace}: step {shown['step']} by category"
    if facts.kernels and facts.kernels["total_ns"] and facts.kernel_steps:
        total = (facts.kernels["categories"].get(category) or {}).get("total_ns") or 0
        return total / facts.kernel_steps / 1e6, f"{facts.kernel_source}: {facts.kernel_steps} steps by category"
    return None, ""


def calls_per_step(facts: Facts, category: str) -> float | None:
    """Kernel launches of a category in one step, from the kernel table (None without one)."""
    if not facts.kernels or not facts.kernel_steps:
        return None
    return (facts.kernels["categories"].get(category) or {}).get("calls", 0) / facts.kernel_steps

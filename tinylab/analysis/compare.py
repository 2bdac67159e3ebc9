"""A/B comparison of two runs, shared by `tinylab compare`, `tinylab report` and the TUI.

Headless on purpose (no Textual, pandas only when both runs have kernel tables): the result is a
frozen `Comparison`, so the CLI prints it (tinylab.render.compare), `--json` dumps its
`to_json()` and the TUI lays it out without recomputing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinylab.analysis.hotspots_result import KernelDiff
from tinylab.core.errors import UserError
from tinylab.core.events import SUMMARY_FIELDS, Summary, number
from tinylab.runs.record import RunRecord, key_config

#: Config keys an A/B comparison is meant to vary; a difference in any other key gets a note. The
#: engine and the world size are among them: comparing 1 GPU with N is what scaling is about.
UNDER_TEST = frozenset({
    "version", "qkv_fusion", "sdpa", "swiglu_fusion", "torch_compile", "compile_mode", "cuda_graph",
    "recompute_ffn", "precision", "tf32", "fault", "profilers", "label", "parallel", "nproc_per_node", "nnodes",
})

#: The summary fields an A/B comparison shows: those with a better direction (see events.Summary).
METRICS = tuple(f for f in SUMMARY_FIELDS if f.direction)

#: Ratios this close to 1 mark neither run as better, whatever the runs' own spread.
SAME_WITHIN = 0.01
#: Metrics computed from step times: their differences are judged against the step-time spread.
TIMED = frozenset(f.key for f in METRICS if f.timed)


def step_noise(summary: Summary | None) -> float | None:
    """A run's own step-to-step spread (Summary.spread). A difference between two runs smaller
    than either run's spread is noise, not a win."""
    return summary.spread if summary is not None else None


@dataclass(frozen=True)
class RunSide:
    """Who one side of the comparison is."""

    id: str
    version: str | None
    status: str
    problem: str | None  # why its record is damaged, or None
    label: str | None
    device: str | None
    device_name: str | None
    world_size: int
    key_config: str
    config: dict[str, Any]  # the config it ran with
    busy: str | None  # why the machine was too busy for its timings (RunRecord.busy), or None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version, "status": self.status, "problem": self.problem,
                "label": self.label, "device": self.device, "device_name": self.device_name,
                "world_size": self.world_size, "key_config": self.key_config, "config": self.config,
                "busy": self.busy}


@dataclass(frozen=True)
class Noise:
    """Each run's step-to-step spread (step_noise) and the distance from 1 a ratio of step times
    must pass to mark a run better."""

    a: float | None
    b: float | None
    threshold: float

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "threshold": self.threshold}


@dataclass(frozen=True)
class MetricRow:
    """One summary field of both runs; ratio = B/A; `better` ("a", "b" or None) only outside the noise."""

    key: str
    label: str
    a: float | None
    b: float | None
    ratio: float | None
    better: str | None
    unit: str
    within_noise: bool

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "a": self.a, "b": self.b, "ratio": self.ratio,
                "better": self.better, "unit": self.unit, "within_noise": self.within_noise}


@dataclass(frozen=True)
class ConfigDiff:
    key: str
    a: Any
    b: Any
    under_test: bool  # one of the settings an A/B comparison is meant to vary (UNDER_TEST)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "a": self.a, "b": self.b, "under_test": self.under_test}


@dataclass(frozen=True)
class ScalingSide:
    world_size: int
    samples_per_s: float | None  # the whole run's
    samples_per_s_per_rank: float | None
    comm_ms: float | None  # collectives a step
    comm_hidden: float | None  # their share hidden under compute

    def to_json(self) -> dict[str, Any]:
        return {"world_size": self.world_size, "samples_per_s": self.samples_per_s,
                "samples_per_s_per_rank": self.samples_per_s_per_rank, "comm_ms": self.comm_ms,
                "comm_hidden": self.comm_hidden}


@dataclass(frozen=True)
class Scaling:
    """Two runs of different world sizes (see scaling())."""

    a: ScalingSide
    b: ScalingSide
    baseline: str  # "a" or "b": the smaller world
    efficiency: float | None
    speedup: float | None
    ideal_speedup: float

    def side(self, name: str) -> ScalingSide:
        return self.a if name == "a" else self.b

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a.to_json(), "b": self.b.to_json(), "baseline": self.baseline, "efficiency": self.efficiency,
                "speedup": self.speedup, "ideal_speedup": self.ideal_speedup}


@dataclass(frozen=True)
class Comparison:
    """Everything an A/B view shows; ratios are B/A, so > 1 means B's number is larger."""

    a: RunSide
    b: RunSide
    noise: Noise
    metrics: tuple[MetricRow, ...]
    config_diff: tuple[ConfigDiff, ...]
    notes: tuple[str, ...]
    scaling: Scaling | None  # None for runs of one world size
    kernel_diff: KernelDiff | None  # None unless both runs have a readable kernel table
    names: tuple[str, str] = ("A", "B")  # the runs' letters in the notes (a report's "C vs A": A and C)

    def to_json(self) -> dict[str, Any]:
        """The `tinylab compare --json` object."""
        return {
            "names": {"a": self.names[0], "b": self.names[1]},
            "a": self.a.to_json(), "b": self.b.to_json(), "noise": self.noise.to_json(),
            "metrics": [m.to_json() for m in self.metrics], "config_diff": [d.to_json() for d in self.config_diff],
            "notes": list(self.notes), "scaling": self.scaling.to_json() if self.scaling else None,
            "kernel_diff": self.kernel_diff.to_json() if self.kernel_diff else None,
        }


def compare_runs(a: RunRecord, b: RunRecord, names: tuple[str, str] = ("A", "B")) -> Comparison:
    """Everything an A/B view shows; ratios are B/A, so > 1 means B's number is larger. `names` are
    the runs' letters in every note (a report compares A with C, D...: its notes name C, not B)."""
    name_a, name_b = names
    notes: list[str] = []
    # every setting, defaults filled in: a run from before a setting existed ran with its default
    cfg_a, cfg_b = (r.ran_settings.to_dict() if r.ran_settings else r.ran_config for r in (a, b))
    config_diff = tuple(
        ConfigDiff(key, cfg_a.get(key), cfg_b.get(key), key in UNDER_TEST)
        for key in sorted(set(cfg_a) | set(cfg_b))
        if cfg_a.get(key) != cfg_b.get(key)
    )
    for side, cfg in ((name_a, cfg_a), (name_b, cfg_b)):
        if not cfg:
            notes.append(f"run {side}'s config.json is missing or unreadable: its settings are unknown")
    outside = [d for d in config_diff if not d.under_test]
    if outside and cfg_a and cfg_b:
        listed = ", ".join(f"{d.key} ({d.a} vs {d.b})" for d in outside)
        notes.append(f"configs differ in more than the toggles under test: {listed}; "
                     "the ratios mix those effects in")
    _device_note(a, b, notes, names)
    for side, record in ((name_a, a), (name_b, b)):
        _status_notes(side, record, notes)
        if record.busy:
            notes.append(f"the machine was busy during {side} ({record.busy}): its timings measure the contention, "
                         "not the code; run it again on a quiet machine")
    spreads = [s for s in (step_noise(a.summary), step_noise(b.summary)) if s is not None]
    noise = max([SAME_WITHIN, *spreads])
    scaled = scaling(a, b)
    notes += _superlinear_note(scaled, a, b, names)
    kernels = _kernel_diff(a, b, notes, names)
    return Comparison(
        a=_side(a, cfg_a),
        b=_side(b, cfg_b),
        noise=Noise(step_noise(a.summary), step_noise(b.summary), noise),
        metrics=tuple(_metric(f.key, f.label, f.unit, f.direction, a.summary, b.summary,
                              noise if f.key in TIMED else SAME_WITHIN) for f in METRICS),
        config_diff=config_diff,
        notes=tuple(notes),
        scaling=scaled,
        kernel_diff=kernels,
        names=names,
    )


#: A scaling efficiency this far above 1 is no measurement noise: the ranks did less work per core.
SUPERLINEAR = 1.1


def _superlinear_note(scaled: Scaling | None, a: RunRecord, b: RunRecord, names: tuple[str, str]) -> list[str]:
    if scaled is None or scaled.efficiency is None or scaled.efficiency <= SUPERLINEAR:
        return []
    base, other = names if scaled.baseline == "a" else names[::-1]
    cpu = " On a CPU torchrun gives each rank one thread (OMP_NUM_THREADS=1) while one process takes every core." \
        if str(a.device).startswith("cpu") and str(b.device).startswith("cpu") else ""
    return [f"scaling efficiency above 100%: each rank of {other} ran faster than {base} alone, so the runs did not do "
            f"the same work per core or per device.{cpu}"]


def scaling(a: RunRecord, b: RunRecord) -> Scaling | None:
    """Two runs of different world sizes: each one's ranks, samples/s (the whole run's) and samples/s
    per rank (per GPU), its collectives a step and their hidden share; and the scaling efficiency,
    the larger world's samples/s per rank over the smaller's (the baseline: the 1-rank run when
    there is one; 1.0 = every rank as fast as alone). None when the world sizes are the same."""
    if a.world_size == b.world_size:
        return None
    sides = {}
    for side, record in (("a", a), ("b", b)):
        s = record.summary
        total = s.samples_per_s if s else None
        sides[side] = ScalingSide(record.world_size, total, total / record.world_size if total is not None else None,
                                  s.comm_ms if s else None, s.comm_hidden if s else None)
    base, other = ("a", "b") if a.world_size < b.world_size else ("b", "a")
    per_base, per_other = sides[base].samples_per_s_per_rank, sides[other].samples_per_s_per_rank
    known = bool(per_base) and per_other is not None
    return Scaling(sides["a"], sides["b"], base,
                   efficiency=per_other / per_base if known else None,
                   speedup=sides[other].samples_per_s / sides[base].samples_per_s if known else None,
                   ideal_speedup=sides[other].world_size / sides[base].world_size)


def _side(record: RunRecord, cfg: dict[str, Any]) -> RunSide:
    return RunSide(
        id=record.id,
        version=record.version,
        status=record.status,
        problem=record.problem,
        label=record.label,
        device=record.device,
        device_name=record.device_name,
        world_size=record.world_size,
        key_config=key_config(record.ran_settings),
        config=cfg,
        busy=record.busy,
    )


def _metric(key: str, label: str, unit: str, direction: int, sa: Summary | None, sb: Summary | None,
            threshold: float) -> MetricRow:
    """One row; `better` only when the ratio is further from 1 than `threshold` (noise never wins),
    further either way: 0.5x is as far from 1 as 2x, so a time and its rate get the same verdict."""
    va, vb = (float(v) if (v := number(s.get(key) if s else None)) is not None else None for s in (sa, sb))
    ratio = vb / va if va is not None and vb is not None and va != 0 else None
    distance = None if ratio is None else (max(ratio, 1 / ratio) - 1 if ratio > 0 else float("inf"))
    better = None
    noise = distance is not None and SAME_WITHIN <= distance < threshold
    if distance is not None and distance >= threshold:
        better = "b" if (ratio > 1) == (direction > 0) else "a"
    return MetricRow(key, label, va, vb, ratio, better, unit, noise)


def _device_note(a: RunRecord, b: RunRecord, notes: list[str], names: tuple[str, str]) -> None:
    da, db = (a.device, a.device_name), (b.device, b.device_name)
    if a.device and b.device and da != db:
        notes.append(f"the runs used different devices: {names[0]} on {da[0]} ({da[1]}), {names[1]} on {db[0]} "
                     f"({db[1]}); their timings do not compare")


def _status_notes(side: str, record: RunRecord, notes: list[str]) -> None:
    status = record.status
    if record.problem:
        notes.append(f"run {side} ({record.id}) is damaged ({record.problem}): what it records may be wrong")
    if status == "running":
        notes.append(f"run {side} ({record.id}) is still running: its numbers may change")
    elif status == "failed":
        err = record.error
        why = f": {err.type}: {err.message}" if err else ""
        notes.append(f"run {side} ({record.id}) failed{why}")
    elif status != "finished":
        notes.append(f"run {side} ({record.id}) is {status}: it did not finish")
    summary = record.summary
    if summary is None:
        notes.append(f"run {side} ({record.id}) has no summary: its metrics are blank")
        return
    if summary.partly_trained:
        notes.append(f"run {side} trained only {summary.params_trained:.0f} of {summary.params_total:.0f} "
                     "parameter tensors: a step that skips gradients is fast for the wrong reason")


def load_kernels(record: RunRecord, notes: list[str], who: str) -> tuple[Any, str] | None:
    """The run's kernel table and its format, or None; an unreadable table is a note, not a crash."""
    if not record.has_kernel_table:
        return None  # spares the common unprofiled run the pandas import
    try:
        from tinylab.analysis.hotspots import load_run_kernel_table

        return load_run_kernel_table(record.dir, record.profiles)  # the record holds the run's profile events
    except ImportError:  # the analysis stack (pandas) is optional for everything but kernel tables
        return None
    except (UserError, OSError, ValueError, KeyError) as exc:  # pandas' parse errors are ValueErrors
        notes.append(f"could not read the kernel table of {who}: {exc}")
        return None


def _kernel_diff(a: RunRecord, b: RunRecord, notes: list[str], names: tuple[str, str]) -> KernelDiff | None:
    noted = len(notes)
    tables = {side: load_kernels(record, notes, f"run {side}") for side, record in zip(names, (a, b))}
    present = [side for side, table in tables.items() if table is not None]
    if len(present) == 1 and len(notes) == noted:  # the other run has none (rather than a broken one)
        missing = names[1] if present == [names[0]] else names[0]
        notes.append(f"only run {present[0]} has a kernel table: profile run {missing} too "
                     "(e.g. --profile pytorch) for a kernel diff")
    if len(present) < 2:
        return None
    from tinylab.analysis.hotspots import kernel_diff

    (table_a, fmt_a), (table_b, fmt_b) = tables[names[0]], tables[names[1]]

    if fmt_a != fmt_b:
        notes.append(f"the kernel tables come from different sources ({fmt_a} vs {fmt_b}): "
                     "kernel names may not line up")
    ranked = [side for side, (table, _) in tables.items() if table.attrs.get("ranks")]
    if ranked:
        notes.append(f"the kernel diff reads rank 0's table of {' and '.join(f'run {s}' for s in ranked)} "
                     "(ranks are never merged: `tinylab hotspots RUN --rank N` shows another)")
    return kernel_diff(table_a, table_b, top=10)

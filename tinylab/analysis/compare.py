"""A/B comparison of two runs, shared by `tinylab compare`, `tinylab report` and the TUI.

Headless on purpose (no Textual, pandas only when both runs have kernel tables): the result is a
frozen `Comparison`, so the CLI prints it (tinylab.render.compare), `--json` dumps its
`to_json()` and the TUI lays it out without recomputing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from tinylab.analysis.hotspots_result import KernelDiff
from tinylab.analysis.stats import (
    ASSUMED,
    LEVEL,
    SAME_BAND,
    SECONDARY_LEVEL,
    RatioInterval,
    RunValue,
    Variation,
    history_variation,
    ratio_interval,
)
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

#: Ratios of exact (untimed) figures this close to 1 mark neither run as better.
SAME_WITHIN = 0.01
#: Metrics measured in time (or energy): their verdicts come from an interval on the B/A ratio that
#: sees between-run variation (tinylab.analysis.stats), never from the runs' own spread alone.
TIMED = frozenset(f.key for f in METRICS if f.timed)
#: The row whose interval says whether a comparison is settled (`compare --repeat auto`).
HEADLINE = "samples_per_s"
#: The timed rows judged at stats.LEVEL (95 %): the step's own figures. The others (its p90, its
#: phases) are judged at stats.SECONDARY_LEVEL (99 %): there are more of them and they move more.
PRIMARY = frozenset({"samples_per_s", "tokens_per_s", "step_ms_median", "mfu", "energy_j_per_sample"})


def step_noise(summary: Summary | None) -> float | None:
    """A run's own step-to-step spread (Summary.spread), shown beside the between-run spread."""
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
    """Each side's own step-to-step spread (step_noise, of its first run) and the machine's
    run-to-run variation the intervals start from (its history of repeated configs, or assumed)."""

    a: float | None
    b: float | None
    variation: Variation

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "variation": self.variation.to_json()}


@dataclass(frozen=True)
class MetricRow:
    """One summary field of both sides; ratio = B/A. A timed row's figures are each side's
    geometric mean over its pooled runs, and `better` ("a", "b" or None: not sure) comes from its
    `interval`; an exact row (loss, parameters, memory) compares the first runs' values."""

    key: str
    label: str
    a: float | None
    b: float | None
    ratio: float | None
    better: str | None
    unit: str
    interval: RatioInterval | None = None  # timed rows with a figure on both sides

    @property
    def not_sure(self) -> bool:
        """A timed row whose interval names no side and is not inside the same-band."""
        return self.interval is not None and not self.interval.sure

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "a": self.a, "b": self.b, "ratio": self.ratio,
                "better": self.better, "unit": self.unit, "timed": self.key in TIMED,
                "interval": self.interval.to_json() if self.interval else None}


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
    pooled: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # each side's run ids, its own first
    #: the headline row's interval at stats.SECONDARY_LEVEL: what `settled` reads (see there)
    strict: RatioInterval | None = None

    def row(self, key: str) -> MetricRow | None:
        return next((m for m in self.metrics if m.key == key), None)

    def settled(self) -> str | None:
        """What settles this comparison for `compare --repeat auto`, or None while it is not sure:
        the headline row's 99% interval excludes 1 (a side is better) or lies inside ±SAME_BAND (the
        same). 99, not 95: auto looks after every pair, and each look is another chance for a lucky
        streak to pass (five looks at 95% would stop on identical configs about one time in seven)."""
        interval = self.strict
        if interval is None or not interval.sure:
            return None
        if interval.same:
            return f"the 99% interval is inside ±{SAME_BAND:.0%}: the same"
        return f"the 99% interval excludes 1: {self.names[0 if interval.better == 'a' else 1]} is better"

    def to_json(self) -> dict[str, Any]:
        """The `tinylab compare --json` object."""
        return {
            "names": {"a": self.names[0], "b": self.names[1]},
            "pooled": {"a": list(self.pooled[0]), "b": list(self.pooled[1])},
            "a": self.a.to_json(), "b": self.b.to_json(), "noise": self.noise.to_json(),
            "metrics": [m.to_json() for m in self.metrics], "config_diff": [d.to_json() for d in self.config_diff],
            "notes": list(self.notes), "scaling": self.scaling.to_json() if self.scaling else None,
            "kernel_diff": self.kernel_diff.to_json() if self.kernel_diff else None,
        }


def compare_runs(a: RunRecord, b: RunRecord, names: tuple[str, str] = ("A", "B"), *,
                 more_a: Sequence[RunRecord] = (), more_b: Sequence[RunRecord] = (),
                 variation: Variation = ASSUMED) -> Comparison:
    """Everything an A/B view shows; ratios are B/A, so > 1 means B's number is larger. `names` are
    the runs' letters in every note (a report compares A with C, D...: its notes name C, not B).
    `more_a`/`more_b`: repeats of each side's config, pooled with it in the timed rows' intervals;
    `variation`: the machine's run-to-run spread (machine_variation), the intervals' prior."""
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
    pool_a, pool_b = _pool(a, more_a, name_a, notes), _pool(b, more_b, name_b, notes)
    for side, pool in ((name_a, pool_a), (name_b, pool_b)):
        _status_notes(side, pool[0], notes)
        busy = [r for r in pool if r.busy]
        if busy:
            which = "" if len(pool) == 1 else f" ({len(busy)} of its {len(pool)} runs)"
            notes.append(f"the machine was busy during {side}{which}: {busy[0].busy}; its intervals allow for "
                         "that contention, which makes a verdict need a larger difference")
    scaled = scaling(a, b)
    notes += _superlinear_note(scaled, a, b, names)
    kernels = _kernel_diff(a, b, notes, names)
    metrics = tuple(_timed(f.key, f.label, f.unit, f.direction, pool_a, pool_b, variation) if f.key in TIMED
                    else _metric(f.key, f.label, f.unit, f.direction, a.summary, b.summary) for f in METRICS)
    return Comparison(
        a=_side(a, cfg_a),
        b=_side(b, cfg_b),
        noise=Noise(step_noise(a.summary), step_noise(b.summary), variation),
        metrics=metrics,
        config_diff=config_diff,
        notes=tuple(notes),
        scaling=scaled,
        kernel_diff=kernels,
        names=names,
        pooled=(tuple(r.id for r in pool_a), tuple(r.id for r in pool_b)),
        strict=ratio_interval(*([v for r in pool if (v := run_value(r, HEADLINE)) is not None] for pool in (pool_a, pool_b)),
                              next(f.direction for f in METRICS if f.key == HEADLINE), variation, SECONDARY_LEVEL),
    )


def _pool(first: RunRecord, more: Sequence[RunRecord], side: str, notes: list[str]) -> list[RunRecord]:
    """A side's runs: `first`, then those repeats that ran its config (a repeat that did not is
    left out, with a note: pooling other work would average two experiments)."""
    pool = [first]
    for record in more:
        if record.id in {r.id for r in pool}:
            continue
        if same_config(record) != same_config(first):
            notes.append(f"run {record.id} is not a repeat of {side}'s config ({record.key_config}): left out")
            continue
        if record.status != "finished" or record.summary is None:
            notes.append(f"repeat {record.id} of {side} is {record.status} without a summary: left out")
            continue
        pool.append(record)
    return pool


def run_value(record: RunRecord, key: str) -> RunValue | None:
    """A run's figure of timed metric `key`, with its steps' sampling error and its busy mark."""
    return RunValue.from_summary(record.id, record.summary, key, bool(record.busy))


def _timed(key: str, label: str, unit: str, direction: int, pool_a: list[RunRecord], pool_b: list[RunRecord],
           variation: Variation) -> MetricRow:
    """A timed row: each side's geometric mean over its runs, and the interval's verdict."""
    va, vb = ([v for r in pool if (v := run_value(r, key)) is not None] for pool in (pool_a, pool_b))
    interval = ratio_interval(va, vb, direction, variation, LEVEL if key in PRIMARY else SECONDARY_LEVEL)
    if interval is None:  # a side without the figure: the plain values, no verdict
        return _metric(key, label, unit, 0, pool_a[0].summary, pool_b[0].summary)
    return MetricRow(key, label, _geomean(va), _geomean(vb), interval.ratio, interval.better, unit, interval)


def _geomean(values: list[RunValue]) -> float:
    if len(values) == 1:  # a lone run's figure exactly as it recorded it
        return values[0].value
    return math.exp(sum(math.log(v.value) for v in values) / len(values))


def same_config(record: RunRecord) -> str:
    """What makes two runs repeats of one experiment: their whole config but the label."""
    cfg = record.ran_settings.to_dict() if record.ran_settings else record.ran_config
    return repr(sorted((k, v) for k, v in cfg.items() if k != "label"))


def machine_variation(records: Iterable[RunRecord], like: RunRecord, leave_out: Iterable[str] = ()) -> Variation:
    """The run-to-run spread of step times on `like`'s machine at its size, from the store's own
    history: finished, unprofiled, fault-free runs on the same device and of the same sizes, grouped
    by their whole config (the same config run again is a repeat; its label does not count). Busy
    runs are left out: their contention is allowed for separately (stats.BUSY_SIGMA). `leave_out`:
    the ids of the runs being compared, whose spread is the data, not the prior (counted twice, it
    would make their interval look surer than it is)."""
    def size(record: RunRecord) -> tuple[Any, ...] | None:
        cfg = record.ran_settings
        if cfg is None:
            return None
        return (record.device_name, str(record.device).split(":")[0], cfg.batch_size, cfg.seq_len,
                cfg.hidden_dim, cfg.num_layers, cfg.precision, record.world_size)

    want, skip = size(like), set(leave_out)
    groups: dict[str, list[float]] = {}
    for record in records:
        if record.id in skip:
            continue
        cfg, s = record.ran_settings, record.summary
        if (cfg is None or s is None or record.status != "finished" or cfg.profilers or cfg.fault
                or record.busy or size(record) != want or not s.step_ms_median):
            continue
        groups.setdefault(same_config(record), []).append(float(s.step_ms_median))
    return history_variation(groups.values(), f"{like.device_name or 'this device'} at this size")


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


def _metric(key: str, label: str, unit: str, direction: int, sa: Summary | None, sb: Summary | None) -> MetricRow:
    """An exact row; `better` when the ratio is further from 1 than SAME_WITHIN either way (0.5x
    is as far from 1 as 2x); no `direction` (0): no verdict."""
    va, vb = (float(v) if (v := number(s.get(key) if s else None)) is not None else None for s in (sa, sb))
    ratio = vb / va if va is not None and vb is not None and va != 0 else None
    distance = None if ratio is None else (max(ratio, 1 / ratio) - 1 if ratio > 0 else float("inf"))
    better = None
    if direction and distance is not None and distance >= SAME_WITHIN:
        better = "b" if (ratio > 1) == (direction > 0) else "a"
    return MetricRow(key, label, va, vb, ratio, better, unit)


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

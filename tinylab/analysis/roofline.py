"""Roofline of a run: the step and its kernels against ceilings measured on this device.

A point is (arithmetic intensity = FLOPs / bytes, achieved FLOP/s). The roof at an intensity
is min(GEMM rate, intensity x copy bandwidth); a kernel left of the ridge is memory-bound and
its distance to the roof says how much faster it could get. FLOPs and bytes come from an
analytic model of each op at the run's shapes (the minimum bytes: every input read once, every
output written once), so a kernel that re-reads memory shows up as far below its roof.
Kernels whose work is not modelled (vendor GEMMs under anonymous names, PyTorch elementwise
kernels) are aggregated by category where that is meaningful, and listed as unplaced otherwise.

Nothing runs above its roof. A point that would sit above it (by more than ROOF_TOLERANCE, the
noise of the measured ceilings) is not plotted: it is listed as flagged, with the reason. Either
its model counts more bytes or FLOPs than the kernel moves, or the time is divided by the wrong
number of steps, or (the common case at the workshop size) the kernel's data sat in the L2
cache, whose bandwidth is a multiple of DRAM's, so the DRAM roof does not bound it. The byte
models are checked against the bytes the kernels really load and store (tests/analysis/
test_roofline.py counts them in the Triton interpreter). Per-step work is divided by the steps
the tool saw: the PyTorch profiler's (and proton's) active window, or every step of the run for
a tool that wraps the whole process; ncu sees its first N launches, which are not whole steps.

Under proton a Triton kernel's FLOPs and bytes are proton's own: what the kernel's launch metadata
gave it at each launch's shapes (the same formulas, kernels.work). Each such
point says how its counts compare with the model's at the config's shapes ("model_ratio"): where
they differ, a launch ran at other shapes or dtypes than the config's (a residual stream's norm,
an fp32 input under autocast).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.core.safeio import DOCUMENT_LIMIT, read_json
from tinylab.core.window import profile_schedule
from tinylab.config.flops import forward_flops_per_token, training_flops_per_step
from tinylab.profilers import registry
from tinylab.profilers.base import RUN, WINDOW
from tinylab.profilers.proton import ProtonAdapter

if TYPE_CHECKING:
    from kernels.work import OpModel

ELEMENT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
#: How far above its roof a point may sit and still be plotted: the measured ceilings' noise
#: (a copy kernel is not the fastest possible reader and writer, by a few %).
ROOF_TOLERANCE = 0.05
ABOVE_ROOF = ("above its roof: the model counts more bytes or FLOPs than the kernel moves, or the time "
              "is divided by the wrong number of steps")


def op_models(cfg: RunConfig) -> list[tuple[re.Pattern[str], OpModel]]:
    """Per-call models of the lab's own Triton kernels at this config's shapes (the formulas are
    kernels.work's, which the kernels' launch metadata evaluates too)."""
    from kernels import work  # the kernels' own formulas (importing the kernels package imports torch and triton)

    eb = ELEMENT_BYTES.get(cfg.precision, 4)
    t = cfg.batch_size * cfg.seq_len  # token rows
    d, f, v, hd = cfg.hidden_dim, cfg.ffn_dim, cfg.vocab_size, cfg.head_dim
    h, kv, s, b = cfg.num_heads, cfg.num_kv_heads, cfg.seq_len, cfg.batch_size
    gemm_weights = v * d + cfg.num_layers * (d * (h + 2 * kv) * hd + h * hd * d + 3 * f * d)
    return [
        (re.compile(r"^_rmsnorm_fwd"), work.rmsnorm_fwd(t, d, eb)),
        (re.compile(r"^_rmsnorm_bwd"), work.rmsnorm_bwd(t, d, eb)),
        (re.compile(r"^_add_rmsnorm_fwd"), work.rmsnorm_fwd(t, d, eb, residual=True)),
        (re.compile(r"^_add_rmsnorm_bwd"), work.rmsnorm_bwd(t, d, eb, residual=True)),
        (re.compile(r"^_swiglu_fwd"), work.swiglu_fwd(t, f, eb)),
        (re.compile(r"^_swiglu_bwd"), work.swiglu_bwd(t, f, eb)),
        (re.compile(r"^_rope_gqa"), work.rope_gqa(t, h, kv, hd, eb)),
        # v3: one call rotates the q and k heads together (models/v3_triton.py)
        (re.compile(r"^_rope"), work.rope(t, h + kv, h + kv, hd, eb)),
        (re.compile(r"^_attn_fwd"), work.attention_fwd(b, h, kv, s, hd, eb)),
        (re.compile(r"^_attn_bwd_dkdv"), work.attention_bwd_dkdv(b, h, kv, s, hd, eb)),
        (re.compile(r"^_attn_bwd_dq"), work.attention_bwd_dq(b, h, kv, s, hd, eb)),
        (re.compile(r"^_cross_entropy"), work.cross_entropy(t, v, eb)),
        (re.compile(r"^_scale_kernel$"), work.scale(t * v, eb)),
        # v4's optimizer over its flat GEMM weights, a launch per layer (kernels/adamw.py)
        (re.compile(r"^_adamw"), dataclasses.replace(work.adamw(gemm_weights, eb if eb < 4 else 0), per="step")),
        (re.compile(r"^_embedding_backward"), work.embedding_backward(t, d)),
    ]


def step_model(cfg: RunConfig, param_elements: int) -> OpModel:
    """A whole training step: model FLOPs and a lower bound on its bytes.

    Bytes: each weight read in the forward and twice in the backward at the compute precision,
    its gradient written, and AdamW's fp32 read of weight, gradient and both moments plus the
    write of weight and moments; plus one write and one read of each layer's saved activations
    (about 10 hidden-sized and 3 ffn-sized tensors per token and layer).
    """
    from kernels.work import OpModel

    eb = ELEMENT_BYTES.get(cfg.precision, 4)
    weights = param_elements * (3 * eb + eb + 7 * 4)
    t = cfg.batch_size * cfg.seq_len
    acts = 2 * t * cfg.num_layers * (10 * cfg.hidden_dim + 3 * cfg.ffn_dim) * eb
    return OpModel(training_flops_per_step(cfg), weights + acts)


def gemm_flops_per_step(cfg: RunConfig) -> float:
    """Matmul FLOPs outside attention: all of the model's FLOPs that vendor GEMMs do."""
    t = cfg.batch_size * cfg.seq_len
    attn = 2 * 2 * cfg.num_heads * cfg.head_dim * (cfg.seq_len + 1) / 2 * cfg.num_layers
    return 3 * (forward_flops_per_token(cfg) - attn) * t


def roof(intensity: float, peak_tflops: float, bandwidth_gbps: float) -> float:
    """Attainable TFLOP/s at this arithmetic intensity (FLOP/byte)."""
    return min(peak_tflops, intensity * bandwidth_gbps / 1e3)


def steps_seen(tool: str | None, cfg: RunConfig, steps_run: int | None) -> int | None:
    """How many training steps a tool's kernel table covers, as its adapter declares (table_steps):
    the PyTorch profiler's active window (pytorch, proton), every step of the run for a tool that
    wraps the whole process, and None (unknown) otherwise: ncu profiles its first N launches, which
    cut through a step, and a table read from a file names no tool."""
    adapter = registry.adapter_class(tool)
    covers = adapter.table_steps if adapter else None
    if covers == WINDOW:
        return profile_schedule(cfg.num_steps, cfg.profile_steps, cfg.warmup_steps, bool(cfg.cuda_graph),
                                cfg.graph_warmup_iters)[2]
    if covers == RUN:
        return steps_run or cfg.num_steps
    return None


@dataclass(frozen=True)
class RooflinePoint:
    """The step, or a kernel (or all GEMMs), placed: its intensity, what it achieved, its roof."""

    name: str
    intensity: float  # FLOP / byte
    achieved_tflops: float
    achieved_gbps: float
    roof_tflops: float
    pct_of_roof: float
    bound: str  # "memory" (left of the ridge) or "compute"
    reason: str | None = None  # why a flagged point cannot sit where its numbers put it
    source: str | None = None  # the profiler whose own count its FLOPs and bytes are (proton), None: the model's
    model_ratio: dict[str, float] | None = None  # that count over the model's ("flops", "bytes")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "intensity": self.intensity, "achieved_tflops": self.achieved_tflops,
                "achieved_gbps": self.achieved_gbps, "roof_tflops": self.roof_tflops, "pct_of_roof": self.pct_of_roof,
                "bound": self.bound, **({"reason": self.reason} if self.reason is not None else {}),
                **({"source": self.source, "model_ratio": self.model_ratio} if self.source is not None else {})}


@dataclass(frozen=True)
class NotPlaced:
    name: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason}


@dataclass(frozen=True)
class Placement:
    """A run against its card's ceilings: the points plotted (never above their roof), those
    flagged above it with the reason, those skipped, and the kernel names with no model."""

    points: tuple[RooflinePoint, ...]
    flagged: tuple[RooflinePoint, ...]
    skipped: tuple[NotPlaced, ...]
    unplaced: tuple[str, ...]
    steps_seen: int | None
    peak_tflops: float
    bandwidth_gbps: float
    l2_bytes: float | None
    ridge_intensity: float

    def to_json(self) -> dict[str, Any]:
        """The `tinylab roofline --json` object."""
        return {"points": [p.to_json() for p in self.points], "flagged": [p.to_json() for p in self.flagged],
                "skipped": [p.to_json() for p in self.skipped], "unplaced": list(self.unplaced),
                "steps_seen": self.steps_seen, "peak_tflops": self.peak_tflops, "bandwidth_gbps": self.bandwidth_gbps,
                "l2_bytes": self.l2_bytes, "ridge_intensity": self.ridge_intensity}


def place(cfg: RunConfig, table, step_ms: float | None, steps: int | None, param_elements: int,
          peak_tflops: float, bandwidth_gbps: float, l2_bytes: float | None = None,
          counted: dict[str, OpModel] | None = None) -> Placement:
    """Points for the step and each modelled kernel, with their roof and bound; points above their
    roof go to `flagged` with the reason, per-step models without a step count to `skipped`.

    `steps`: the training steps the table covers (steps_seen), None when unknown. `counted`: per
    kernel name, the FLOPs and bytes a launch did by the profiler's own count (proton's launch
    metadata, per call): those kernels are placed from it, with its ratio to the model."""
    from kernels.work import OpModel

    points: list[RooflinePoint] = []
    flagged: list[RooflinePoint] = []
    skipped: list[NotPlaced] = []
    unplaced: list[str] = []
    ridge = peak_tflops * 1e3 / bandwidth_gbps

    def add(name: str, model: OpModel, seconds: float, repeats: float, launches: float | None = None,
            **extra: Any) -> None:
        """`repeats` times the model's work took `seconds`; `launches` kernel launches did it."""
        if seconds <= 0 or model.bytes <= 0:
            return
        ai = model.flops / model.bytes
        achieved = model.flops * repeats / seconds / 1e12
        ceiling = roof(ai, peak_tflops, bandwidth_gbps)
        point = RooflinePoint(name, ai, achieved, model.bytes * repeats / seconds / 1e9, ceiling,
                              100 * achieved / ceiling, "memory" if ai < ridge else "compute", **extra)
        if point.pct_of_roof <= 100 * (1 + ROOF_TOLERANCE):
            points.append(point)
            return
        per_launch = model.bytes * repeats / launches if launches else model.bytes
        if point.bound == "memory" and l2_bytes and per_launch <= l2_bytes:
            reason = (f"above the DRAM roof: each launch moves {per_launch / 2**20:,.1f} MB, which fits "
                      f"the {l2_bytes / 2**20:,.0f} MB L2 cache, faster than DRAM")
        else:
            reason = ABOVE_ROOF
        flagged.append(dataclasses.replace(point, reason=reason))

    if step_ms:
        add("training step", step_model(cfg, param_elements), step_ms / 1e3, 1)
    if table is not None and len(table):
        models = op_models(cfg)
        gemm_ns = table.loc[table["category"] == "gemm", "total_ns"].sum()
        if gemm_ns > 0 and steps:
            t = cfg.batch_size * cfg.seq_len
            eb = ELEMENT_BYTES.get(cfg.precision, 4)
            gemm_bytes = 3 * (param_elements * eb + 2 * t * cfg.num_layers * (4 * cfg.hidden_dim + 3 * cfg.ffn_dim) * eb)
            add("all GEMMs (vendor BLAS)", OpModel(gemm_flops_per_step(cfg), gemm_bytes, per="step"),
                gemm_ns / 1e9, steps)
        elif gemm_ns > 0:
            skipped.append(NotPlaced("all GEMMs (vendor BLAS)", "per-step work, and this tool's table does not "
                                     "cover whole steps"))
        for _, row in table.iterrows():
            name = str(row["name"])
            model = next((m for pattern, m in models if pattern.search(name)), None)
            own = (counted or {}).get(name)
            if own is not None and math.isfinite(float(row["total_ns"])) and row["total_ns"] > 0:
                calls = int(row["calls"])
                add(name, own, float(row["total_ns"]) / 1e9, calls, calls, source=ProtonAdapter.name,
                    model_ratio=_model_ratio(own, model, calls, steps))
                continue
            if model is None:
                if row["category"] != "gemm":
                    unplaced.append(name)
                continue
            if not math.isfinite(float(row["total_ns"])) or row["total_ns"] <= 0:
                continue
            if model.per == "step" and not steps:
                skipped.append(NotPlaced(name, "per-step work, and this tool's table does not cover whole steps"))
                continue
            repeats = steps if model.per == "step" else int(row["calls"])
            add(name, model, float(row["total_ns"]) / 1e9, repeats, int(row["calls"]))
    return Placement(tuple(points), tuple(flagged), tuple(skipped), tuple(unplaced), steps, peak_tflops,
                     bandwidth_gbps, l2_bytes, ridge)


def _model_ratio(own: OpModel, model: OpModel | None, calls: int, steps: int | None) -> dict[str, float] | None:
    """A launch's counted FLOPs and bytes over the model's (a per-step model against the launches
    of a step), or None where there is no model to compare with."""
    if model is None or model.flops <= 0 or model.bytes <= 0:
        return None
    if model.per == "step":
        if not steps:
            return None
        per = calls / steps
        return {"flops": own.flops * per / model.flops, "bytes": own.bytes * per / model.bytes}
    return {"flops": own.flops / model.flops, "bytes": own.bytes / model.bytes}


def counted_work(hatchet) -> dict[str, OpModel]:
    """Per kernel, the FLOPs and bytes of one launch by proton's count (its tree's totals over its
    launches), for the kernels whose launch metadata gave both."""
    from kernels.work import OpModel

    return {name: OpModel(row["flops"] / row["calls"], row["bytes"] / row["calls"])
            for name, row in hatchet.kernels.items()
            if row["calls"] > 0 and row.get("has_flops") and row.get("has_bytes")}


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def ceilings_cache(runs_root: Path, device_name: str | None) -> Path:
    """Where measured ceilings of a card are kept, beside the runs measured on it. The name comes
    from a run's events (a file anyone may have written): only letters, digits, '.', '_' and '-' of
    it make the file name, so it never names a path outside the store."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", device_name or "unknown").lstrip(".")[:100]
    return Path(runs_root) / f"ceilings-{safe}.json"


def cached_ceilings(runs_root: Path, device_name: str | None) -> dict[str, Any] | None:
    try:
        data = read_json(ceilings_cache(runs_root, device_name), DOCUMENT_LIMIT)
    except (OSError, UserError):
        return None
    return data if isinstance(data, dict) else None


def for_run(run, record, ceilings: dict[str, Any]) -> tuple[Placement, str, bool]:
    """(placement, title, has_kernel_table) for a finished run (`record`: its record, with a summary);
    UserError when it cannot be placed."""
    from tinylab.analysis.hotspots import (
        load_run_kernel_table,  # pandas: only for a profiled run
    )

    cfg = run.config()
    ran_graphed = record.start.config.get("cuda_graph") if record.start else None
    if ran_graphed is not None:  # config.json leaves v4's default unset: the trainer decides on the device
        cfg = dataclasses.replace(cfg, cuda_graph=bool(ran_graphed))
    gemm = ceilings.get("gemm_tflops")
    key = "tf32" if cfg.precision == "fp32" and cfg.tf32 else ("bf16" if cfg.precision != "fp32" else "fp32")
    rate = gemm.get(key) if isinstance(gemm, dict) else None
    rate = rate.get("large") if isinstance(rate, dict) else None
    copy, l2 = ceilings.get("copy_gbps"), ceilings.get("l2_bytes")
    if not (_positive(rate) and _positive(copy)):  # a ceilings file is a document anyone may have written
        raise UserError(f"the ceilings have no {key} GEMM rate or copy bandwidth (positive numbers)")
    loaded = load_run_kernel_table(run.dir, record.profiles) if record.has_kernel_table else None
    table = loaded[0] if loaded else None
    tool = table.attrs.get("tool") if table is not None else None
    counted = None
    if tool == ProtonAdapter.name:
        from tinylab.analysis.formats.proton import load_hatchet

        counted = counted_work(load_hatchet(_proton_tree(run.dir, record.profiles, table.attrs.get("rank"))))
    result = place(cfg, table, record.summary.step_ms_median, steps_seen(tool, cfg, record.summary.steps),
                   int((record.start.param_elements if record.start else None) or 0), rate, copy,
                   l2 if _positive(l2) else None, counted)
    title = f"{run.id} {cfg.version} {cfg.precision} on {record.device_name}"
    return result, title, table is not None


def _proton_tree(run_dir: Path, profiles, rank: int | None) -> Path:
    """The .hatchet tree of a run's proton profile (of `rank` in a run of several)."""
    from tinylab.core.profile_files import HATCHET

    event = next((p for p in reversed(list(profiles)) if p.tool == ProtonAdapter.name and p.rank == rank
                  and HATCHET in p.artifacts), None)
    if event is None:
        raise UserError(f"{run_dir.name}: its proton profile lists no {HATCHET}")
    return Path(run_dir) / event.artifacts[HATCHET]

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
the tool saw: the PyTorch profiler's active window, or every step of the run for a tool that
wraps the whole process; ncu sees its first N launches, which are not whole steps.
"""

from __future__ import annotations

import dataclasses
import math
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinylab.analysis.names import short_name
from tinylab.config import RunConfig, profile_schedule
from tinylab.errors import UserError
from tinylab.safeio import DOCUMENT_LIMIT, read_json
from tinylab.training.flops import forward_flops_per_token, training_flops_per_step

ELEMENT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
#: How far above its roof a point may sit and still be plotted: the measured ceilings' noise
#: (a copy kernel is not the fastest possible reader and writer, by a few %).
ROOF_TOLERANCE = 0.05
#: Tools that wrap the whole trainer process: their tables hold every step of the run.
WHOLE_RUN_TOOLS = ("rocprofv3", "nsys", "rocprof-sys", "rocprof-compute")
ABOVE_ROOF = ("above its roof: the model counts more bytes or FLOPs than the kernel moves, or the time "
              "is divided by the wrong number of steps")


@dataclass
class OpModel:
    """FLOPs and minimum bytes (every input read once, every output written once) of an op.

    per="call": one launch does this work; per="step": all of a step's launches together (v4's
    AdamW runs one launch per layer, each over that layer's stretch of the flat weights)."""

    flops: float
    bytes: float
    per: str = "call"


def op_models(cfg: RunConfig) -> list[tuple[re.Pattern[str], OpModel]]:
    """Per-call models of the lab's own Triton kernels at this config's shapes."""
    eb = ELEMENT_BYTES.get(cfg.precision, 4)
    t = cfg.batch_size * cfg.seq_len  # token rows
    d, f, v, hd = cfg.hidden_dim, cfg.ffn_dim, cfg.vocab_size, cfg.head_dim
    h, kv, s, b = cfg.num_heads, cfg.num_kv_heads, cfg.seq_len, cfg.batch_size
    causal_pairs = b * h * s * (s + 1) / 2
    gemm_weights = v * d + cfg.num_layers * (d * (h + 2 * kv) * hd + h * hd * d + 3 * f * d)
    attn_fwd = OpModel(4 * causal_pairs * hd, b * s * (2 * h + 2 * kv) * hd * eb)  # q, k, v in; o out
    return [
        (re.compile(r"^_rmsnorm_fwd"), OpModel(4 * t * d, 2 * t * d * eb)),
        (re.compile(r"^_rmsnorm_bwd"), OpModel(8 * t * d, 3 * t * d * eb)),
        (re.compile(r"^_add_rmsnorm_fwd"), OpModel(5 * t * d, 4 * t * d * eb)),
        (re.compile(r"^_add_rmsnorm_bwd"), OpModel(9 * t * d, 4 * t * d * eb)),
        (re.compile(r"^_swiglu_fwd"), OpModel(5 * t * f, 3 * t * f * eb)),
        (re.compile(r"^_swiglu_bwd"), OpModel(9 * t * f, 5 * t * f * eb)),
        # v4: reads the fused qkv projection, writes rotated q and k and the v heads
        (re.compile(r"^_rope_gqa"), OpModel(3 * t * (h + kv) * hd, 2 * t * (h + 2 * kv) * hd * eb)),
        # v3: one call rotates the q and k heads together (models/v3_triton.py)
        (re.compile(r"^_rope"), OpModel(3 * t * (h + kv) * hd, 2 * t * (h + kv) * hd * eb)),
        (re.compile(r"^_attn_fwd"), attn_fwd),
        # reads q, k, v, dO; writes dK, dV (kernels/flash_attention.py)
        (re.compile(r"^_attn_bwd_dkdv"), OpModel(2 * attn_fwd.flops, b * s * (2 * h + 4 * kv) * hd * eb)),
        # reads q, k, v, dO and O (for delta); writes dQ
        (re.compile(r"^_attn_bwd_dq"), OpModel(1.5 * attn_fwd.flops, b * s * (4 * h + 2 * kv) * hd * eb)),
        (re.compile(r"^_cross_entropy"), OpModel(5 * t * v, 2 * t * v * eb)),
        # the cross-entropy backward: the stored gradient scaled by the incoming one
        (re.compile(r"^_scale_kernel$"), OpModel(t * v, 2 * t * v * eb)),
        # v4's optimizer over its flat GEMM weights, a launch per layer: reads weight, gradient
        # and two moments and writes three of them in fp32, plus the next step's copy of the
        # weights at the compute precision (kernels/adamw.py)
        (re.compile(r"^_adamw"), OpModel(15 * gemm_weights, gemm_weights * (7 * 4 + (eb if eb < 4 else 0)), per="step")),
        (re.compile(r"^_embedding_backward"), OpModel(t * d, 2 * t * d * 4)),
    ]


def step_model(cfg: RunConfig, param_elements: int) -> OpModel:
    """A whole training step: model FLOPs and a lower bound on its bytes.

    Bytes: each weight read in the forward and twice in the backward at the compute precision,
    its gradient written, and AdamW's fp32 read of weight, gradient and both moments plus the
    write of weight and moments; plus one write and one read of each layer's saved activations
    (about 10 hidden-sized and 3 ffn-sized tensors per token and layer).
    """
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
    """How many training steps a tool's kernel table covers: the PyTorch profiler's active window,
    every step of the run for a tool that wraps the process, and None (unknown) otherwise: ncu
    profiles its first N launches, which cut through a step."""
    if tool == "pytorch":
        return profile_schedule(cfg.num_steps, cfg.profile_steps, cfg.warmup_steps, bool(cfg.cuda_graph),
                                cfg.graph_warmup_iters)[2]
    if tool in WHOLE_RUN_TOOLS:
        return steps_run or cfg.num_steps
    return None


def place(cfg: RunConfig, table, step_ms: float | None, steps: int | None, param_elements: int,
          peak_tflops: float, bandwidth_gbps: float, l2_bytes: float | None = None) -> dict[str, Any]:
    """Points for the step and each modelled kernel, with their roof and bound; points above their
    roof go to "flagged" with the reason, per-step models without a step count to "skipped".

    `steps`: the training steps the table covers (steps_seen), None when unknown."""
    points: list[dict[str, Any]] = []
    flagged: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    unplaced: list[str] = []
    ridge = peak_tflops * 1e3 / bandwidth_gbps

    def add(name: str, model: OpModel, seconds: float, repeats: float, launches: float | None = None) -> None:
        """`repeats` times the model's work took `seconds`; `launches` kernel launches did it."""
        if seconds <= 0:
            return
        ai = model.flops / model.bytes
        achieved = model.flops * repeats / seconds / 1e12
        ceiling = roof(ai, peak_tflops, bandwidth_gbps)
        point = {
            "name": name,
            "intensity": ai,
            "achieved_tflops": achieved,
            "achieved_gbps": model.bytes * repeats / seconds / 1e9,
            "roof_tflops": ceiling,
            "pct_of_roof": 100 * achieved / ceiling,
            "bound": "memory" if ai < ridge else "compute",
        }
        if point["pct_of_roof"] <= 100 * (1 + ROOF_TOLERANCE):
            points.append(point)
            return
        per_launch = model.bytes * repeats / launches if launches else model.bytes
        if point["bound"] == "memory" and l2_bytes and per_launch <= l2_bytes:
            point["reason"] = (f"above the DRAM roof: each launch moves {per_launch / 2**20:,.1f} MB, which fits "
                               f"the {l2_bytes / 2**20:,.0f} MB L2 cache, faster than DRAM")
        else:
            point["reason"] = ABOVE_ROOF
        flagged.append(point)

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
            skipped.append({"name": "all GEMMs (vendor BLAS)", "reason": "per-step work, and this tool's table "
                            "does not cover whole steps"})
        for _, row in table.iterrows():
            name = str(row["name"])
            model = next((m for pattern, m in models if pattern.search(name)), None)
            if model is None:
                if row["category"] != "gemm":
                    unplaced.append(name)
                continue
            if not math.isfinite(float(row["total_ns"])) or row["total_ns"] <= 0:
                continue
            if model.per == "step" and not steps:
                skipped.append({"name": name, "reason": "per-step work, and this tool's table does not cover "
                                "whole steps"})
                continue
            repeats = steps if model.per == "step" else int(row["calls"])
            add(name, model, float(row["total_ns"]) / 1e9, repeats, int(row["calls"]))
    return {"points": points, "flagged": flagged, "skipped": skipped, "unplaced": unplaced,
            "steps_seen": steps, "peak_tflops": peak_tflops, "bandwidth_gbps": bandwidth_gbps,
            "l2_bytes": l2_bytes, "ridge_intensity": ridge}


def render(result: dict[str, Any], title: str, width: int = 78, height: int = 20) -> str:
    """The log-log roofline as text (plotext), then the table of points."""
    import plotext as plt

    peak, bw = result["peak_tflops"], result["bandwidth_gbps"]
    xs = [10 ** (e / 10) for e in range(-20, 41)]
    plt.clear_figure()
    plt.theme("clear")
    plt.plotsize(width, height)
    plt.xscale("log")
    plt.yscale("log")
    plt.plot(xs, [roof(x, peak, bw) for x in xs], label="roof", marker="braille")
    for i, p in enumerate(result["points"]):
        plt.scatter([p["intensity"]], [p["achieved_tflops"]], marker=str(i % 10), label=f"{i % 10} {short_name(p['name'])[:24]}")
    plt.title(title)
    plt.xlabel("FLOP / byte")
    plt.ylabel("TFLOP/s")
    chart = re.sub(r"\x1b\[[0-9;]*m", "", plt.build())  # plotext resets colours even in the clear theme
    lines = [chart, "", f"ceilings: {peak:.1f} TFLOP/s, {bw:,.0f} GB/s; ridge at {result['ridge_intensity']:.1f} FLOP/byte",
             f"{'#':>2} {'point':<42} {'FLOP/B':>8} {'TFLOP/s':>9} {'GB/s':>8} {'% roof':>7}  bound"]
    for i, p in enumerate(result["points"]):
        star = "*" if p["pct_of_roof"] > 100 else " "
        lines.append(f"{i % 10:>2} {short_name(p['name'])[:42]:<42} {p['intensity']:>8.2f} {p['achieved_tflops']:>9.3f} "
                     f"{p['achieved_gbps']:>8,.0f} {p['pct_of_roof']:>6.1f}%{star} {p['bound']}")
    if any(p["pct_of_roof"] > 100 for p in result["points"]):
        lines += textwrap.wrap(f"* at the roof: above the measured ceiling by less than its noise ({ROOF_TOLERANCE:.0%}; "
                               "the ceiling's own kernel is not the fastest possible)", width, subsequent_indent="  ")
    if result.get("flagged"):
        lines.append("above the roof, not plotted (nothing runs faster than its roof):")
        for p in result["flagged"]:
            lines += textwrap.wrap(f"{short_name(p['name'])} at {p['pct_of_roof']:,.0f}% of its roof ({p['achieved_gbps']:,.0f} GB/s, "
                                   f"{p['achieved_tflops']:.3f} TFLOP/s): {p['reason']}", width,
                                   initial_indent="   ", subsequent_indent="     ")
    for p in result.get("skipped", []):
        lines += textwrap.wrap(f"not placed: {p['name']}: {p['reason']}", width, subsequent_indent="  ")
    if result["unplaced"]:
        shown = ", ".join(short_name(n) for n in result["unplaced"][:6])
        more = f" and {len(result['unplaced']) - 6} more" if len(result["unplaced"]) > 6 else ""
        lines += textwrap.wrap(f"not placed (no FLOP/byte model for these names): {shown}{more}", width,
                               subsequent_indent="  ")
    return "\n".join(lines)


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


def for_run(run, record, ceilings: dict[str, Any]) -> tuple[dict[str, Any], str, bool]:
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
    result = place(cfg, table, record.summary.step_ms_median, steps_seen(tool, cfg, record.summary.steps),
                   int((record.start.param_elements if record.start else None) or 0), rate, copy,
                   l2 if _positive(l2) else None)
    title = f"{run.id} {cfg.version} {cfg.precision} on {record.device_name}"
    return result, title, table is not None

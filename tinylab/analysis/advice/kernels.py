"""What the kernels themselves do: attention that materializes the S x S scores, fp32 GEMMs on
tensor-core hardware, GEMMs near the roof (a positive finding), a custom kernel slower than the
GEMMs it sits beside, and compiled kernels that spill or hold few warps (the kernel anatomy).
"""

from __future__ import annotations

import re

from tinylab.analysis.advice.model import (
    Advice,
    Facts,
    Impact,
    Quantity,
    action,
    category_ms,
    speedup,
    without_fault,
)
from tinylab.analysis.advice.scope import scope
from tinylab.analysis.roofline import ELEMENT_BYTES
from tinylab.core.peaks import device_peak_tflops
from tinylab.core.versions import first, lookup

#: The S x S tensors an eager attention keeps above this share of the peak memory: flash attention
#: (SDPA, or v3/v4's kernel) keeps none (the v1-memory and v2-flash-attention scenarios).
SCORES_SHARE = 0.10
#: GEMMs (with attention) above this share of the GPU's busy time make fp32 worth leaving.
GEMM_SHARE = 0.30
#: The GEMMs' point at or above this share of its roof is compute-bound and well done (the lab's
#: graphed fp32 steps reach 75-78% of their GEMM floor: docs/performance.md).
GEMM_ROOF = 0.70
#: Without a roofline: a GPU idle at most this share of the step, and GEMMs at least GEMM_BUSY of
#: its busy time (HTA's and the timeline's "GPU-bound": tinylab.analysis.timeline.GPU_BOUND).
GPU_BUSY_IDLE = 0.10
GEMM_BUSY = 0.60
#: A custom kernel above this share of the kernel time, and above all vendor GEMMs together.
CUSTOM_SHARE = 0.25
#: Occupancy at or below this share of the hardware's maximum (2 of 8 waves a SIMD, 16 of 64 warps
#: an SM) leaves a scheduler few warps to hide memory latency with.
LOW_OCCUPANCY = 0.25
OCCUPANCY_CEILING = {"waves/SIMD": 8, "warps/SM": 64}
#: A kernel the lab (Triton, inductor) compiled, as profilers name it: `_rmsnorm_fwd_kernel`, `triton_poi_...`.
_CUSTOM = re.compile(r"^(?:_\w+|triton_\w+)$")


@scope("peak memory is recorded on GPUs only; memory does not change with load", gpu=True, needs=("summary",))
def attention_scores(f: Facts) -> Advice | None:
    cfg, s = f.run_config(), f.summary
    spec = lookup(cfg.version) if cfg is not None else None
    if spec is None or not spec.attends_eagerly(bool(f.config.get("sdpa"))) or s is None or not s.peak_mem_mb:
        return None
    eb = ELEMENT_BYTES.get(cfg.precision, 4)
    one = cfg.batch_size * cfg.num_heads * cfg.seq_len ** 2  # elements of one layer's [B, H, S, S]
    # kept for the backward a layer: the fp32 softmax output and the probabilities at the compute
    # precision; plus the last layer's transient scores (3 fp32-sized) at the forward's peak
    removable = min(one * ((4 + eb) * cfg.num_layers + 12) / 2**20, 0.99 * s.peak_mem_mb)
    share = removable / s.peak_mem_mb
    if share < SCORES_SHARE:
        return None
    peer = first(peer=True)  # SDPA, its other fusions off: the same step but for the attention
    changes = {"sdpa": True} if "sdpa" in spec.toggles else {
        "version": peer.name, "sdpa": True, **{name: False for name in peer.fusions if name != "sdpa"}}
    attention, source = category_ms(f, "attention")
    timing = f"; softmax and masking kernels {attention:.2f} ms a step" if attention else ""
    bound = s.peak_mem_mb / (s.peak_mem_mb - removable)
    return Advice(
        rule="attention-scores",
        severity="suggestion",
        condition="eager attention materializes the [batch, heads, seq, seq] scores and keeps them for the "
                  "backward: memory grows with the square of the sequence",
        measured=Quantity(share, "fraction", f"the S x S tensors (seq {cfg.seq_len}) take up to {removable:,.0f} MB, "
                                             f"{share:.0%} of the {s.peak_mem_mb:,.0f} MB peak{timing}"),
        threshold=Quantity(SCORES_SHARE, "fraction", f">= {SCORES_SHARE:.0%} of the peak memory"),
        impact=Impact(bound, "peak_mem_mb", "high", f"peak memory at most {bound:.2f}x lower (the S x S tensors "
                                                    "gone); memory is not noisy"),
        action=action(f, "flash attention through torch's scaled_dot_product_attention", changes),
        lesson="v2-flash-attention step 1",
        evidence=(f"events.jsonl summary: peak_mem_mb={s.peak_mem_mb:.1f}",
                  f"config.json batch_size={cfg.batch_size}, num_heads={cfg.num_heads}, seq_len={cfg.seq_len}, "
                  f"num_layers={cfg.num_layers}, precision={cfg.precision}", *([source] if attention else [])),
    )


@scope("tensor cores are a GPU's; the bound is sized by kernel times", gpu=True, needs=("trace",), timed="bound")
def fp32_gemms(f: Facts) -> Advice | None:
    cfg, shown = f.run_config(), f.shown_step()
    step, where = f.step_ms()
    if cfg is None or cfg.precision != "fp32" or cfg.tf32 or shown is None or shown["busy_ms"] is None or not step:
        return None
    fp32, bf16 = (device_peak_tflops(f.device_name, p) for p in ("fp32", "bf16"))
    if not fp32 or not bf16 or bf16 <= 2 * fp32:
        return None  # no tensor cores for bf16 on this card (or an unknown card)
    cats = shown["categories_ms"]
    matrix = cats.get("gemm", 0.0) + cats.get("attention", 0.0)
    busy = shown["busy_ms"]
    if matrix < GEMM_SHARE * busy:
        return None
    faster = bf16 / fp32
    # GEMMs and attention at most the datasheet's bf16/fp32 rate ratio faster, every other kernel at
    # most 2x (half the bytes), the idle time not at all
    floor = max(step - busy, 0.0) + matrix / faster + (busy - matrix) / 2
    impact = speedup(f, step / floor, f"GEMMs and attention up to {faster:.0f}x faster on tensor cores, the other "
                                      "kernels up to 2x (half the bytes), the idle time unchanged")
    if impact is None:
        return None
    return Advice(
        rule="fp32-gemms",
        severity="suggestion",
        condition="strict fp32 GEMMs on a GPU whose tensor cores run bf16 (and TF32) many times faster",
        measured=Quantity(matrix / busy, "fraction", f"GEMMs and attention {matrix:.2f} ms = {matrix / busy:.0%} of "
                                                     f"the GPU's {busy:.2f} ms busy time, in fp32"),
        threshold=Quantity(GEMM_SHARE, "fraction", f">= {GEMM_SHARE:.0%} of the busy time on a card with "
                                                   f"bf16 > 2x fp32 ({f.device_name}: {bf16:g} vs {fp32:g} TFLOP/s)"),
        impact=impact,
        action=action(f, "train in bf16 autocast (or allow TF32 matmuls with --tf32)", {"precision": "bf16"}),
        lesson="v3-flash-attention step 4",
        evidence=(f"{f.trace}: {f.step_label()} gemm {cats.get('gemm', 0.0):.2f} ms, attention "
                  f"{cats.get('attention', 0.0):.2f} ms, busy {busy:.2f} ms", f"step time: {where} {step:.2f} ms",
                  f"datasheet peaks of {f.device_name} (tinylab.config.flops)"),
    )


@scope(
    "a GPU's GEMMs against their roof; a finding that nothing is left has no effect size to stand out of contention",
    gpu=True, needs=("trace or roofline",), timed="quiet",
)
def gemm_bound(f: Facts) -> Advice | None:
    point = next((p for p in (f.roofline or {}).get("points", []) if p["name"].startswith("all GEMMs")), None)
    if point is not None:
        share = point["pct_of_roof"] / 100
        if share < GEMM_ROOF:
            return None
        measured = Quantity(share, "fraction", f"the GEMMs run at {point['achieved_tflops']:.1f} TFLOP/s, "
                                               f"{share:.0%} of their roof ({point['roof_tflops']:.1f})")
        threshold = Quantity(GEMM_ROOF, "fraction", f">= {GEMM_ROOF:.0%} of the measured roof")
        evidence = ("roofline: all GEMMs (vendor BLAS) against the card's measured ceilings",)
    else:
        shown = f.shown_step()
        step, where = f.step_ms()
        if shown is None or shown["busy_ms"] is None or not step:
            return None
        busy, gemm = shown["busy_ms"], shown["categories_ms"].get("gemm", 0.0)
        idle = max(0.0, 1 - busy / step)
        if idle > GPU_BUSY_IDLE or gemm < GEMM_BUSY * busy:
            return None
        measured = Quantity(gemm / busy, "fraction", f"the GPU busy {1 - idle:.0%} of the {step:.2f} ms step, "
                                                     f"GEMMs {gemm / busy:.0%} of it")
        threshold = Quantity(GEMM_BUSY, "fraction", f"idle <= {GPU_BUSY_IDLE:.0%} and GEMMs >= {GEMM_BUSY:.0%} "
                                                    "of the busy time")
        evidence = (f"{f.trace}: {f.step_label()} busy {busy:.2f} ms, gemm {gemm:.2f} ms",
                    f"step time: {where}")
    return Advice(
        rule="gemm-bound",
        severity="good",
        condition="the step is bound by its GEMMs, running near what the card gives them: compute-bound, "
                  "well done; only fewer FLOPs or a lower precision make it faster",
        measured=measured, threshold=threshold,
        impact=Impact(None, None, None, "nothing left between the kernels; the GEMMs themselves set the pace"),
        action=action(f, "nothing to fix here: to go further, lower the precision or the FLOPs", {}),
        lesson="v1-bottlenecks step 3",
        evidence=evidence,
    )


@scope(
    "a CPU's table holds operators, not kernels; the gain is sized by kernel times",
    gpu=True, needs=("kernel table",), timed="bound",
)
def slow_custom_kernel(f: Facts) -> Advice | None:
    k = f.kernels
    step, where = f.step_ms()
    if not k or not k["total_ns"] or not k["kernels"] or not f.kernel_steps or not step:
        return None
    top = k["kernels"][0]
    gemm = (k["categories"].get("gemm") or {}).get("total_ns") or 0
    share = (top["total_ns"] or 0) / k["total_ns"]
    if not _CUSTOM.match(top["name"]) or share < CUSTOM_SHARE or (top["total_ns"] or 0) < gemm:
        return None
    ms = top["total_ns"] / f.kernel_steps / 1e6
    impact = speedup(f, 1.0 / (1.0 - min(ms / step, 0.99)), f"the step without {top['name']}'s {ms:.2f} ms")
    if impact is None:
        return None
    return Advice(
        rule="slow-custom-kernel",
        severity="suggestion",
        condition="a hand-written kernel takes more time than all the vendor GEMMs together: a matrix product "
                  "done without tensor cores or tiling (each output element its own dot product) belongs in "
                  "cuBLAS/rocBLAS",
        measured=Quantity(share, "fraction", f"{top['name']}: {share:.0%} of the kernel time, {ms:.2f} ms a step, "
                                             f"vs {gemm / f.kernel_steps / 1e6:.2f} ms for every GEMM"),
        threshold=Quantity(CUSTOM_SHARE, "fraction", f">= {CUSTOM_SHARE:.0%} of the kernel time and above the "
                                                     "GEMMs' total"),
        impact=impact,
        action=without_fault(f, "naive-triton-swiglu", "give the matrix product to a vendor GEMM and fuse only the "
                             "elementwise part"),
        lesson="performance-debugging step 5",
        evidence=(f"{f.kernel_source}: top kernel {top['name']} over {f.kernel_steps} steps", f"step time: {where}"),
    )


def _compiled(f: Facts) -> list[tuple[str, object]]:
    return [(name, r) for name, r in (f.anatomy or ()) if getattr(r, "ok", False)]


@scope("compiled for the named card, before any run: no device or load changes the counts", needs=("anatomy",))
def kernel_spills(f: Facts) -> Advice | None:
    spilled = [(name, r) for name, r in _compiled(f) if r.spilled]
    if not spilled:
        return None
    shown = ", ".join(f"{name} ({' '.join(f'{k} {v}' for k, v in r.spills.items() if v)})" for name, r in spilled[:4])
    return Advice(
        rule="kernel-spills",
        severity="suggestion",
        condition="compiled kernels spill registers to local memory: every spilled value is a store and a "
                  "load through the cache hierarchy instead of a register",
        measured=Quantity(float(len(spilled)), "kernels", f"{len(spilled)} of the step's kernels spill on "
                                                          f"{f.anatomy_target}: {shown}"),
        threshold=Quantity(0.0, "kernels", "no spill"),
        impact=Impact(None, None, None, "a compile-time finding: its cost shows in the kernel's own time, which a "
                                        "profile of this card measures"),
        action=action(f, "smaller block sizes or more warps for these kernels: sweep them in the Kernels view (K)",
                      {}),
        lesson="v4-fusion step 6",
        evidence=(f"kernel anatomy of the run's config on {f.anatomy_target} (tinylab kernels)",),
    )


@scope("compiled for the named card, before any run: no device or load changes the counts", needs=("anatomy",))
def kernel_occupancy(f: Facts) -> Advice | None:
    low = []
    for name, r in _compiled(f):
        occ = r.occupancy
        ceiling = OCCUPANCY_CEILING.get(occ.unit) if occ else None
        if ceiling and occ.value <= LOW_OCCUPANCY * ceiling and "reg" in occ.limiter.lower():
            low.append((name, occ, ceiling))
    if not low:
        return None
    shown = ", ".join(f"{name} {occ.value}/{ceiling}" for name, occ, ceiling in low[:4])
    return Advice(
        rule="kernel-occupancy",
        severity="suggestion",
        condition="compiled kernels hold so many registers that few warps fit a scheduler, which then has "
                  "little to issue while one waits on memory",
        measured=Quantity(float(len(low)), "kernels", f"{len(low)} kernels at <= {LOW_OCCUPANCY:.0%} occupancy, "
                                                      f"limited by registers on {f.anatomy_target}: {shown}"),
        threshold=Quantity(LOW_OCCUPANCY, "fraction", f"occupancy > {LOW_OCCUPANCY:.0%} of the hardware's maximum"),
        impact=Impact(None, None, None, "a compile-time finding: whether it costs time depends on the kernel being "
                                        "memory-bound, which its roofline point says"),
        action=action(f, "fewer registers: smaller blocks or a different num_warps, swept in the Kernels view (K)",
                      {}),
        lesson="v4-fusion step 6",
        evidence=(f"kernel anatomy of the run's config on {f.anatomy_target} (tinylab kernels)",),
    )


RULES = (attention_scores, fp32_gemms, gemm_bound, slow_custom_kernel, kernel_spills, kernel_occupancy)

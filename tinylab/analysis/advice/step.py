"""Where a GPU step's time goes between kernels: launch overhead, host-device syncs, layout copies,
the optimizer's share, chains of small elementwise kernels.

Shares are taken against the unprofiled step time (Facts.step_ms): the profiler slows the host,
never the kernels, so a profiled window's idle share overstates what can be won.
"""

from __future__ import annotations

from tinylab.analysis.advice.model import (
    Advice,
    Facts,
    Quantity,
    action,
    calls_per_step,
    category_ms,
    evidence_of_summary,
    finding,
    speedup,
    without_fault,
)
from tinylab.analysis.advice.scope import scope
from tinylab.analysis.timeline import IDLE_BOUND, LAUNCH_BOUND_US
from tinylab.core.versions import first, lookup

#: The optimizer above this share of the step is worth a fused one (the lab's v4 AdamW, at its
#: memory floor, is 18% of a 1.33 ms bf16 step on an H200: docs/performance.md).
OPTIMIZER_SHARE = 0.15
#: Elementwise launches per GEMM launch above which a step is a chain of small kernels (the
#: v1-bottlenecks scenario's "launch-heavy" check, step 1).
ELEMENTWISE_PER_GEMM = 2.0
#: What the advisor offers an eager PyTorch step: the peer, v2 ...
PEER = first(peer=True)
#: ... with its three fusions on (its defaults), set explicitly: a v1 config resolved them off.
PEER_FUSED = {"version": PEER.name, **dict.fromkeys(PEER.fusions, True)}


def _eager_step(f: Facts) -> dict | None:
    """The profiled step's anatomy when it ran kernel by kernel on a GPU (not a graph replay)."""
    shown = f.shown_step()
    if shown is None or shown["busy_ms"] is None or shown["kernel_median_us"] is None:
        return None
    graph = shown["graph"]
    return None if graph and graph["kernels"] * 2 >= shown["kernels"] else shown


@scope(
    "launches and GPU idle time are a GPU's; a busy host launches slower, which inflates the idle share",
    gpu=True, needs=("trace",), timed="bound",
)
def launch_bound(f: Facts) -> Advice | None:
    shown = _eager_step(f)
    step, where = f.step_ms()
    if shown is None or not step:
        return None
    busy, median = shown["busy_ms"], shown["kernel_median_us"]
    idle = max(0.0, 1.0 - busy / step)
    if idle < IDLE_BOUND or median >= LAUNCH_BOUND_US:
        return None
    gemm = shown["categories_ms"].get("gemm", 0.0)
    spec = lookup(f.version)
    if spec is not None and not spec.triton and not f.config.get("torch_compile") and gemm > 0:  # eager PyTorch
        peer = {} if "torch_compile" in spec.toggles else PEER_FUSED  # a version that cannot compile moves
        changes = {**peer, "torch_compile": True, "cuda_graph": True}
        floor, what = gemm, (f"a graph removes the {step - busy:.2f} ms of idle time and compile's fusion the "
                             f"non-GEMM kernels: the step cannot beat its GEMMs' {gemm:.2f} ms (at their speed in "
                             "this run)")
        text = f"fuse and graph the step: {PEER.name} with its fusions, torch.compile and a CUDA graph"
    else:
        changes = {"cuda_graph": True}
        floor, what = busy, f"a graph removes the idle time: the step cannot beat its {busy:.2f} ms of GPU work"
        text = "capture the step in a CUDA graph, launched once a step"
    impact = speedup(f, step / floor, what)
    if impact is None:
        return None
    return Advice(
        rule="launch-bound",
        severity="suggestion",
        condition="the GPU idles most of the step while its kernels are shorter than a launch from PyTorch "
                  "takes: the host cannot launch them fast enough, so the GPU waits for the next one",
        measured=Quantity(idle, "fraction", f"GPU idle {idle:.0%} of the {step:.2f} ms step (busy {busy:.2f} ms), "
                                            f"median kernel {median:.1f} µs over {shown['kernels']} kernels"),
        threshold=Quantity(IDLE_BOUND, "fraction", f"idle >= {IDLE_BOUND:.0%} and median kernel < "
                                                   f"{LAUNCH_BOUND_US:g} µs"),
        impact=impact,
        action=action(f, text, changes),
        lesson="v4-fusion step 3",
        evidence=(f"{f.trace}: {f.step_label()} busy {busy:.2f} ms, gemm {gemm:.2f} ms, {shown['kernels']} "
                  f"kernels, median {median:.1f} µs", f"step time: {where} {step:.2f} ms"),
    )


@scope(
    "only a GPU run has a device for the host to wait on; a sync inside the phases is there at any load",
    gpu=True, needs=("trace",),
)
def host_sync(f: Facts) -> Advice | None:
    shown = f.shown_step()
    step, where = f.step_ms()
    sync = ((shown or {}).get("host_calls") or {}).get("sync")
    if not sync or not step:
        return None
    share = min(sync["ms"] / step, 0.99)
    return Advice(
        rule="host-sync",
        severity="suggestion",
        condition="the host waits for the device inside the step's forward, backward or optimizer (an "
                  ".item(), a print of a tensor, a blocking copy): the host stops launching work until the "
                  "GPU drains",
        measured=Quantity(float(sync["count"]), "syncs", f"{sync['count']} device syncs in the phases of step "
                                                         f"{shown['step']}, {sync['ms']:.2f} ms of waiting"),
        threshold=Quantity(0.0, "syncs", "no sync inside the phases (the trainer syncs once, after them)"),
        impact=finding(f, share, "the waits' own time"),
        action=action(f, "keep values on the device inside the step: no .item(), .cpu() or printing of tensors "
                      "before the optimizer ends", {}),
        lesson="performance-debugging step 3",
        evidence=(f"{f.trace}: {f.step_label()} cudaStreamSynchronize/cudaDeviceSynchronize/"
                  f"cudaEventSynchronize/cudaMemcpy inside forward/backward/optimizer", f"step time: {where}"),
    )


@scope(
    "a copy inside the phases is there on any device and at any load (its size is a finding against the run's "
    "spread)",
    needs=("trace",),
)
def layout_copies(f: Facts) -> Advice | None:
    shown = f.shown_step()
    step, where = f.step_ms()
    copies = ((shown or {}).get("host_calls") or {}).get("layout_copy")
    if not copies or not step:
        return None
    gpu = f.on_gpu
    ms = copies["kernel_ms"] if gpu else copies["ms"]
    what = ("the copies and the kernels that read them" if gpu else "the copies' own time (a CPU has no "
            "strided-load cost to add)")
    return Advice(
        rule="layout-copies",
        severity="suggestion",
        condition="the step copies tensors into a new memory layout (.contiguous() of a transposed or strided "
                  "view) inside its phases: every copy reads and writes the whole tensor, and a kernel fed a "
                  "transposed layout loads strided instead of coalesced memory",
        measured=Quantity(float(copies["count"]), "copies", f"{copies['count']} layout copies (aten::contiguous) in "
                                                            f"{f.step_label()}: {ms:.3f} ms with {what}"),
        threshold=Quantity(0.0, "copies", "no layout copy inside forward/backward/optimizer"),
        impact=finding(f, min(ms / step, 0.99), what),
        action=without_fault(f, "non-contiguous", "feed kernels the layout they read (row-major, "
                             "contiguous); drop the .t().contiguous() that makes the copy"),
        lesson="performance-debugging step 2",
        evidence=(f"{f.trace}: {f.step_label()} aten::contiguous inside the phases", f"step time: {where}"),
    )


@scope(
    "its threshold is a GPU step's (the fused AdamW's floor); the share is one of two timings",
    gpu=True, needs=("summary",), timed="bound",
)
def optimizer_share(f: Facts) -> Advice | None:
    s = f.summary
    if s is None or not s.step_ms_median or s.opt_ms_median is None:
        return None
    share = s.opt_ms_median / s.step_ms_median
    spec = lookup(f.version)
    if share < OPTIMIZER_SHARE or spec is None or spec.optimizer == "flat":
        return None  # v4's AdamW is one fused kernel at its memory floor already
    if spec.optimizer == "torch":  # v2 with every fusion off is v1's math with the fused AdamW
        changes = {"version": PEER.name, **dict.fromkeys(PEER.fusions, False)}
        text = (f"the fused AdamW (one kernel for every parameter), as {PEER.name} uses; {PEER.name} with its "
                f"fusions off is {spec.name}'s math")
    else:
        flat = first(optimizer="flat").name
        changes, text = {"version": flat}, f"{flat}: its AdamW updates one flat buffer in one kernel and writes the " \
                                           "next step's low-precision copy"
    impact = speedup(f, 1.0 / (1.0 - share), f"the step without its {s.opt_ms_median:.2f} ms optimizer")
    if impact is None:
        return None
    return Advice(
        rule="optimizer-share",
        severity="suggestion",
        condition="the optimizer takes a large share of the step: torch's AdamW updates each parameter tensor "
                  "with its own kernels",
        measured=Quantity(share, "fraction", f"optimizer {s.opt_ms_median:.2f} ms = {share:.0%} of the "
                                             f"{s.step_ms_median:.2f} ms step"),
        threshold=Quantity(OPTIMIZER_SHARE, "fraction", f">= {OPTIMIZER_SHARE:.0%} of the step"),
        impact=impact,
        action=action(f, text, changes),
        lesson="v4-fusion step 2",
        evidence=(evidence_of_summary(f, "opt_ms_median", "step_ms_median"),),
    )


@scope(
    "launches per GEMM are a GPU's count; the gain is sized by kernel times",
    gpu=True, needs=("kernel table",), timed="bound",
)
def elementwise_chains(f: Facts) -> Advice | None:
    step, where = f.step_ms()
    elementwise = calls_per_step(f, "elementwise")
    gemms = calls_per_step(f, "gemm")
    ms, source = category_ms(f, "elementwise")
    if not step or not elementwise or not gemms or ms is None:
        return None
    per_gemm = elementwise / gemms
    if per_gemm < ELEMENTWISE_PER_GEMM:
        return None
    spec = lookup(f.version)
    if spec is None or f.config.get("torch_compile"):
        return None
    if "torch_compile" in spec.toggles:
        changes, text = {"torch_compile": True}, "let torch.compile fuse the elementwise chains"
    elif not spec.triton:
        changes, text = {**PEER_FUSED, "torch_compile": True}, f"fuse them: {PEER.name}'s fusions and torch.compile"
    elif spec.fused_into:
        changes = {"version": spec.fused_into}
        text = f"{spec.fused_into} fuses the residual adds, norms, RoPE and the loss"
    else:
        return None
    impact = speedup(f, 1.0 / (1.0 - min(ms / step, 0.99)), f"the step without its {ms:.2f} ms of elementwise "
                                                             "kernels")
    if impact is None:
        return None
    return Advice(
        rule="elementwise-chains",
        severity="suggestion",
        condition="most launches are small elementwise kernels, each reading and writing whole activations: "
                  "fusion turns a chain of them into one kernel and one pass over memory",
        measured=Quantity(per_gemm, "per GEMM", f"{elementwise:.0f} elementwise launches a step, {per_gemm:.1f} per "
                                                f"GEMM launch; {ms:.2f} ms a step"),
        threshold=Quantity(ELEMENTWISE_PER_GEMM, "per GEMM", f"> {ELEMENTWISE_PER_GEMM:g} elementwise launches a "
                                                             "GEMM launch"),
        impact=impact,
        action=action(f, text, changes),
        lesson="v2-fusion step 6",
        evidence=(f"{f.kernel_source}: calls by category over {f.kernel_steps} steps", source, f"step time: {where}"),
    )


RULES = (launch_bound, host_sync, layout_copies, optimizer_share, elementwise_chains)

"""When a profile (or a timer) cannot be trusted as it is: warm-up or a graph capture inside the
profiled window, a graph replay that hides its kernels, a profiled step much slower than the
unprofiled ones, an empty capture, phase timers that disagree with the step's.

These say nothing about speed; they say which numbers the other rules (and the learner) may read.
"""

from __future__ import annotations

from tinylab.analysis.advice.model import Advice, Facts, Impact, Quantity, action, evidence_of_summary, without_fault
from tinylab.analysis.advice.scope import scope
from tinylab.core.window import first_clean_step
from tinylab.profilers.pytorch import PyTorchAdapter

#: A profiled window this many times the unprofiled steps' median is distorted by the profiler's own
#: host work (the lab measured 1.1-1.8x for eager H100 windows: docs/performance.md).
PROFILED_SLOWDOWN = 1.5
#: ... judged only against this many unprofiled steps at least (one step is no median).
UNPROFILED_STEPS = 3
#: Without step events (a trace file), a first window this many times the others' median holds
#: one-time work (allocator growth, autotuning, compilation).
FIRST_WINDOW = 2.0
#: fwd + bwd + opt below this share of the step: the phase timers read the host clock before the
#: device finished (with device events, or on a CPU, they add up to the step by construction).
PHASE_SUM = 0.8


@scope(
    "step numbers against the profiler's window (a trace file alone: its first window's length, with no load "
    "recorded)",
    needs=("trace",),
)
def warmup_in_window(f: Facts) -> Advice | None:
    if not f.timeline:
        return None
    profiled = sorted(a["step"] for a in f.timeline["steps"] if a["step"] is not None)
    warm = {e.step for e in f.steps if e.warmup}
    cfg = f.run_config()
    first = None
    if cfg is not None:
        first = first_clean_step(cfg.warmup_steps, bool(f.config.get("cuda_graph")), cfg.graph_warmup_iters)
    early = [s for s in profiled if s in warm or (first is not None and s < first)]
    evidence: tuple[str, ...]
    if early:
        measured = Quantity(float(len(early)), "steps", f"profiled step{'s' if len(early) > 1 else ''} "
                                                        f"{', '.join(map(str, early))} of {len(profiled)}, before "
                                                        f"the first clean step {first}")
        threshold = Quantity(float(first or 0), "step", f"every profiled step >= {first} (past --warmup-steps, "
                                                        "and a graph's warm-up and capture)")
        evidence = (f"{f.trace}: ProfilerStep#{', #'.join(map(str, profiled))}",
                    f"config.json warmup_steps={f.config.get('warmup_steps')}, cuda_graph={f.config.get('cuda_graph')}")
    elif cfg is None and len(f.timeline["steps"]) >= 3:
        walls = [a["wall_ms"] for a in f.timeline["steps"]]
        rest = sorted(walls[1:])
        median = rest[len(rest) // 2]
        if walls[0] < FIRST_WINDOW * median:
            return None
        measured = Quantity(walls[0] / median, "x", f"the first profiled step took {walls[0]:.2f} ms, "
                                                    f"{walls[0] / median:.1f}x the others' median {median:.2f} ms")
        threshold = Quantity(FIRST_WINDOW, "x", f"< {FIRST_WINDOW:g}x the other steps")
        evidence = (f"{f.trace}: {len(walls)} step windows",)
    else:
        return None
    steps_needed = (first or 0) + int(f.config.get("profile_steps") or 1)  # the window fits after warm-up
    return Advice(
        rule="warmup-in-window",
        severity="warning",
        condition="the profiled window holds warm-up (allocator growth, autotuning, a graph's capture): its "
                  "times and kernels are not those of a steady step",
        measured=measured, threshold=threshold,
        impact=Impact(None, None, None, "validity: read the steps after warm-up, not this window"),
        action=action(f, "train more steps, so that the profiler's window starts after warm-up",
                      {"num_steps": steps_needed} if cfg is not None and cfg.num_steps < steps_needed else {}),
        lesson="v1-baseline step 2",
        evidence=evidence,
    )


@scope("only a CUDA/HIP graph's replay hides its kernels from the profiler", gpu=True, needs=("trace",))
def graph_hides_kernels(f: Facts) -> Advice | None:
    shown = f.shown_step()
    if shown is None or not f.config.get("cuda_graph") or shown["graph"] is not None or shown["kernels"]:
        return None
    return Advice(
        rule="graph-hides-kernels",
        severity="warning",
        condition="the run replays a CUDA/HIP graph, and the profile saw none of the replay's kernels: the tool "
                  "could not trace inside the graph, so its kernel table and timeline miss the step's work",
        measured=Quantity(0.0, "kernels", f"0 kernels in profiled {f.step_label()} of a graphed run"),
        threshold=Quantity(1.0, "kernels", "the replay's kernels visible (>= 1)"),
        impact=Impact(None, None, None, "validity: the GPU time of this profile is not the step's"),
        action=action(f, "profile the same run without the graph to see its kernels", {"cuda_graph": False}),
        lesson="v4-fusion step 3",
        evidence=(f"{f.trace}: {f.step_label()}, {shown['kernels']} kernels, no graph replay seen",
                  "start event: cuda_graph=True"),
    )


@scope("one profiled step against the others: contention can land on that one step", needs=("trace",), timed="ratio")
def profiler_overhead(f: Facts) -> Advice | None:
    timed = (f.timeline or {}).get("timed")
    shown = f.shown_step()
    if not timed or shown is None or not timed["unprofiled_ms"] or timed["unprofiled_steps"] < UNPROFILED_STEPS:
        return None
    slowdown = shown["wall_ms"] / timed["unprofiled_ms"]
    if slowdown < PROFILED_SLOWDOWN:
        return None
    return Advice(
        rule="profiler-overhead",
        severity="warning",
        condition="the profiled step is much slower than the unprofiled ones: the profiler's own host work "
                  "stretches the window, so its idle time and host phases are inflated (the advisor's bounds "
                  "use the unprofiled steps instead)",
        measured=Quantity(slowdown, "x", f"profiled {f.step_label()} window {shown['wall_ms']:.2f} ms = "
                                         f"{slowdown:.2f}x the unprofiled median {timed['unprofiled_ms']:.2f} ms"),
        threshold=Quantity(PROFILED_SLOWDOWN, "x", f"< {PROFILED_SLOWDOWN:g}x the unprofiled steps"),
        impact=Impact(None, None, None, "validity: read shares (idle, phases) against the unprofiled step time"),
        action=action(f, "profile fewer steps, and without the memory timeline (its Python stacks slow the host)",
                      {"profile_steps": 1} if int(f.config.get("profile_steps") or 1) > 1 else {}),
        lesson="v1-baseline step 2",
        evidence=(f"{f.trace}: {f.step_label()} window {shown['wall_ms']:.2f} ms",
                  f"events.jsonl steps: unprofiled median {timed['unprofiled_ms']:.2f} ms of "
                  f"{timed['unprofiled_steps']} steps"),
    )


@scope("any profiler on any device can record nothing")
def empty_capture(f: Facts) -> Advice | None:
    why = f.capture_problem
    if why is None and f.timeline and str(f.device or "").startswith("cuda") and not f.timeline["has_gpu_events"]:
        why = f"{f.trace} holds no GPU kernel, copy or memset although the run was on {f.device}"
    if why is None and f.kernels is not None and f.kernels["kernel_count"] == 0:
        why = f"{f.kernel_source}: the kernel table has no row"
    if why is None:
        return None
    return Advice(
        rule="empty-capture",
        severity="warning",
        condition="the profile captured nothing to analyse: the tool ran but recorded no kernels (a window "
                  "outside the steps, a tool that could not attach, an interrupted write)",
        measured=Quantity(0.0, "events", why),
        threshold=Quantity(1.0, "events", "at least one kernel or operator"),
        impact=Impact(None, None, None, "validity: no profile rule can read this run"),
        action=action(f, "profile again with the PyTorch profiler, which works on any machine",
                      {"profilers": [PyTorchAdapter.name]} if not f.config.get("profilers") else {}),
        lesson="profiler-tour step 1",
        evidence=(why,),
    )


@scope(
    "a CPU works synchronously, so its host clock times the phases whole; contention moves the phase medians "
    "against the step's (to 64% of it on a busy 2-core CPU)",
    gpu=True, needs=("summary",), timed="shortfall",
)
def unsynced_timers(f: Facts) -> Advice | None:
    s = f.summary
    if s is None or not s.step_ms_median or None in (s.fwd_ms_median, s.bwd_ms_median, s.opt_ms_median):
        return None
    total = s.fwd_ms_median + s.bwd_ms_median + s.opt_ms_median
    share = total / s.step_ms_median
    if share >= PHASE_SUM:
        return None
    return Advice(
        rule="unsynced-timers",
        severity="warning",
        condition="forward + backward + optimizer add up to far less than the step: the phase timers read the "
                  "host clock while the GPU was still working, so they time kernel launches, not kernels",
        measured=Quantity(share, "fraction", f"fwd+bwd+opt {total:.2f} ms = {share:.0%} of the {s.step_ms_median:.2f}"
                                             " ms step"),
        threshold=Quantity(PHASE_SUM, "fraction", f">= {PHASE_SUM:.0%} of the step (device-timed phases add up to it)"),
        impact=Impact(None, None, None, "validity: the phase times are wrong; the step time (synchronised) stands"),
        action=without_fault(f, "unsynced-timing", "time phases with device events (torch.cuda.Event), or "
                             "synchronise before each host clock read"),
        lesson="performance-debugging step 3",
        evidence=(evidence_of_summary(f, "fwd_ms_median", "bwd_ms_median", "opt_ms_median", "step_ms_median"),),
    )


RULES = (warmup_in_window, graph_hides_kernels, profiler_overhead, empty_capture, unsynced_timers)

"""The profiled window: which steps a profiler records, and the graph warm-up that decides it.

A word of the config (RunConfig.graph_warmup_iters picks the count), of the in-process profilers
(their schedules) and of the readers (the roofline's steps, the validity advice's first clean step),
so it lives below all of them.
"""

from __future__ import annotations

#: A graphed run's eager warm-up steps (on a side stream) before it captures the step: the
#: capture lies in the next step's window, so replays start one step later (profilers use this).
#: RunConfig.graph_warmup_iters says which count a run uses.
GRAPH_WARMUP_ITERS = 3
#: DDP's reducer rebuilds its buckets during the first iterations: a CUDA graph captured earlier
#: would replay stale buckets (torch's CUDA-graph notes ask for 11 eager DDP iterations first).
DDP_GRAPH_WARMUP_ITERS = 11


def first_clean_step(warmup_steps: int, cuda_graph: bool, graph_warmup_iters: int = GRAPH_WARMUP_ITERS) -> int:
    """The first step worth recording: past the run's warm-up steps and, in a graphed run, past
    its eager warm-up steps (RunConfig.graph_warmup_iters) and the step whose window holds the
    graph's capture, so that the profile shows replays. Step 2 at the earliest: steps 0 and 1 pay
    one-time costs."""
    return max(2, warmup_steps, graph_warmup_iters + 1 if cuda_graph else 0)


def profile_schedule(num_steps: int, profile_steps: int, warmup_steps: int = 0,
                     cuda_graph: bool = False, graph_warmup_iters: int = GRAPH_WARMUP_ITERS) -> tuple[int, int, int]:
    """(wait, warmup, active): the profiler warms up one step before first_clean_step and records
    `profile_steps` from it; a run too short for that records its last step (even a 1-step run
    yields a trace), and a short window before it shrinks active, never the start."""
    start = min(first_clean_step(warmup_steps, cuda_graph, graph_warmup_iters), num_steps - 1)
    warmup = 1 if start >= 1 else 0
    active = max(1, min(profile_steps, num_steps - start))
    return start - warmup, warmup, active

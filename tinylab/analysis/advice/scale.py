"""Limits of the machine and of several ranks: memory near the card's capacity, communication that
compute does not hide, a straggler rank the others wait for.
"""

from __future__ import annotations

import statistics

from tinylab.analysis.advice.model import (
    Advice,
    Facts,
    Impact,
    Quantity,
    action,
    evidence_of_summary,
    speedup,
    without_fault,
)
from tinylab.analysis.advice.scope import scope
from tinylab.analysis.roofline import ELEMENT_BYTES
from tinylab.core.versions import lookup

#: A peak at or above this share of the card's memory leaves no room for a larger batch or sequence
#: (and the caching allocator's fragmentation takes some of what is left).
MEMORY_SHARE = 0.90
#: Communication not hidden under compute, as a share of the step (the issue's 10 %).
EXPOSED_COMM = 0.10
#: The slowest rank's forward this many times the others' median: a straggler (the fault makes it 3x).
STRAGGLER = 1.5


@scope(
    "the card's capacity and peak memory are a GPU's; memory does not change with load",
    gpu=True, needs=("summary",),
)
def memory_capacity(f: Facts) -> Advice | None:
    cfg, s = f.run_config(), f.summary
    if cfg is None or s is None or not s.peak_mem_mb or not f.device_memory_mb:
        return None
    share = s.peak_mem_mb / f.device_memory_mb
    if share < MEMORY_SHARE:
        return None
    tokens = cfg.batch_size * cfg.seq_len
    eb = ELEMENT_BYTES.get(cfg.precision, 4)
    spec = lookup(cfg.version)
    if spec is not None and "recompute_ffn" in spec.toggles and not f.config.get("recompute_ffn"):
        # recomputing the FFN frees at most its three ffn-sized activations a token and layer
        freed = min(3 * cfg.ffn_dim * tokens * cfg.num_layers * eb / 2**20, 0.99 * s.peak_mem_mb)
        changes, text = {"recompute_ffn": True}, "recompute the FFN in the backward instead of keeping its activations"
    elif cfg.precision == "fp32":
        freed = min(s.peak_mem_mb / 2, 0.99 * s.peak_mem_mb)  # activations at half the bytes, at most
        changes, text = {"precision": "bf16"}, "bf16 autocast: activations at half the bytes"
    else:
        freed, changes, text = None, {}, "a smaller --batch-size or --seq-len, or several ranks with --parallel fsdp"
    bound = s.peak_mem_mb / (s.peak_mem_mb - freed) if freed else None
    return Advice(
        rule="memory-capacity",
        severity="warning",
        condition="the run's peak memory is near the card's capacity: a larger batch or sequence will not fit, "
                  "and the allocator may fail on fragmentation first",
        measured=Quantity(share, "fraction", f"peak {s.peak_mem_mb:,.0f} MB = {share:.0%} of the "
                                             f"{f.device_memory_mb:,.0f} MB on {f.device_name}"),
        threshold=Quantity(MEMORY_SHARE, "fraction", f">= {MEMORY_SHARE:.0%} of the card's memory"),
        impact=Impact(bound, "peak_mem_mb" if bound else None, "high" if bound else None,
                      f"peak memory at most {bound:.2f}x lower" if bound else "headroom, not speed"),
        action=action(f, text, changes),
        lesson="v4-fusion step 5",
        evidence=(evidence_of_summary(f, "peak_mem_mb"), f"start event: device_memory_mb={f.device_memory_mb:,.0f}"),
    )


@scope(
    "collectives run between ranks on any device; exposed time is a timing",
    needs=("summary", "ranks"), timed="bound",
)
def exposed_communication(f: Facts) -> Advice | None:
    s = f.summary
    if s is None or s.comm_ms is None or not s.step_ms_median:
        return None
    hidden = s.comm_hidden or 0.0
    exposed = s.comm_ms * (1 - hidden)
    share = exposed / s.step_ms_median
    if share < EXPOSED_COMM:
        return None
    impact = speedup(f, 1.0 / (1.0 - min(share, 0.99)), f"the step with its {exposed:.2f} ms of exposed "
                                                        "collectives hidden", metric="step_ms_median")
    if impact is None:
        return None
    return Advice(
        rule="exposed-communication",
        severity="suggestion",
        condition="the ranks spend a large share of the step in collectives that no compute runs under: the "
                  "GPUs wait for the all-reduce instead of overlapping it with the backward",
        measured=Quantity(share, "fraction", f"{exposed:.2f} ms of {s.comm_ms:.2f} ms collectives exposed "
                                             f"({hidden:.0%} hidden) = {share:.0%} of the "
                                             f"{s.step_ms_median:.2f} ms step"),
        threshold=Quantity(EXPOSED_COMM, "fraction", f">= {EXPOSED_COMM:.0%} of the step"),
        impact=impact,
        action=action(f, "give the backward more compute to hide the all-reduce under: a larger --batch-size per "
                      "rank (DDP overlaps its buckets with the backward)", {}),
        lesson="scaling step 2",
        evidence=(evidence_of_summary(f, "comm_ms", "comm_hidden", "step_ms_median"),),
    )


@scope(
    "one rank against the others on any device; a busy machine slows ranks unevenly",
    needs=("summary", "ranks"), timed="ratio",
)
def straggler(f: Facts) -> Advice | None:
    ranks = [r for r in f.ranks if r.fwd_ms_median is not None]
    s = f.summary
    if len(ranks) < 2 or s is None or not s.step_ms_median:
        return None
    slow = max(ranks, key=lambda r: r.fwd_ms_median)
    others = statistics.median(r.fwd_ms_median for r in ranks if r is not slow)
    if others <= 0 or slow.fwd_ms_median < STRAGGLER * others:
        return None
    extra = slow.fwd_ms_median - others
    impact = speedup(f, s.step_ms_median / max(s.step_ms_median - extra, 1e-9),
                     f"every rank's step without rank {slow.rank}'s extra {extra:.2f} ms")
    if impact is None:
        return None
    return Advice(
        rule="straggler",
        severity="suggestion",
        condition="one rank's own work is much slower than the others', and every rank waits for it in the "
                  "all-reduce: the run goes at the straggler's pace",
        measured=Quantity(slow.fwd_ms_median / others, "x", f"rank {slow.rank} forward {slow.fwd_ms_median:.2f} ms = "
                                                            f"{slow.fwd_ms_median / others:.1f}x the other ranks' "
                                                            f"median {others:.2f} ms"),
        threshold=Quantity(STRAGGLER, "x", f">= {STRAGGLER:g}x the other ranks' forward"),
        impact=impact,
        action=without_fault(f, "straggler", f"find what slows rank {slow.rank} (a throttled GPU, a busy data "
                             "loader, a noisy neighbour): its host and device are in the Ranks table"),
        lesson="straggler step 1",
        evidence=("events.jsonl rank events: forward medians "
                  + ", ".join(f"rank {r.rank} {r.fwd_ms_median:.2f} ms" for r in ranks),
                  evidence_of_summary(f, "step_ms_median", "slowest_rank")),
    )


RULES = (memory_capacity, exposed_communication, straggler)

"""The ranks of a run of several, as one table: what `tinylab show`, the report and the lab's Run
screen list for each rank (its host and device, step times, phases, peak memory, time in
collectives, whether its weights ended in sync), from the `rank` events rank 0 writes.

State is said in words and marks, never by colour alone: the slowest rank reads "slowest", a rank
whose weights differ from rank 0's reads "✗ differs".
"""

from __future__ import annotations

from tinylab.core.events import RankEvent
from tinylab.runs.record import RunRecord, printable

#: column key -> header; rank_table takes any of them, in any order.
COLUMNS = {
    "rank": "rank",
    "host": "host",
    "device": "device",
    "step": "step ms",
    "p90": "p90 ms",
    "phases": "fwd/bwd/opt ms",
    "fwd": "fwd ms",
    "bwd": "bwd ms",
    "peak": "peak MB",
    "comm": "collectives ms",
    "weights": "weights",
}
#: What `show` and the report list: every column but the phases one by one.
FULL = ("rank", "host", "device", "step", "p90", "phases", "peak", "comm", "weights")
#: Which columns hold numbers (right-aligned).
NUMERIC = frozenset({"step", "p90", "phases", "fwd", "bwd", "peak", "comm"})
SLOWEST = "slowest"


def numeric_columns(keys: tuple[str, ...] = FULL) -> tuple[int, ...]:
    """The positions among `keys` of the columns that hold numbers (to right-align)."""
    return tuple(i for i, key in enumerate(keys) if key in NUMERIC)


def rank_table(record: RunRecord, keys: tuple[str, ...] = FULL) -> tuple[list[str], list[list[str]]]:
    """(header, a row a rank) for a run of several ranks; no rows for a run of one process."""
    slowest = record.summary.slowest_rank if record.summary else None
    reference = record.ranks[0].weights if record.ranks else None
    rows = [[_cell(key, r, slowest, reference) for key in keys] for r in record.ranks]
    return [COLUMNS[key] for key in keys], rows


def _cell(key: str, r: RankEvent, slowest: int | None, reference: str | None) -> str:
    if key == "rank":
        return f"{r.rank} {SLOWEST}" if r.rank == slowest else str(r.rank)
    if key == "host":
        return printable(r.host) if r.host else "-"
    if key == "device":
        return printable(r.device) if r.device else "-"
    if key == "phases":
        return "/".join(_ms(v) for v in (r.fwd_ms_median, r.bwd_ms_median, r.opt_ms_median))
    if key == "peak":
        return "-" if r.peak_mem_mb is None else f"{r.peak_mem_mb:,.1f}"
    if key == "comm":
        hidden = f" ({r.comm_hidden:.0%} hidden)" if r.comm_hidden is not None and r.comm_ms is not None else ""
        return _ms(r.comm_ms) + hidden
    if key == "weights":
        if not r.weights or not reference:
            return "- not reported"
        return "✓ in sync" if r.weights == reference else "✗ differs"
    return _ms({"step": r.step_ms_median, "p90": r.step_ms_p90, "fwd": r.fwd_ms_median, "bwd": r.bwd_ms_median}[key])


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def sync_line(record: RunRecord) -> str | None:
    """One line on whether every rank ended with the same weights (None: not a run of several)."""
    in_sync = record.ranks_in_sync
    if in_sync is None:
        return None
    if in_sync:
        return f"✓ weights in sync on all {len(record.ranks)} ranks"
    differ = [str(r.rank) for r in record.ranks if r.weights and r.weights != record.ranks[0].weights]
    return f"✗ weights out of sync: rank {', '.join(differ)} ended apart from rank 0 (the gradients did not sync)"


def under_engine(record: RunRecord) -> str:
    """" under <engine>" (the config's "parallel"), or "" when the config names none."""
    engine = record.settings.parallel if record.settings else None
    return f" under {engine}" if engine else ""


def ranks_caption(record: RunRecord, sentences: bool = False) -> str:
    """A run of several ranks in one line: how many under which engine, the slowest, the weights
    ("2 ranks under ddp · rank 1 slowest · ✓ weights in sync on all 2 ranks"); with `sentences`,
    the report's prose ("2 ranks under ddp. Rank 1 is the slowest (the others wait for it). ✓ ...")."""
    slowest = record.summary.slowest_rank if record.summary else None
    if sentences:
        parts = [f"{record.world_size} ranks{under_engine(record)}.",
                 f"Rank {slowest} is the slowest (the others wait for it)." if slowest is not None else None]
    else:
        parts = [f"{record.world_size} ranks{under_engine(record)}",
                 f"rank {slowest} slowest" if slowest is not None else None]
    return (" " if sentences else " · ").join(filter(None, [*parts, sync_line(record)]))

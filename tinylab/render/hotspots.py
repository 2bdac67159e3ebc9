"""A hotspot summary (tinylab.analysis.hotspots) for a terminal: the kernel table with short
names cut to fit, by category, and the per-rank comparison of a run of several ranks.

--json and --csv keep the full names.
"""

from __future__ import annotations

import csv
import math
import textwrap
from typing import TextIO

from tinylab.analysis.hotspots_result import ALL_RANKS, HotspotSummary, RankComparison
from tinylab.core.names import short_names
from tinylab.core.text import csv_cell
from tinylab.runs.record import printable


def format_ns(value: float | int | None) -> str:
    """Human time for a nanosecond count ("12.3 us", "4.56 ms"); "-" when unknown."""
    if value is None or not math.isfinite(float(value)):
        return "-"
    value = float(value)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}" if abs(value) / scale < 100 else f"{value / scale:.0f} {unit}"
    return f"{value:.0f} ns"


def time_of(summary: HotspotSummary) -> str:
    """What the table's times measure: a CPU run's operators ("CPU run: no device kernels") take
    CPU time, and calling it kernel time contradicts the note printed under it."""
    return "CPU time" if summary.rows == "operators" else "kernel time"


def render_text(summary: HotspotSummary, source: str, width: int = 120) -> str:
    """The hotspot table for a terminal: short names (analysis.names) cut to fit. With the
    summary's ranks: which rank it shows (a rank column for all of them) and the per-rank comparison."""
    kernels = summary.kernels
    timed = summary.total_ns is not None
    info = summary.ranks
    ranks, rank = (info.ranks, info.rank) if info else ((), None)
    lines = [
        f"{source}  [{summary.format}]  {summary.kernel_count} {summary.rows}"
        + (f", {format_ns(summary.total_ns)} total {time_of(summary)}" if timed else ", no durations")
        + (" (all ranks)" if rank == ALL_RANKS and timed else "")
    ]
    if rank == ALL_RANKS:
        lines.append(f"all {len(ranks)} ranks, one row per kernel and rank (share: of its rank's kernel time); "
                     "--rank N for one rank")
    elif ranks:
        lines.append(f"rank {rank} of {len(ranks)}; --rank N for another, --rank {ALL_RANKS} for one row per "
                     "kernel and rank")
    by_rank = rank == ALL_RANKS
    cat_width = max([len("category") + 3, *(len(k.category) for k in kernels)])  # "communication" when listed
    header = (f"{'#':>3}  " + ("rank  " if by_rank else "") + f"{'total':>9}  {'share':>6}  {'calls':>7}  "
              f"{'avg':>9}  {'min':>9}  {'max':>9}  {'category':<{cat_width}}  name")
    lines.append(header)
    fixed = len(header) - len("name")
    name_width = max(20, width - fixed)
    for i, (k, name) in enumerate(zip(kernels, short_names([k.name for k in kernels])), 1):
        name = name if len(name) <= name_width else name[: name_width - 1] + "…"
        share = f"{k.pct:.1f}%" if k.pct is not None else "-"
        lines.append(
            f"{i:>3}  " + (f"{k.rank:>4}  " if by_rank else "")
            + f"{format_ns(k.total_ns):>9}  {share:>6}  {k.calls:>7}  {format_ns(k.avg_ns):>9}  "
            f"{format_ns(k.min_ns):>9}  {format_ns(k.max_ns):>9}  {k.category:<{cat_width}}  {name}"
        )
    if not kernels:
        lines.append("    (no kernels match)")
    parts = []
    for cat, c in summary.categories.items():
        if timed:
            share = f"{c.pct:.1f}%" if c.pct is not None else "-"
            parts.append(f"{cat} {share} ({format_ns(c.total_ns)})")
        else:
            parts.append(f"{cat} {c.calls} calls")
    lines.append("by category" + (" (all ranks)" if by_rank else "") + ": " + " · ".join(parts))
    if summary.note:
        lines.append(f"note: {summary.note}")
    if info and info.compared and info.compared.per_rank:
        lines += render_ranks(info.compared, width)
    return "\n".join(lines)


def render_ranks(compared: RankComparison, width: int = 120) -> list[str]:
    """The per-rank comparison of a run of several ranks as lines: a row a rank, then the spread."""
    rows = compared.per_rank
    lines = ["per rank (each rank's whole table):", f"  {'rank':>4}  {'kernel time':>11}  {'communication':>15}  top kernel"]
    names = short_names([r.top_kernel.name if r.top_kernel else "-" for r in rows])
    for r, name in zip(rows, names):
        comm = format_ns(r.communication_ns) + (f" {r.communication_pct:.1f}%"
                                                if r.communication_pct is not None else "")
        top = r.top_kernel
        top_text = "-" if top is None else f"{name} ({top.category}" + (
            f", {top.pct:.1f}%)" if top.pct is not None else ")")
        line = f"  {r.rank:>4}  {format_ns(r.total_ns):>11}  {comm:>15}  {top_text}"
        lines.append(line if len(line) <= width else line[: width - 1] + "…")
    spreads = []
    for key, label in (("total_ns", "kernel time"), ("communication_ns", "communication")):
        spread = compared.spread.get(key)
        if spread and spread.pct is not None:
            spreads.append(f"{label} +{spread.pct:.1f}% (rank {spread.most} most, rank {spread.least} least)")
    if spreads:
        lines += textwrap.wrap("spread between ranks: " + "; ".join(spreads), width, subsequent_indent="  ")
    return lines


def write_csv(summary: HotspotSummary, out: TextIO) -> None:
    """The listed kernels as CSV with full names; in a run of several ranks, a rank column first.
    Names are made safe for a terminal (no escape sequence: the CSV is often printed) and for a
    spreadsheet (no formula: csv_cell)."""
    from tinylab.core.kernel_table import KERNEL_COLUMNS  # pandas: only for --csv

    ranks, rank = (summary.ranks.ranks, summary.ranks.rank) if summary.ranks else ((), None)
    columns = (["rank"] if ranks else []) + KERNEL_COLUMNS  # whose row it is, in a run of several
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for k in summary.kernels:
        row = {"rank": rank, **k.to_json()}  # one rank's table: its rank on every row; all ranks: each row's
        writer.writerow(["" if row[c] is None else csv_cell(printable(row[c]) if isinstance(row[c], str) else row[c])
                         for c in columns])

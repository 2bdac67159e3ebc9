"""Hotspot tables for people: a run's (or any profiler output's) kernel table, summarized and
diffed between two runs, as the frozen typed results of tinylab.analysis.hotspots_result
(tinylab.render.hotspots lays them out).

The table itself and its categories are built in tinylab.core.kernel_table; the native
formats are read by tinylab.analysis.formats.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tinylab.analysis import formats
from tinylab.core.categories import CATEGORIES
from tinylab.analysis.formats.pytorch import CPU_NOTE
from tinylab.analysis.hotspots_result import (ALL_RANKS, CategoryTime, HotspotSummary, KernelChange, KernelDiff,
                                              KernelRow, KernelTotal, RankComparison, RankInfo, RankTotals, Spread,
                                              TopKernel)
from tinylab.core.kernel_table import has_durations
from tinylab.core.errors import UserError
from tinylab.core.eventlog import EVENTS_FILE, read_events
from tinylab.core.events import ProfileEvent
from tinylab.core.safeio import inside, is_plain_dir


# ----------------------------------------------------------------------------- loading
_RANK_FOLDER = re.compile(r"^rank(\d+)$")


@dataclass(frozen=True)
class KernelTables:
    """The kernel tables of one source: each rank's of a run of several ranks (ranks are never
    merged: the tables are read one at a time, or side by side with a rank column), or the one table
    of a one-process run or of a profiler output (under rank None)."""

    tables: dict[int | None, pd.DataFrame]  # by rank, ascending
    fmt: str
    source: str  # what the messages call it: a run id or a path

    @property
    def ranks(self) -> list[int]:
        """The ranks with a table; [] for one process."""
        return [r for r in self.tables if r is not None]

    def select(self, rank: int | str | None = None) -> tuple[pd.DataFrame, int | str | None]:
        """The table of `rank` (None: the first rank, normally 0), or with ALL_RANKS every rank's rows
        with a `rank` column first (each row's pct stays its share of its own rank's kernel time).
        UserError naming the ranks there are when `rank` is not one of them."""
        ranks = self.ranks
        if not ranks:
            if rank is not None:
                raise UserError(f"--rank {rank}: {self.source} has no ranks (one process, one table)")
            return self.tables[None], None
        if rank == ALL_RANKS:
            table = pd.concat([t.assign(rank=r)[["rank", *t.columns]] for r, t in self.tables.items()],
                              ignore_index=True)
            table = table.sort_values(["total_ns", "calls", "rank", "name"], ascending=[False, False, True, True],
                                      na_position="last", kind="stable").reset_index(drop=True)
            table.attrs.update(self.tables[ranks[0]].attrs)
            return table, ALL_RANKS
        if rank is None:
            rank = ranks[0]
        if rank not in self.tables:
            raise UserError(f"--rank {rank}: {self.source} has ranks {', '.join(map(str, ranks))} "
                            f"(or --rank {ALL_RANKS})")
        return self.tables[rank], rank

    def rank_info(self, rank: int | str | None) -> RankInfo:
        """What `hotspots` says about ranks beside a table (--json carries it): the rank shown, the
        ranks there are, and for a run of several each rank's totals and the spread between them."""
        ranks = self.ranks
        if not ranks:
            return RankInfo(None)
        return RankInfo(rank, tuple(ranks), compare_ranks(self.tables))

    def summarize(self, rank: int | str | None = None, top: int | None = None,
                  category: str | None = None) -> HotspotSummary:
        """`rank`'s table (as select() picks it) summarized, with what it says about the ranks."""
        table, rank = self.select(rank)
        return summarize(table, top, category, fmt=self.fmt).with_ranks(self.rank_info(rank))


def load_kernel_table(path: Path) -> tuple[pd.DataFrame, str]:
    """Any supported native output (file or folder), format detected from content."""
    parsed = formats.load(Path(path))
    parsed.table.attrs.update(format=parsed.format, note=parsed.note)
    return parsed.table, parsed.format


def load_kernel_tables(path: Path) -> KernelTables:
    """A profiler output file or folder; a folder of rank<k> folders (a run's profiles/<tool>, or
    its profiles/) gives one table a rank, never one merged table."""
    path = Path(path)
    folders = rank_folders(path) if path.is_dir() else {}
    if not folders:
        table, fmt = load_kernel_table(path)
        return KernelTables({None: table}, fmt, str(path))
    tables = {rank: load_kernel_table(folder) for rank, folder in folders.items()}
    fmts = sorted({fmt for _, fmt in tables.values()})
    return KernelTables({rank: table for rank, (table, _) in tables.items()}, "/".join(fmts), str(path))


def rank_folders(folder: Path) -> dict[int, Path]:
    """rank<k> folders of `folder` (profiles/<tool>/rank<k>) or of its tool folders (profiles/*/rank<k>),
    by rank; UserError when several tools have them (their tables do not line up: name one)."""
    found: dict[Path, dict[int, Path]] = {}
    for parent in (folder, *_subfolders(folder)):
        for child in _subfolders(parent):
            if m := _RANK_FOLDER.match(child.name):
                found.setdefault(parent, {})[int(m.group(1))] = child
    if len(found) > 1:
        tools = ", ".join(p.name for p in found)
        raise UserError(f"{folder} holds the outputs of several ranks from several tools ({tools}): "
                        f"name one, e.g. {next(iter(found))}")
    return dict(sorted(next(iter(found.values()), {}).items()))


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if is_plain_dir(p))
    except OSError:
        return []


def _run_profiles(run_dir: Path, profiles: Any = None) -> tuple[ProfileEvent, dict[int | None, ProfileEvent]] | None:
    """The newest "profile" event with a kernel table on disk and, by rank (ascending), the events of
    its tool that the tables are read from (a rank's later table wins; rank None only in a run of
    one process), or None. `profiles`: the run's profile events when the caller holds them (a
    RunRecord's `.profiles`), else they are read from its events.jsonl. A kernel table path that
    leads outside the run folder (absolute, `..`, a link on the way) is an UnsafeFile: a
    neighbour's file is never read as the run's."""
    if profiles is None:
        profiles = (ProfileEvent.from_event(e) for e in read_events(run_dir / EVENTS_FILE).of("profile"))
    usable = [p for p in profiles if p.kernel_table and inside(run_dir, p.kernel_table).is_file()]
    if not usable:
        return None
    newest = usable[-1]
    by_rank = {p.rank: p for p in usable if p.tool == newest.tool}
    if any(rank is not None for rank in by_rank):
        by_rank.pop(None, None)
    return newest, dict(sorted(by_rank.items()))  # all ints, or the one None


def _load_profile_table(run_dir: Path, profile: ProfileEvent) -> pd.DataFrame:
    table = formats.load(inside(run_dir, profile.kernel_table)).table
    table.attrs.update(format=profile.format or profile.tool or "tinylab", note=profile.note, tool=profile.tool)
    return table


def _run_format(newest: ProfileEvent) -> str:
    return str(newest.format or newest.tool or "tinylab")


def load_run_kernel_tables(run_dir: Path, profiles: Any = None) -> KernelTables | None:
    """A run's newest kernel table through its "profile" events, one a rank in a run of several
    ranks (the newest tool's, so that the ranks' tables come from one tool), or None. `profiles`:
    as in load_run_kernel_table."""
    run_dir = Path(run_dir)
    found = _run_profiles(run_dir, profiles)
    if found is None:
        return None
    newest, by_rank = found
    tables = {rank: _load_profile_table(run_dir, profile) for rank, profile in by_rank.items()}
    return KernelTables(tables, _run_format(newest), run_dir.name)


def load_run_kernel_table(run_dir: Path, profiles: Any = None) -> tuple[pd.DataFrame, str] | None:
    """The newest kernel table a run recorded, or None; in a run of several ranks rank 0's (its
    `attrs` say "rank" and "ranks", so that a reader can say whose table it shows). Only that one
    table is read. `profiles`: the run's profile events when the caller holds them (a RunRecord's
    `.profiles`); by default they are read from the run's events.jsonl."""
    run_dir = Path(run_dir)
    found = _run_profiles(run_dir, profiles)
    if found is None:
        return None
    newest, by_rank = found
    ranks = [r for r in by_rank if r is not None]
    rank = ranks[0] if ranks else None  # the first rank (normally 0), as KernelTables.select()
    table = _load_profile_table(run_dir, by_rank[rank])
    table.attrs.update(rank=rank, ranks=ranks)
    return table, _run_format(newest)


# ----------------------------------------------------------------------------- summaries
def check_category(category: str | None) -> None:
    if category is not None and category not in CATEGORIES:
        raise UserError(f"unknown category {category!r}: choose one of {', '.join(CATEGORIES)}")


def summarize(
    table: pd.DataFrame,
    top: int | None,
    category: str | None,
    *,
    fmt: str | None = None,
    note: str | None = None,
) -> HotspotSummary:
    """The table's totals, by category, and its kernels narrowed by `top` and `category`.

    total_ns is the whole table's kernel time (None without durations) so that each kernel's
    pct stays its share of all kernel time even when --category or --top narrows the list.
    """
    check_category(category)
    if top is not None and top < 1:
        raise UserError(f"--top must be >= 1, got {top}")
    timed = has_durations(table)
    rows = table if category is None else table[table["category"] == category]
    if not timed:
        rows = rows.sort_values(["calls", "name"], ascending=[False, True])
    if top is not None:
        rows = rows.head(top)
    categories = {}
    total = table["total_ns"].sum(min_count=1)  # NaN without durations
    for cat, group in table.groupby("category", sort=False):
        cat_total = group["total_ns"].sum(min_count=1)
        categories[str(cat)] = CategoryTime(
            total_ns=_json_ns(cat_total),
            pct=_json_float(100 * cat_total / total) if total > 0 else None,
            calls=int(group["calls"].sum()),
            kernels=len(group),
        )
    order = sorted(categories, key=lambda c: (-(categories[c].total_ns or 0), -categories[c].calls, c))
    note = note if note is not None else table.attrs.get("note")
    return HotspotSummary(
        format=fmt if fmt is not None else table.attrs.get("format"),
        total_ns=_json_ns(total) if timed else None,
        kernel_count=len(table),
        note=note,
        rows="operators" if CPU_NOTE in (note or "") else "kernels",

        categories={c: categories[c] for c in order},
        kernels=tuple(_kernel_row(row) for row in rows.itertuples(index=False)),
    )


def _kernel_row(row: Any) -> KernelRow:
    return KernelRow(
        name=row.name,
        calls=int(row.calls),
        total_ns=_json_ns(row.total_ns),
        avg_ns=_json_ns(row.avg_ns),
        min_ns=_json_ns(row.min_ns),
        max_ns=_json_ns(row.max_ns),
        pct=_json_float(row.pct),
        category=row.category,
        rank=int(row.rank) if hasattr(row, "rank") else None,  # an all-ranks table
    )


def _json_float(value: Any, digits: int = 4) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


def _json_ns(value: Any) -> int | float | None:
    value = _json_float(value, 3)
    if value is not None and value.is_integer():
        return int(value)
    return value


def compare_ranks(tables: dict[int, pd.DataFrame]) -> RankComparison:
    """Each rank's whole table in a few numbers (kernel time, time in communication and its share,
    the top kernel), and the spread between the ranks: how far the one with the most time is above
    the one with the least (% of the least), for kernel time and for communication."""
    per_rank = []
    for rank, table in tables.items():
        timed = has_durations(table)  # a counts-only table has no times to compare
        total = table["total_ns"].sum() if timed else None
        comm = table.loc[table["category"] == "communication", "total_ns"].sum() if timed else None
        top = table.iloc[0] if len(table) else None  # tables are sorted by total time, then calls
        per_rank.append(RankTotals(
            rank=rank,
            total_ns=_json_ns(total),
            communication_ns=_json_ns(comm),
            communication_pct=_json_float(100 * comm / total) if total else None,
            kernel_count=len(table),
            top_kernel=None if top is None else TopKernel(top["name"], top["category"], _json_float(top["pct"])),
        ))
    return RankComparison(tuple(per_rank), {key: _spread(per_rank, key) for key in ("total_ns", "communication_ns")})


def _spread(per_rank: list[RankTotals], key: str) -> Spread | None:
    known = [(getattr(r, key), r.rank) for r in per_rank if getattr(r, key) is not None]
    if len(known) < 2:
        return None
    (low, least), (high, most) = min(known), max(known, key=lambda kv: (kv[0], -kv[1]))
    return Spread(most, least, _json_float(100 * (high - low) / low) if low > 0 else None)


def kernel_diff(a: pd.DataFrame, b: pd.DataFrame, top: int = 10) -> KernelDiff:
    """A/B kernel changes for `tinylab compare`: at most `top` of each kind.

    appeared/disappeared: kernels only in b / only in a, biggest first; changed: kernels in both,
    ordered by the absolute change of total time, with ratio = b/a.
    """
    a_rows = {r.name: r for r in a.itertuples(index=False)}
    b_rows = {r.name: r for r in b.itertuples(index=False)}

    def only(rows: dict[str, Any], other: dict[str, Any]) -> tuple[KernelTotal, ...]:
        picked = [r for name, r in rows.items() if name not in other]
        picked.sort(key=lambda r: (-_nan_to(r.total_ns, -1.0), -r.calls, r.name))
        return tuple(KernelTotal(r.name, _json_ns(r.total_ns), int(r.calls), r.category) for r in picked[:top])

    changed = []
    for name in a_rows.keys() & b_rows.keys():
        ra, rb = a_rows[name], b_rows[name]
        ta, tb = _nan_to(ra.total_ns, None), _nan_to(rb.total_ns, None)
        delta = abs(tb - ta) if ta is not None and tb is not None else 0.0
        changed.append((delta, KernelChange(
            name=name,
            a_total_ns=_json_ns(ta),
            b_total_ns=_json_ns(tb),
            ratio=_json_float(tb / ta) if ta and tb is not None else None,
            a_calls=int(ra.calls),
            b_calls=int(rb.calls),
        )))
    changed.sort(key=lambda item: (-item[0], item[1].name))
    return KernelDiff(only(b_rows, a_rows), only(a_rows, b_rows), tuple(change for _, change in changed[:top]))


def _nan_to(value: Any, default: Any) -> Any:
    value = float(value)
    return value if math.isfinite(value) else default

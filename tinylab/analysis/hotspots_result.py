"""What tinylab.analysis.hotspots finds in kernel tables, as frozen typed results: a table's
summary (totals, by category, the kernels listed, and which rank's table it is in a run of
several) and the kernel diff of two tables.

No pandas here, so that the faces and the renderers name these types cheaply. Each result's
`to_json()` is the object that `tinylab hotspots --json` and `tinylab compare --json` print.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

#: --rank's word for every rank at once (one row per kernel and rank).
ALL_RANKS = "all"


@dataclass(frozen=True)
class CategoryTime:
    """A kernel category's share of a table: its time (None without durations) and launches."""

    total_ns: int | float | None
    pct: float | None
    calls: int
    kernels: int

    def to_json(self) -> dict[str, Any]:
        return {"total_ns": self.total_ns, "pct": self.pct, "calls": self.calls, "kernels": self.kernels}


@dataclass(frozen=True)
class KernelRow:
    """One kernel of a table; `pct` is its share of all the kernel time of its table (its rank's)."""

    name: str
    calls: int
    total_ns: int | float | None
    avg_ns: int | float | None
    min_ns: int | float | None
    max_ns: int | float | None
    pct: float | None
    category: str
    rank: int | None = None  # whose row it is, in a table of every rank (ALL_RANKS)

    def to_json(self) -> dict[str, Any]:
        return {
            **({"rank": self.rank} if self.rank is not None else {}),
            "name": self.name, "calls": self.calls, "total_ns": self.total_ns, "avg_ns": self.avg_ns,
            "min_ns": self.min_ns, "max_ns": self.max_ns, "pct": self.pct, "category": self.category,
        }


@dataclass(frozen=True)
class TopKernel:
    name: str
    category: str
    pct: float | None


@dataclass(frozen=True)
class RankTotals:
    """One rank's whole table in a few numbers."""

    rank: int
    total_ns: int | float | None
    communication_ns: int | float | None
    communication_pct: float | None
    kernel_count: int
    top_kernel: TopKernel | None

    def to_json(self) -> dict[str, Any]:
        top = self.top_kernel
        return {"rank": self.rank, "total_ns": self.total_ns, "communication_ns": self.communication_ns,
                "communication_pct": self.communication_pct, "kernel_count": self.kernel_count,
                "top_kernel": None if top is None else {"name": top.name, "category": top.category, "pct": top.pct}}


@dataclass(frozen=True)
class Spread:
    """How far the rank with the most of a total is above the one with the least (% of the least)."""

    most: int
    least: int
    pct: float | None


@dataclass(frozen=True)
class RankComparison:
    per_rank: tuple[RankTotals, ...]
    spread: dict[str, Spread | None]  # "total_ns", "communication_ns"

    def to_json(self) -> dict[str, Any]:
        return {"per_rank": [r.to_json() for r in self.per_rank],
                "spread": {key: None if s is None else {"most": s.most, "least": s.least, "pct": s.pct}
                           for key, s in self.spread.items()}}


@dataclass(frozen=True)
class RankInfo:
    """The rank a table shows (ALL_RANKS: every rank's rows), the ranks there are ([] for one
    process), and for a run of several how the ranks compare."""

    rank: int | str | None
    ranks: tuple[int, ...] = ()
    compared: RankComparison | None = None

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "ranks": list(self.ranks), **(self.compared.to_json() if self.compared else {})}


@dataclass(frozen=True)
class HotspotSummary:
    """A kernel table in numbers: its totals, by category, and the kernels listed (narrowed by
    --top/--category); `ranks`, when given, says which rank's table it is."""

    format: str | None
    total_ns: int | float | None  # the whole table's kernel time; None without durations
    kernel_count: int
    note: str | None
    categories: dict[str, CategoryTime] = field(default_factory=dict)  # most time first
    kernels: tuple[KernelRow, ...] = ()
    ranks: RankInfo | None = None
    rows: str = "kernels"  # what kernel_count counts: "operators" for a CPU run's table (no device kernels)

    def with_ranks(self, info: RankInfo) -> HotspotSummary:
        return replace(self, ranks=info)

    def to_json(self) -> dict[str, Any]:
        """The `hotspots --json` object minus "source"."""
        return {
            "format": self.format, "total_ns": self.total_ns, "kernel_count": self.kernel_count, "rows": self.rows,
            "note": self.note,
            "categories": {c: t.to_json() for c, t in self.categories.items()},
            "kernels": [k.to_json() for k in self.kernels],
            **(self.ranks.to_json() if self.ranks else {}),
        }


@dataclass(frozen=True)
class KernelTotal:
    """A kernel found in only one of two tables."""

    name: str
    total_ns: int | float | None
    calls: int
    category: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "total_ns": self.total_ns, "calls": self.calls, "category": self.category}


@dataclass(frozen=True)
class KernelChange:
    """A kernel in both tables; ratio = b/a (None where a is 0 or either has no durations)."""

    name: str
    a_total_ns: int | float | None
    b_total_ns: int | float | None
    ratio: float | None
    a_calls: int
    b_calls: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "a_total_ns": self.a_total_ns, "b_total_ns": self.b_total_ns, "ratio": self.ratio,
                "a_calls": self.a_calls, "b_calls": self.b_calls}


@dataclass(frozen=True)
class KernelDiff:
    appeared: tuple[KernelTotal, ...]  # only in b, biggest first
    disappeared: tuple[KernelTotal, ...]  # only in a, biggest first
    changed: tuple[KernelChange, ...]  # in both, by the absolute change of total time

    def to_json(self) -> dict[str, Any]:
        return {"appeared": [k.to_json() for k in self.appeared], "disappeared": [k.to_json() for k in self.disappeared],
                "changed": [k.to_json() for k in self.changed]}

"""Hotspot tables for people: a run's (or any profiler output's) kernel table, summarized,
diffed between two runs, and rendered for a terminal.

The table itself and its categories are built in tinylab.analysis.kernel_table; the native
formats are read by tinylab.analysis.formats.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from tinylab.analysis import formats
from tinylab.analysis.categories import CATEGORIES
from tinylab.analysis.kernel_table import has_durations
from tinylab.analysis.names import short_names
from tinylab.errors import UserError
from tinylab.events import EVENTS_FILE, ProfileEvent, read_events


# ----------------------------------------------------------------------------- loading
def load_kernel_table(path: Path) -> tuple[pd.DataFrame, str]:
    """Any supported native output (file or folder), format detected from content."""
    parsed = formats.load(Path(path))
    parsed.table.attrs.update(format=parsed.format, note=parsed.note)
    return parsed.table, parsed.format


def load_run_kernel_table(run_dir: Path) -> tuple[pd.DataFrame, str] | None:
    """The newest kernel table a run recorded through a "profile" event, or None."""
    run_dir = Path(run_dir)
    for event in reversed(read_events(run_dir / EVENTS_FILE).of("profile")):
        profile = ProfileEvent.from_event(event)
        if not profile.kernel_table or not (run_dir / profile.kernel_table).is_file():
            continue
        table = formats.load(run_dir / profile.kernel_table).table
        fmt = profile.format or profile.tool or "tinylab"
        table.attrs.update(format=fmt, note=profile.note, tool=profile.tool)
        return table, str(fmt)
    return None


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
) -> dict[str, Any]:
    """The `hotspots --json` object minus "source".

    total_ns is the whole table's kernel time (null without durations) so that each kernel's
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
    for cat, group in table.groupby("category", sort=False):
        cat_total = group["total_ns"].sum(min_count=1)
        categories[str(cat)] = {
            "total_ns": _json_ns(cat_total),
            "pct": _json_float(group["pct"].sum(min_count=1)),
            "calls": int(group["calls"].sum()),
            "kernels": len(group),
        }
    order = sorted(categories, key=lambda c: (-(categories[c]["total_ns"] or 0), -categories[c]["calls"], c))
    return {
        "format": fmt if fmt is not None else table.attrs.get("format"),
        "total_ns": _json_ns(table["total_ns"].sum(min_count=1)) if timed else None,
        "kernel_count": len(table),
        "note": note if note is not None else table.attrs.get("note"),
        "categories": {c: categories[c] for c in order},
        "kernels": [_kernel_record(row) for row in rows.itertuples(index=False)],
    }


def _kernel_record(row: Any) -> dict[str, Any]:
    return {
        "name": row.name,
        "calls": int(row.calls),
        "total_ns": _json_ns(row.total_ns),
        "avg_ns": _json_ns(row.avg_ns),
        "min_ns": _json_ns(row.min_ns),
        "max_ns": _json_ns(row.max_ns),
        "pct": _json_float(row.pct),
        "category": row.category,
    }


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


def kernel_diff(a: pd.DataFrame, b: pd.DataFrame, top: int = 10) -> dict[str, list[dict[str, Any]]]:
    """A/B kernel changes for `tinylab compare`.

    appeared/disappeared: kernels only in b / only in a, biggest first, as
    {"name", "total_ns", "calls", "category"}; changed: kernels in both, ordered by the absolute
    change of total time, with ratio = b/a (null where a is 0 or either has no durations).
    """
    a_rows = {r.name: r for r in a.itertuples(index=False)}
    b_rows = {r.name: r for r in b.itertuples(index=False)}

    def only(rows: dict[str, Any], other: dict[str, Any]) -> list[dict[str, Any]]:
        picked = [r for name, r in rows.items() if name not in other]
        picked.sort(key=lambda r: (-_nan_to(r.total_ns, -1.0), -r.calls, r.name))
        return [
            {"name": r.name, "total_ns": _json_ns(r.total_ns), "calls": int(r.calls), "category": r.category}
            for r in picked[:top]
        ]

    changed = []
    for name in a_rows.keys() & b_rows.keys():
        ra, rb = a_rows[name], b_rows[name]
        ta, tb = _nan_to(ra.total_ns, None), _nan_to(rb.total_ns, None)
        delta = abs(tb - ta) if ta is not None and tb is not None else 0.0
        changed.append(
            (
                delta,
                {
                    "name": name,
                    "a_total_ns": _json_ns(ta),
                    "b_total_ns": _json_ns(tb),
                    "ratio": _json_float(tb / ta) if ta and tb is not None else None,
                    "a_calls": int(ra.calls),
                    "b_calls": int(rb.calls),
                },
            )
        )
    changed.sort(key=lambda item: (-item[0], item[1]["name"]))
    return {
        "appeared": only(b_rows, a_rows),
        "disappeared": only(a_rows, b_rows),
        "changed": [record for _, record in changed[:top]],
    }


def _nan_to(value: Any, default: Any) -> Any:
    value = float(value)
    return value if math.isfinite(value) else default


# ----------------------------------------------------------------------------- text rendering
def format_ns(value: float | int | None) -> str:
    """Human time for a nanosecond count ("12.3 us", "4.56 ms"); "-" when unknown."""
    if value is None or not math.isfinite(float(value)):
        return "-"
    value = float(value)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}" if abs(value) / scale < 100 else f"{value / scale:.0f} {unit}"
    return f"{value:.0f} ns"


def render_text(summary: dict[str, Any], source: str, width: int = 120) -> str:
    """The hotspot table for a terminal: short names (analysis.names) cut to fit; --json/--csv keep
    the full names."""
    kernels = summary["kernels"]
    timed = summary["total_ns"] is not None
    lines = [
        f"{source}  [{summary['format']}]  {summary['kernel_count']} kernels"
        + (f", {format_ns(summary['total_ns'])} total kernel time" if timed else ", no durations")
    ]
    cat_width = max([len("category") + 3, *(len(k["category"]) for k in kernels)])  # "communication" when listed
    header = (f"{'#':>3}  {'total':>9}  {'share':>6}  {'calls':>7}  {'avg':>9}  {'min':>9}  {'max':>9}  "
              f"{'category':<{cat_width}}  name")
    lines.append(header)
    fixed = len(header) - len("name")
    name_width = max(20, width - fixed)
    for i, (k, name) in enumerate(zip(kernels, short_names([k["name"] for k in kernels])), 1):
        name = name if len(name) <= name_width else name[: name_width - 1] + "…"
        share = f"{k['pct']:.1f}%" if k["pct"] is not None else "-"
        lines.append(
            f"{i:>3}  {format_ns(k['total_ns']):>9}  {share:>6}  {k['calls']:>7}  {format_ns(k['avg_ns']):>9}  "
            f"{format_ns(k['min_ns']):>9}  {format_ns(k['max_ns']):>9}  {k['category']:<{cat_width}}  {name}"
        )
    if not kernels:
        lines.append("    (no kernels match)")
    parts = []
    for cat, c in summary["categories"].items():
        if timed:
            share = f"{c['pct']:.1f}%" if c["pct"] is not None else "-"
            parts.append(f"{cat} {share} ({format_ns(c['total_ns'])})")
        else:
            parts.append(f"{cat} {c['calls']} calls")
    lines.append("by category: " + " · ".join(parts))
    if summary.get("note"):
        lines.append(f"note: {summary['note']}")
    return "\n".join(lines)

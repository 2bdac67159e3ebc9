"""rocpd, ROCm 7's output: the SQLite database, `rocpd summary` CSV and console text.

A database can be crafted to make a query run forever or eat memory (a recursive view, also one
hidden behind another view; a cross join; a gigabyte blob), also when it merely sits in a folder
being scanned. So it is read read-only, and every statement is checked by a SQLite authorizer as
it is prepared (tinylab reads only what rocprofv3 writes):
- no recursive query, anywhere, however deep in the views;
- only tables and views of rocpd's own names (`kernels`, `rocpd_*`), and only through views of
  those names: a `kernels` view reading any other view is refused;
- only a few plain SQL functions (no zeroblob, printf, replace ...), and no value over
  VALUE_LIMIT bytes;
- a time limit (QUERY_SECONDS, or less when the load's total budget ends first: _base.DEADLINE).
What is refused ends in a one-line error naming the file; a refused `kernels` view falls back to
rocpd's dispatch and symbol tables.
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
from pathlib import Path

import pandas as pd

from tinylab.analysis.formats._base import (
    Bounded,
    FormatError,
    Head,
    Parsed,
    complete_rows,
    number,
    read_text,
    remaining,
    unit_factor,
)
from tinylab.analysis.formats.detect import csv_table
from tinylab.core.kernel_table import build_table

#: A query running longer than this is stopped; rocpd's own tables of a few steps read in seconds.
QUERY_SECONDS = 60.0
#: The largest string or blob a query may read or make (a kernel name is a few KiB at most).
VALUE_LIMIT = 8 << 20
#: The SQL functions a query (ours, or rocpd's views it goes through) may call.
FUNCTIONS = frozenset({"count", "sum", "total", "min", "max", "avg", "coalesce", "ifnull", "nullif", "iif",
                       "abs", "round", "length", "lower", "upper", "trim", "substr", "substring", "instr",
                       "typeof", "json_extract"})


class Refused(Bounded):
    """The database asked for something tinylab does not run (see the module docstring)."""


def _rocpd_name(name: str | None) -> bool:
    return name is not None and (name == "kernels" or name.startswith("rocpd_"))


class _Guard:
    """The authorizer: what a statement may do, decided as SQLite prepares it; `refused` says why
    the last statement was refused."""

    def __init__(self) -> None:
        self.refused: str | None = None

    def __call__(self, action: int, arg1: str | None, arg2: str | None, _db: str | None, view: str | None) -> int:
        why = None
        if action == sqlite3.SQLITE_RECURSIVE:
            why = "a recursive query" + (f" ({view})" if view else "")
        elif view is not None and not _rocpd_name(view) and action != sqlite3.SQLITE_SELECT:
            why = f"view {view!r} is not one of rocpd's"
        elif action == sqlite3.SQLITE_READ and not _rocpd_name(arg1) and arg1 != "sqlite_master":
            why = f"reads {arg1!r}" + (f" through view {view!r}" if view else "") + ", which is not rocpd's"
        elif action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in FUNCTIONS:
            why = f"calls {arg2}()" + (f" in view {view!r}" if view else "")
        elif action not in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                            sqlite3.SQLITE_PRAGMA):
            why = f"statement kind {action}"
        if why is None:
            return sqlite3.SQLITE_OK
        self.refused = self.refused or why
        return sqlite3.SQLITE_DENY


def parse_database(path: Path, head: Head) -> Parsed:
    """ROCm 7 rocpd database: the `kernels` view, else the dispatch and symbol tables joined."""
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise FormatError(f"cannot open SQLite database: {exc}") from None
    limit = remaining(QUERY_SECONDS)
    deadline = time.monotonic() + limit
    con.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
    guard = _Guard()
    con.set_authorizer(guard)
    if hasattr(con, "setlimit"):  # Python 3.11+
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_LIMIT)
    try:
        objects = {row[0]: row[1] or "" for row in
                   con.execute("SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'view')")}
        df, note = _kernels(con, objects, guard)
    except sqlite3.DatabaseError as exc:
        if time.monotonic() > deadline:
            raise Bounded(f"reading it took over {limit:.0f} s and was stopped "
                          "(a damaged or crafted database?)") from None
        if guard.refused:
            raise Refused(f"its rocpd data goes through what tinylab does not run ({guard.refused}): not read") from None
        if "too big" in str(exc):
            raise Bounded(f"a value larger than {VALUE_LIMIT >> 20} MiB: not read (a damaged or crafted database?)") from None
        raise FormatError(f"corrupt or unreadable SQLite database: {exc}") from None
    finally:
        con.close()
    if df.empty:
        raise FormatError("rocpd database has no kernel dispatches (was --kernel-trace on?)")
    return Parsed(build_table(df), "rocpd", note)


_DURATION = '("end" - start)'
_AGG = "COUNT(*) AS calls, SUM({d}) AS total_ns, MIN({d}) AS min_ns, MAX({d}) AS max_ns"


def _kernels(con: sqlite3.Connection, objects: dict[str, str], guard: _Guard) -> tuple[pd.DataFrame, str | None]:
    """The per-kernel rows, aggregated in SQL. From rocpd's dispatch and symbol tables, grouped by
    kernel id before the names are joined (a million dispatches in about a second: rocpd's own
    `kernels` view joins eight tables for every dispatch first, which takes several); from the
    `kernels` view only when those tables are not there. `objects`: name -> the SQL that made it,
    for every table and view."""
    def frame(sql: str) -> pd.DataFrame:
        rows = con.execute(sql).fetchall()
        return pd.DataFrame(rows, columns=["name", "calls", "total_ns", "min_ns", "max_ns"])

    view, skipped = _kernels_view(con, objects, guard)
    pairs = _table_pairs(objects)
    df = frame(_table_aggregates(con, pairs)) if pairs else None
    if (df is None or df.empty) and view is not None:
        return frame(f"SELECT name, {_AGG.format(d=view)} FROM kernels GROUP BY name"), None
    if df is None:
        if skipped:
            raise Refused(f"its kernels view goes through what tinylab does not run ({skipped}): not read")
        raise FormatError("SQLite database without rocpd kernel data (no `kernels` view or rocpd_kernel_dispatch table)")
    if view is not None:  # the same dispatches rocpd's view shows
        return df, None
    why = (f"its kernels view was not used ({skipped})" if skipped
           else "the kernels view was empty or missing")
    return df, f"read from rocpd_kernel_dispatch + rocpd_info_kernel_symbol ({why})"


def _kernels_view(con: sqlite3.Connection, objects: dict[str, str], guard: _Guard) -> tuple[str | None, str | None]:
    """(the duration expression of rocpd's `kernels` view when it holds a dispatch, else None; why
    the guard refused it, else None)."""
    if "kernels" not in objects:
        return None, None
    try:
        cols = {row[1].lower() for row in con.execute("PRAGMA table_info(kernels)")}
        if "name" not in cols or not ("duration" in cols or {"start", "end"} <= cols):
            return None, None
        duration = "duration" if "duration" in cols else _DURATION
        if con.execute(f"SELECT name, {duration} FROM kernels LIMIT 1").fetchone() is None:
            return None, None
        return duration, None
    except sqlite3.DatabaseError:
        if not guard.refused:
            raise
        skipped, guard.refused = guard.refused, None  # the tables themselves may still be read
        return None, skipped


def _table_pairs(objects: dict[str, str]) -> list[tuple[str, str]]:
    """(dispatch table, its symbol table) pairs: the merged views, else each process's tables."""
    if {"rocpd_kernel_dispatch", "rocpd_info_kernel_symbol"} <= objects.keys():
        return [("rocpd_kernel_dispatch", "rocpd_info_kernel_symbol")]
    pairs = []  # un-merged per-process tables carry a UUID suffix
    for name in sorted(objects):
        if name.startswith("rocpd_kernel_dispatch_"):
            symbols = "rocpd_info_kernel_symbol_" + name[len("rocpd_kernel_dispatch_") :]
            if symbols in objects:
                pairs.append((name, symbols))
    return pairs


def _table_aggregates(con: sqlite3.Connection, pairs: list[tuple[str, str]]) -> str:
    """One row per kernel id of each dispatch table, named from its symbol table."""
    parts = []
    for dispatch, symbols in pairs:
        sym_cols = {row[1].lower() for row in con.execute(f'PRAGMA table_info("{symbols}")')}
        label = "COALESCE(s.display_name, s.kernel_name)" if "display_name" in sym_cols else "s.kernel_name"
        parts.append(
            f"SELECT {label} AS name, a.calls, a.total_ns, a.min_ns, a.max_ns FROM "
            f"(SELECT kernel_id, {_AGG.format(d=_DURATION)} "
            f'FROM "{dispatch}" GROUP BY kernel_id) a JOIN "{symbols}" s ON a.kernel_id = s.id'
        )
    return " UNION ALL ".join(parts)


def parse_summary_csv(path: Path, head: Head) -> Parsed:
    columns, rows = csv_table(path, head)
    i_name = columns.find("Name")
    i_calls = columns.find("Calls")
    i_total, unit = columns.match(r"duration \((\w+)\)")
    factor = unit_factor(unit, "DURATION")
    i_min = (columns.match(r"min \((\w+)\)", required=False) or (None,))[0]
    i_max = (columns.match(r"max \((\w+)\)", required=False) or (None,))[0]
    rows, note = complete_rows(rows, 1 + max(i for i in (i_name, i_calls, i_total, i_min, i_max) if i is not None))
    records = {
        "name": [f[i_name] for _, f in rows],
        "calls": [number(f[i_calls], "Calls", n) for n, f in rows],
        "total_ns": [number(f[i_total], "DURATION", n) * factor for n, f in rows],
        "min_ns": [number(f[i_min], "MIN", n) * factor if i_min is not None else math.nan for n, f in rows],
        "max_ns": [number(f[i_max], "MAX", n) * factor if i_max is not None else math.nan for n, f in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "rocpd-summary", note)


_CONSOLE_NUMBERS = 7  # Calls, DURATION, AVERAGE, PERCENT, MIN, MAX, STD_DEV


def parse_console(path: Path, head: Head) -> Parsed:
    """`rocpd summary` console text: a pandas-printed table; numbers are the last 7 tokens."""
    lines = read_text(path, head).split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("KERNELS_SUMMARY")), None)
    if start is None:
        raise FormatError("no KERNELS_SUMMARY section")
    by_rank = "BY_RANK" in lines[start]
    header = lines[start + 1] if start + 1 < len(lines) else ""
    m = re.search(r"DURATION \((\w+)\)", header)
    if "Name" not in header or not m:
        raise FormatError("KERNELS_SUMMARY without its Name/Calls/DURATION header line")
    factor = unit_factor(m.group(1), "DURATION")
    records = {"name": [], "calls": [], "total_ns": [], "min_ns": [], "max_ns": []}
    abbreviated = False
    for line_no, line in enumerate(lines[start + 2 :], start + 3):
        tokens = line.split()
        if not tokens or line.rstrip().endswith(":"):
            break
        if tokens == ["..."] or "..." in tokens:
            abbreviated = True
            continue
        skip = 2 if by_rank else 0
        if len(tokens) < _CONSOLE_NUMBERS + skip + 1:
            raise FormatError(f"line {line_no}: expected a name and {_CONSOLE_NUMBERS} numbers")
        numbers = tokens[-_CONSOLE_NUMBERS:]
        records["name"].append(" ".join(tokens[skip:-_CONSOLE_NUMBERS]))
        records["calls"].append(number(numbers[0], "Calls", line_no))
        records["total_ns"].append(number(numbers[1], "DURATION", line_no) * factor)
        records["min_ns"].append(number(numbers[4], "MIN", line_no) * factor)
        records["max_ns"].append(number(numbers[5], "MAX", line_no) * factor)
    note = "names are re-spaced from console text; prefer `rocpd summary --format csv`"
    if abbreviated:
        note += "; pandas abbreviated the console table (\"...\"): some kernels are missing"
    return Parsed(build_table(pd.DataFrame(records)), "rocpd-summary-console", note)

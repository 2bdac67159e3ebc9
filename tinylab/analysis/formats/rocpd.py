"""rocpd, ROCm 7's output (rocprofv3's, and from rocprof-sys 1.9, ROCm 10.1, rocprof-sys's default):
the SQLite database, `rocpd summary` CSV and console text.

The database is read from rocpd's own tables, the ones rocprofiler-sdk's schema creates
(source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql: `rocpd_<name>_<uuid>` a process, or
un-suffixed after `rocpd merge`), never through a view the file defines: the SDK's views
(`rocpd_kernel_dispatch` AS SELECT * FROM its table, `kernels` joining eight tables) are the file's
own SQL, and a crafted file's view can cross-join a table with itself for hours. Only a database
with no such tables is read through a `kernels` view. Every schema 3.0.x is read the same way (3.0.1
NIC agents, 3.0.2 rocpd_graph_launch, 3.0.3 SPM columns, 3.0.4 rocpd_hip_event: versions.yml); a
newer one by the tables it has, the note naming those it lacks. HIP events and graph launches are
counted where there are such tables, and the trainer's ROCTx step ranges are the regions named
after their message (rocprofiler-sdk of ROCm 10.1+; before, marker regions had a generic name).

A database can still be crafted to make a query run forever or eat memory (a recursive view, also
one hidden behind another view; a cross join; a gigabyte blob), also when it merely sits in a folder
being scanned. So it is read read-only, and every statement is checked by a SQLite authorizer as it
is prepared:
- no recursive query, anywhere, however deep in the views;
- only tables and views of rocpd's own names (`kernels`, `rocpd_*`), and only through views of
  those names: a `kernels` view reading any other view is refused;
- only a few plain SQL functions (no zeroblob, printf, replace ...), and no value over
  VALUE_LIMIT bytes;
- a budget of SQLite virtual-machine steps (STEP_BUDGET, counted by the progress handler) and of
  time (QUERY_SECONDS, or less when the load's total budget ends first: _base.DEADLINE), for the
  whole file, whichever ends first.
What is refused ends in a one-line error naming the file.
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
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

#: The most time one database may take; rocpd's own tables of a few steps read in well under a second.
QUERY_SECONDS = 6.0
#: The most SQLite virtual-machine steps one database may take (about 2 s at 250 M steps/s): a million
#: dispatches grouped by kernel take some 20 M.
STEP_BUDGET = 500_000_000
_STEP = 10_000  # steps between two calls of the progress handler
#: The largest string or blob a query may read or make (a kernel name is a few KiB at most).
VALUE_LIMIT = 8 << 20
#: The SQL functions a query (ours, or the `kernels` view it goes through) may call.
FUNCTIONS = frozenset({"count", "sum", "total", "min", "max", "avg", "coalesce", "ifnull", "nullif", "iif",
                       "abs", "round", "length", "lower", "upper", "trim", "substr", "substring", "instr",
                       "typeof", "json_extract", "glob"})
#: The schema major version read here, and the tables a kernel table and its step cut come from.
SCHEMA_MAJOR = "3"
NEEDED = ("kernel_dispatch", "info_kernel_symbol", "string", "region")
#: What the trainer's ROCTx step ranges are named like (tinylab.core.markers), as a GLOB.
STEP_GLOB = "*tinylab*step *"


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


@dataclass
class _Db:
    """An open database: its connection, its authorizer, and its rocpd tables by kind (the name with
    neither "rocpd_" nor the per-process suffix: "kernel_dispatch" -> its tables, one a process)."""

    con: sqlite3.Connection
    guard: _Guard
    tables: dict[str, list[str]]
    views: set[str]

    def suffixes(self, *kinds: str) -> list[str]:
        """The suffixes ("" merged, "_<uuid>" a process) under which every one of `kinds` has a table."""
        found = [{t[len(f"rocpd_{kind}"):] for t in self.tables.get(kind, [])} for kind in kinds]
        return sorted(set.intersection(*found)) if found else []

    def count(self, kind: str) -> int:
        return sum(self.con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in self.tables.get(kind, []))


#: rocpd_<kind>, then nothing (merged) or "_" and a UUID with "_" for "-" (generateRocpd.cpp get_uuid)
_TABLE = re.compile(r"rocpd_([a-z0-9_]+?)((?:_[0-9a-f]{4,}){5})?")


@contextmanager
def _database(path: Path) -> Iterator[_Db]:
    """The database opened read-only under the guard and the budgets; what a query is refused or
    stopped for becomes the one-line FormatError (Bounded, Refused) that names why."""
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise FormatError(f"cannot open SQLite database: {exc}") from None
    limit = remaining(QUERY_SECONDS)
    deadline = time.monotonic() + limit
    steps = [0]

    def progress() -> bool:
        steps[0] += _STEP
        return steps[0] > STEP_BUDGET or time.monotonic() > deadline

    con.set_progress_handler(progress, _STEP)
    guard = _Guard()
    con.set_authorizer(guard)
    if hasattr(con, "setlimit"):  # Python 3.11+
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_LIMIT)
    try:
        tables: dict[str, list[str]] = {}
        views = set()
        for name, kind in con.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"):
            m = _TABLE.fullmatch(name or "")
            if kind == "view":
                views.add(name)
            elif m:
                tables.setdefault(m.group(1), []).append(name)
        yield _Db(con, guard, {k: sorted(v) for k, v in tables.items()}, views)
    except sqlite3.DatabaseError as exc:
        if steps[0] > STEP_BUDGET:
            raise Bounded(f"reading it took over {STEP_BUDGET:,} SQLite steps and was stopped "
                          "(a damaged or crafted database?)") from None
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


def parse_database(path: Path, head: Head) -> Parsed:
    """A rocpd database: the kernel table from its dispatch and symbol tables (else its `kernels`
    view), what else it recorded and which schema it has in the note."""
    with _database(path) as db:
        df, notes = _kernels(db)
        notes += _recorded(db)
    if df.empty:
        raise FormatError("rocpd database has no kernel dispatches (was --kernel-trace on?)")
    return Parsed(build_table(df), "rocpd", "; ".join(notes) or None)


_DURATION = '("end" - start)'
_AGG = "COUNT(*) AS calls, SUM({d}) AS total_ns, MIN({d}) AS min_ns, MAX({d}) AS max_ns"
_COLUMNS = ["name", "calls", "total_ns", "min_ns", "max_ns"]


def _label(db: _Db, symbols: str) -> str:
    cols = {row[1].lower() for row in db.con.execute(f'PRAGMA table_info("{symbols}")')}
    return "COALESCE(s.display_name, s.kernel_name)" if "display_name" in cols else "s.kernel_name"


def _kernels(db: _Db) -> tuple[pd.DataFrame, list[str]]:
    """The per-kernel rows, aggregated in SQL from each process's dispatch table, grouped by kernel
    id before the names are joined (a million dispatches in about a second); from the `kernels`
    view only when there are no such tables."""
    parts = [f"SELECT {_label(db, f'rocpd_info_kernel_symbol{sfx}')} AS name, a.calls, a.total_ns, a.min_ns, "
             f"a.max_ns FROM (SELECT kernel_id, {_AGG.format(d=_DURATION)} FROM \"rocpd_kernel_dispatch{sfx}\" "
             f"GROUP BY kernel_id) a JOIN \"rocpd_info_kernel_symbol{sfx}\" s ON a.kernel_id = s.id"
             for sfx in db.suffixes("kernel_dispatch", "info_kernel_symbol")]
    if parts:
        return pd.DataFrame(db.con.execute(" UNION ALL ".join(parts)).fetchall(), columns=_COLUMNS), []
    if "kernels" not in db.views:
        raise FormatError("SQLite database without rocpd kernel data (no rocpd_kernel_dispatch table or `kernels` view)")
    try:
        cols = {row[1].lower() for row in db.con.execute("PRAGMA table_info(kernels)")}
        if "name" not in cols or not ("duration" in cols or {"start", "end"} <= cols):
            raise FormatError("its `kernels` view has no name and duration columns")
        duration = "duration" if "duration" in cols else _DURATION
        rows = db.con.execute(f"SELECT name, {_AGG.format(d=duration)} FROM kernels GROUP BY name").fetchall()
    except sqlite3.DatabaseError:
        if not db.guard.refused:
            raise  # a bound or a damaged file: _database names it
        raise Refused(f"its kernels view goes through what tinylab does not run ({db.guard.refused}): not read") from None
    return pd.DataFrame(rows, columns=_COLUMNS), ["read through its `kernels` view: it has no rocpd_kernel_dispatch table"]


def _recorded(db: _Db) -> list[str]:
    """What the note says besides the kernels: the schema where it is not 3.0.x (and the tables it
    lacks), HIP events and graph launches where recorded."""
    notes = []
    versions = {row[0] for t in db.tables.get("metadata", [])
                for row in db.con.execute(f'SELECT value FROM "{t}" WHERE tag = \'schema_version\'')}
    newer = sorted(str(v) for v in versions if str(v).split(".")[0] != SCHEMA_MAJOR)
    if newer:
        missing = [f"rocpd_{kind}" for kind in NEEDED if kind not in db.tables]
        notes.append(f"rocpd schema {', '.join(newer)}, newer than the 3.0.x read here: read by the tables it has"
                     + (f" (it has no {', '.join(missing)})" if missing else ""))
    events, graphs = db.count("hip_event"), db.count("graph_launch")
    if events or graphs:
        notes.append(f"also recorded: {events} HIP events (hipEventRecord, hipStreamWaitEvent), {graphs} HIP graph launches")
    return notes


def rocpd_steps(path: Path) -> tuple[tuple[pd.Series, np.ndarray, np.ndarray], list[tuple[str, int, int]]]:
    """The kernel dispatches (names, starts, ends) and the regions named like a tinylab step of a rocpd
    database, from its tables (one clock, ns); FormatError (Bounded, Refused) as parse_database."""
    if path.is_symlink() or not path.is_file():
        raise FormatError(f"{path.name} is not a regular file")
    with _database(path) as db:
        dispatches = []
        for sfx in db.suffixes("kernel_dispatch", "info_kernel_symbol"):
            dispatches += db.con.execute(
                f"SELECT {_label(db, f'rocpd_info_kernel_symbol{sfx}')}, d.start, d.\"end\" FROM "
                f"\"rocpd_kernel_dispatch{sfx}\" d JOIN \"rocpd_info_kernel_symbol{sfx}\" s ON d.kernel_id = s.id").fetchall()
        ranges = []
        for sfx in db.suffixes("region", "string"):
            ranges += db.con.execute(
                f"SELECT n.string, r.start, r.\"end\" FROM \"rocpd_region{sfx}\" r JOIN \"rocpd_string{sfx}\" n "
                f"ON r.name_id = n.id WHERE n.string GLOB ?", (STEP_GLOB,)).fetchall()
    starts = np.array([d[1] for d in dispatches], dtype=np.float64)
    ends = np.array([d[2] for d in dispatches], dtype=np.float64)
    return (pd.Series([d[0] for d in dispatches], dtype=object), starts, ends), [(r[0], r[1], r[2]) for r in ranges]


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

"""What every format reader shares: the parsed result, the error, and tolerant field readers.

Knows no format: detection is in detect.py, each tool's readers in a module of its own.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd

from tinylab.core.errors import UserError
from tinylab.core.safeio import open_regular

SNIFF_BYTES = 1 << 20  # ncu/nsys stdout can carry the program's own output before the CSV header


SQLITE_MAGIC = b"SQLite format 3\x00"


GZIP_MAGIC = b"\x1f\x8b"


EXPECTED = ("expected rocprofv3 kernel_stats/kernel_trace, rocpd, rocprof-compute, rocprof-sys, ncu, nsys, PyTorch "
            "trace or proton tree")
_UNIT_NS = {
    "ns": 1.0, "nsec": 1.0, "nsecond": 1.0, "nanosecond": 1.0,
    "us": 1e3, "usec": 1e3, "usecond": 1e3, "microsecond": 1e3, "µs": 1e3,
    "ms": 1e6, "msec": 1e6, "msecond": 1e6, "millisecond": 1e6,
    "s": 1e9, "sec": 1e9, "second": 1e9,
}  # fmt: skip


@dataclass
class Parsed:
    table: pd.DataFrame
    format: str
    note: str | None = None


class FormatError(Exception):
    """A problem with the content; load() turns it into a UserError naming the file."""


class Bounded(FormatError):
    """A reader stopped by one of its bounds (time, size, what a database may run): the file may be
    crafted or simply too large; a folder scan notes it and reads on."""


#: When the load in progress (formats.load: one file, or a whole folder scan) must end, as a
#: time.monotonic() value; readers that can run long (SQLite queries) stop there.
DEADLINE: ContextVar[float | None] = ContextVar("tinylab_formats_deadline", default=None)


#: Who hears how far a long read has come (the lab's Hotspots screen), as hear(what, done, total):
#: "reading trace.json.gz", bytes of the file read so far, its size. Set with `reporting`.
PROGRESS: ContextVar[Callable[[str, int, int], None] | None] = ContextVar("tinylab_formats_progress", default=None)


@contextlib.contextmanager
def reporting(hear: Callable[[str, int, int], None] | None) -> Iterator[None]:
    """Readers in this block (of this thread) tell `hear` how far they have come."""
    token = PROGRESS.set(hear)
    try:
        yield
    finally:
        PROGRESS.reset(token)


def report(what: str, done: int, total: int) -> None:
    hear = PROGRESS.get()
    if hear is not None:
        hear(what, done, total)


def remaining(limit: float) -> float:
    """Seconds a reader may still take: its own `limit`, or less when the load's budget ends first."""
    deadline = DEADLINE.get()
    return limit if deadline is None else max(0.0, min(limit, deadline - time.monotonic()))


@dataclass
class Head:
    """The first bytes of a file (decompressed when `compression` is set)."""

    raw: bytes
    compression: str | None

    def text(self, path: Path) -> str:
        if b"\x00" in self.raw:
            raise UserError(f"{path}: binary data, not a profiler output I can read ({EXPECTED})")
        try:
            return self.raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            # a full head may end inside a multi-byte character: that is not binary data
            if len(self.raw) == SNIFF_BYTES and exc.start >= len(self.raw) - 3:
                return self.raw[: exc.start].decode("utf-8", errors="replace")
            raise UserError(f"{path}: binary data, not a profiler output I can read ({EXPECTED})") from None


class Columns:
    """Case-insensitive column lookup over one header row."""

    def __init__(self, header: list[str]):
        self.names = [h.strip().lstrip("\ufeff") for h in header]
        self.index: dict[str, int] = {}
        for i, name in enumerate(self.names):
            self.index.setdefault(name.lower(), i)

    def find(self, *candidates: str, required: bool = True) -> int | None:
        for candidate in candidates:
            if candidate.lower() in self.index:
                return self.index[candidate.lower()]
        if required:
            raise FormatError(f"missing column {candidates[0]!r} (columns: {', '.join(self.names[:12])}...)")
        return None

    def match(self, pattern: str, required: bool = True) -> tuple[int, str] | None:
        """First column whose lower-cased name fully matches pattern: (index, first group or '')."""
        for i, name in enumerate(self.names):
            m = re.fullmatch(pattern, name.lower())
            if m:
                return i, (m.group(1) if m.groups() and m.group(1) else "")
        if required:
            raise FormatError(f"no column matching {pattern!r}")
        return None


#: The most a whole-file reader (text tables, timemory JSON) takes in; pandas' CSV readers and the
#: trace reader (trace_events.py) stream.
TEXT_LIMIT = 512 << 20
#: A gzip file may inflate to GZIP_RATIO times its size, or GZIP_FLOOR, whichever is more: profiler
#: output compresses 10-20x (a 1M-event PyTorch trace: 19 MB of gzip, 277 MB of JSON), a gzip
#: bomb about 1000x (400 KB of gzip, 400 MB of valid JSON), which then ends in an error, not in
#: the machine's memory.
GZIP_RATIO = 100
GZIP_FLOOR = 32 << 20


def gzip_limit(size: int) -> int:
    """The most bytes a gzip file of `size` bytes may inflate to."""
    return max(GZIP_FLOOR, GZIP_RATIO * size)


def read_text(path: Path, head: Head, limit: int = TEXT_LIMIT) -> str:
    with open_regular(path, follow_links=True) as fh:
        if head.compression == "gzip":
            size = os.fstat(fh.fileno()).st_size
            inflated = min(limit, gzip_limit(size))
            with gzip.open(fh, "rb") as gz:
                raw = gz.read(inflated + 1)
            if len(raw) > inflated and inflated < limit:
                raise Bounded(f"decompresses to more than {inflated >> 20:,} MiB from {size:,} bytes: a gzip bomb? "
                              "not read")
        else:
            raw = fh.read(limit + 1)
    if len(raw) > limit:
        raise Bounded(f"more than {limit >> 20} MiB of text: too large to read whole (profile fewer steps)")
    if b"\x00" in raw:
        raise FormatError("binary data inside a text file (NUL bytes)")
    return raw.decode("utf-8", errors="replace")


def number(value: str, what: str, line_no: int) -> float:
    """A float from tool text: thousands separators (ncu, nsys) and mixed float formats."""
    text = value.strip().replace(",", "").replace("\u202f", "")
    if text in ("", "n/a", "N/A", "nan", "NaN", "-"):
        return float("nan")
    try:
        number = float(text)
    except ValueError:
        raise FormatError(f"line {line_no}: {what} is not a number: {value[:40]!r}") from None
    return number if math.isfinite(number) else float("nan")


def complete_rows(rows: list[tuple[int, list[str]]], width: int) -> tuple[list[tuple[int, list[str]]], str | None]:
    """Drop a last row cut short by truncation; a short row elsewhere is an error."""
    note = None
    if rows and len(rows[-1][1]) < width:
        rows = rows[:-1]
        note = "the last row was incomplete (truncated file?) and was skipped"
    for line_no, fields in rows:
        if len(fields) < width:
            raise FormatError(f"line {line_no}: {len(fields)} fields, the header has {width}")
    return rows, note


def unit_factor(unit: str, where: str) -> float:
    factor = _UNIT_NS.get(unit.strip().lower())
    if factor is None:
        raise FormatError(f"unknown time unit {unit!r} in {where}")
    return factor


def join(*notes: str | None) -> str | None:
    kept = [n for n in notes if n]
    return "; ".join(kept) if kept else None


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def json_number(value: Any) -> float:
    """A finite number from decoded JSON, else NaN (bools, strings, infinities, ints past a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    try:
        value = float(value)
    except OverflowError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []

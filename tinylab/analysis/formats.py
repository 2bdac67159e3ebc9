"""Readers for every native profiler output tinylab understands, chosen by content.

The format is detected from the bytes (SQLite and gzip magic numbers, JSON keys, the CSV header
line, text section markers), never from the file name: tools rename their outputs between
versions and users rename files. Columns are looked up by name without regard to case because
every tool has reordered or re-capitalized its columns across versions (FORMATS.md section 0).

Every reader returns a `Parsed` (normalized kernel table + format name + note) or raises
UserError with one line naming the file and the problem.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd

from tinylab.analysis.hotspots import build_table, counts_table, table_from_durations
from tinylab.errors import UserError

SNIFF_BYTES = 1 << 20  # ncu/nsys stdout can carry the program's own output before the CSV header
SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
EXPECTED = "expected rocprofv3 kernel_stats/kernel_trace, rocpd, rocprof-compute, rocprof-sys, ncu, nsys or PyTorch trace"

#: Formats, best first: when a folder holds several, the first one present is read.
FORMATS: dict[str, str] = {
    "rocprofv3-kernel-stats": "rocprofv3 --stats *_kernel_stats.csv",
    "rocpd": "rocprofv3 ROCm 7 rocpd SQLite database (*_results.db)",
    "rocprofv3-kernel-trace": "rocprofv3 --kernel-trace *_kernel_trace.csv",
    "rocpd-csv": "rocpd convert -f csv out_kernel_trace.csv",
    "rocprof-compute": "rocprof-compute workload (timestamps.csv / pmc_perf.csv)",
    "rocprof-compute-top": "rocprof-compute analyze pmc_kernel_top.csv",
    "nsys-kern-sum": "nsys stats --report cuda_gpu_kern_sum --format csv",
    "nsys-gpu-trace": "nsys stats --report cuda_gpu_trace --format csv",
    "ncu": "Nsight Compute --csv (details or raw page)",
    "pytorch-trace": "PyTorch profiler Chrome/Perfetto trace (.json / .json.gz)",
    "pytorch-operators": "tinylab operators.csv (PyTorch key_averages attributes)",
    "rocprof-sys-json": "rocprof-sys wall_clock-<pid>.json",
    "rocprof-sys-wall-clock": "rocprof-sys wall_clock-<pid>.txt",
    "rocprof-sys-perfetto": "rocprof-sys perfetto-trace-<pid>.proto (needs the perfetto package)",
    "rocprofv3-summary": "rocprofv3 -S summary text",
    "rocpd-summary": "rocpd summary --format csv kernels_summary.csv",
    "rocpd-summary-console": "rocpd summary console output",
    "rocprofv3-counter-collection": "rocprofv3 --pmc counter_collection.csv",
    "rocprof-v1-stats": "legacy rocprof --stats results.stats.csv",
    "tinylab": "tinylab normalized kernels.csv",
}

#: Formats whose files in one folder are separate processes of one run: their tables add up.
MERGEABLE = {
    "rocprofv3-kernel-stats",
    "rocprofv3-kernel-trace",
    "rocpd",
    "rocpd-csv",
    "rocprof-sys-json",
    "rocprof-sys-wall-clock",
    "rocprof-sys-perfetto",
}

#: Headers we recognize but that hold no kernels: a pointed message beats "unknown format".
NOT_KERNEL_HEADERS: list[tuple[set[str], str]] = [
    ({"domain", "function", "start_timestamp"}, "a HIP/HSA/marker API trace, not a kernel table (use *_kernel_trace.csv)"),
    ({"kind", "direction", "start_timestamp"}, "a memory-copy trace, not a kernel table (use *_kernel_trace.csv)"),
    ({"kind", "operation", "allocation_size"}, "a memory-allocation trace, not a kernel table"),
    ({"kind", "operation", "start_timestamp"}, "a scratch-memory (or other non-kernel) trace, not a kernel table"),
    ({"node_id", "agent_type"}, "rocprofv3 agent_info.csv, not a kernel table"),
    ({"workload_name", "gpu_model"}, "rocprof-compute sysinfo.csv; pass the workload folder instead"),
    ({"device", "hbmbw"}, "rocprof-compute roofline.csv (ceilings, not kernels); pass the workload folder instead"),
    ({"dispatch_id", "kernel_name", "gpu_id"}, "rocprof-compute pmc_dispatch_info.csv (no timings); pass the workload folder instead"),
]

_SCI = re.compile(r"^\s*-?\d+(?:\.\d+)?[eE][+-]?\d+\s*$")
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


# ----------------------------------------------------------------------------- entry points
def load(path: Path) -> Parsed:
    """Read a native output file or folder into the normalized table."""
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    if path.is_dir():
        return _load_folder(path)
    fmt, head = sniff(path)
    return _parse_as(path, fmt, head)


def sniff(path: Path) -> tuple[str, "Head"]:
    """(format, head) of one file, from its first bytes."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(SNIFF_BYTES)
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise UserError(f"{path}: file is empty")
    if raw.startswith(SQLITE_MAGIC):
        return "rocpd", Head(raw, None)
    if raw.startswith(GZIP_MAGIC):
        try:
            with gzip.open(path, "rb") as fh:
                inner = fh.read(SNIFF_BYTES)
        except (OSError, EOFError, zlib.error) as exc:
            raise UserError(f"{path}: corrupt or truncated gzip data ({exc})") from None
        return _sniff_text(path, Head(inner, "gzip"))
    if _looks_like_perfetto(raw):
        return "rocprof-sys-perfetto", Head(raw, None)
    return _sniff_text(path, Head(raw, None))


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


def _looks_like_perfetto(raw: bytes) -> bool:
    """Perfetto protobuf traces start with a TracePacket field tag (0x0a) and are not UTF-8 text."""
    if raw[:1] != b"\x0a":
        return False
    try:
        raw[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _sniff_text(path: Path, head: Head) -> tuple[str, Head]:
    text = head.text(path)
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped[:1] in ("{", "["):
        return "json", head
    for line in text.split("\n")[:20000]:
        fmt = classify_line(line)
        if fmt is not None:
            if fmt.startswith("!"):
                raise UserError(f"{path}: {fmt[1:]}")
            return fmt, head
    raise UserError(f"{path}: no kernel-table header found ({EXPECTED})")


def classify_line(line: str) -> str | None:
    """Format whose header (or section marker) this line is; "!message" for known non-kernel files."""
    s = line.strip().lstrip("\ufeff")
    if not s:
        return None
    if s.startswith("ROCPROFV3 ") and s.endswith("SUMMARY:"):
        return "rocprofv3-summary"
    if s.startswith("KERNELS_SUMMARY"):
        return "rocpd-summary-console"
    if s.startswith("|") and "LABEL" in s and "COUNT" in s and "SUM" in s:
        return "rocprof-sys-wall-clock"
    if "," not in s:
        return None
    try:
        cols = [c.strip().lower() for c in next(csv.reader([s]))]
    except (csv.Error, StopIteration):
        return None
    return classify_columns(cols)


def classify_columns(cols: list[str]) -> str | None:
    s = set(cols)
    if {"name", "calls", "totaldurationns"} <= s:
        return "rocprofv3-kernel-stats" if "minns" in s else "rocprof-v1-stats"
    if "kernel_name" in s:
        timed = {"start_timestamp", "end_timestamp"} <= s
        if "counter_name" in s:
            return "rocprofv3-counter-collection"
        if timed and "gpu_id" in s:
            return "rocprof-compute"
        if timed and "guid" in s:
            return "rocpd-csv"
        if timed:
            return "rocprofv3-kernel-trace"
        if "count" in s and any(c.startswith("sum(") for c in s):
            return "rocprof-compute-top"
    if {"id", "kernel name"} <= s:
        return "ncu"
    if "name" in s and any(re.fullmatch(r"time\s*\(%\)", c) for c in s) and any(c.startswith("total time") for c in s):
        return "nsys-kern-sum"
    if "name" in s and any(c.startswith("duration (") for c in s) and any(c.startswith("start (") for c in s):
        return "nsys-gpu-trace"
    if {"name", "calls"} <= s and any(c.startswith("duration (") for c in s):
        return "rocpd-summary"
    if {"key", "count", "self_cpu_time_total"} <= s:
        return "pytorch-operators"
    if {"name", "calls", "total_ns"} <= s:
        return "tinylab"
    for needed, message in NOT_KERNEL_HEADERS:
        if needed <= s:
            return "!" + message
    return None


def _parse_as(path: Path, fmt: str, head: Head) -> Parsed:
    parser = _PARSERS[fmt]
    try:
        parsed = parser(path, head)
    except FormatError as exc:
        raise UserError(f"{path}: {exc}") from None
    except UserError:
        raise
    except (ValueError, OverflowError, UnicodeError, csv.Error, sqlite3.Error, EOFError, zlib.error, RecursionError) as exc:
        label = FORMATS.get(fmt, "JSON (PyTorch trace or rocprof-sys timemory)")
        raise UserError(f"{path}: cannot read as {label}: {_one_line(exc)}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {_one_line(exc)}") from None
    if parsed.table.empty:
        raise UserError(f"{path}: {FORMATS.get(parsed.format, parsed.format)} holds no kernel rows")
    return parsed


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


# ----------------------------------------------------------------------------- folders
def _load_folder(folder: Path) -> Parsed:
    found: dict[str, list[tuple[Path, Head]]] = {}
    for path in _candidate_files(folder):
        try:
            fmt, head = sniff(path)
        except UserError:
            continue
        if fmt == "json":
            fmt = _json_kind(path, head)
            if fmt is None:
                continue
        found.setdefault(fmt, []).append((path, head))
    failures: list[str] = []
    for fmt in FORMATS:
        files = sorted(found.get(fmt, []), key=lambda item: str(item[0]))
        parsed: list[Parsed] = []
        paths: list[Path] = []
        for path, head in files:
            try:
                parsed.append(_parse_as(path, "json" if fmt in _JSON_FORMATS else fmt, head))
                paths.append(path)
            except UserError as exc:  # e.g. hip_api_stats.csv shares the kernel_stats header
                failures.append(str(exc))
        if not parsed:
            continue
        if fmt in MERGEABLE and len(parsed) > 1:
            merged = pd.concat([p.table for p in parsed], ignore_index=True)
            notes = sorted({p.note for p in parsed if p.note})
            note = f"merged {len(parsed)} files (one per process)" + ("; " + "; ".join(notes) if notes else "")
            return Parsed(build_table(merged), fmt, note)
        # one run written several ways (ncu details + raw, rocprof-compute's per-pass files):
        # rocprof-compute's single-pass timestamps.csv is the exact one, else the most GPU time
        exact = [p for p, path in zip(parsed, paths) if path.name == "timestamps.csv"]
        return exact[0] if exact else max(parsed, key=lambda p: (p.table["total_ns"].sum(), p.table["calls"].sum()))
    detail = f"; e.g. {failures[0]}" if failures else ""
    raise UserError(f"{folder}: no supported profiler output found in this folder ({EXPECTED}){detail}")


def _candidate_files(folder: Path, limit: int = 5000) -> Iterator[Path]:
    """Files under folder, shallowest first; rocprofv3 nests <host>/<pid>_*, rocprof-sys a timestamp."""
    seen = 0
    level = [folder]
    for _depth in range(6):
        next_level = []
        for directory in level:
            try:
                entries = sorted(directory.iterdir())
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir():
                    next_level.append(entry)
                elif entry.is_file() and entry.stat().st_size > 0:
                    seen += 1
                    if seen > limit:
                        return
                    yield entry
        level = next_level


_JSON_FORMATS = {"pytorch-trace", "rocprof-sys-json"}


def _json_kind(path: Path, head: Head) -> str | None:
    """Cheap JSON kind from the head, for folder scans (the full parse decides for single files)."""
    text = head.raw.decode("utf-8", errors="replace")
    if '"traceEvents"' in text or '"ph"' in text:
        return "pytorch-trace"
    if '"timemory"' in text:
        return "rocprof-sys-json"
    return None


# ----------------------------------------------------------------------------- CSV helpers
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


def _read_text(path: Path, head: Head) -> str:
    if head.compression == "gzip":
        with gzip.open(path, "rb") as fh:
            raw = fh.read()
    else:
        raw = path.read_bytes()
    if b"\x00" in raw:
        raise FormatError("binary data inside a text file (NUL bytes)")
    return raw.decode("utf-8", errors="replace")


def _csv_table(path: Path, head: Head, stop_at_blank: bool = False) -> tuple[Columns, list[tuple[int, list[str]]]]:
    """Header and rows of the first kernel table in a (small) CSV file.

    Returns (columns, [(line number, fields)]). Lines before the header (==PROF==
    preambles, program output) are skipped; so are lines starting with "==" after it.
    """
    text = _read_text(path, head)
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if classify_line(line) is not None), None)
    if start is None:
        raise FormatError(f"no kernel-table header found ({EXPECTED})")
    body = [line.rstrip("\r") for line in lines[start:]]
    rows: list[tuple[int, list[str]]] = []
    reader = csv.reader(body)
    columns = Columns(next(reader))
    for fields in reader:
        line_no = start + reader.line_num
        if not fields or not any(f.strip() for f in fields):
            if stop_at_blank and rows:
                break
            continue
        if fields[0].startswith("=="):
            continue
        rows.append((line_no, fields))
    return columns, rows


def _number(value: str, what: str, line_no: int) -> float:
    """A float from tool text: thousands separators (ncu, nsys) and mixed float formats."""
    text = value.strip().replace(",", "").replace("\u202f", "")
    if text in ("", "n/a", "N/A", "nan", "NaN", "-"):
        return float("nan")
    try:
        number = float(text)
    except ValueError:
        raise FormatError(f"line {line_no}: {what} is not a number: {value[:40]!r}") from None
    return number if math.isfinite(number) else float("nan")


def _complete_rows(rows: list[tuple[int, list[str]]], width: int) -> tuple[list[tuple[int, list[str]]], str | None]:
    """Drop a last row cut short by truncation; a short row elsewhere is an error."""
    note = None
    if rows and len(rows[-1][1]) < width:
        rows = rows[:-1]
        note = "the last row was incomplete (truncated file?) and was skipped"
    for line_no, fields in rows:
        if len(fields) < width:
            raise FormatError(f"line {line_no}: {len(fields)} fields, the header has {width}")
    return rows, note


def _unit_factor(unit: str, where: str) -> float:
    factor = _UNIT_NS.get(unit.strip().lower())
    if factor is None:
        raise FormatError(f"unknown time unit {unit!r} in {where}")
    return factor


# ----------------------------------------------------------------------------- rocprofv3 / rocprof stats
_API_NAME = re.compile(r"(?:__)?(?:hip|hsa|rccl|nccl|roctx|rocdecode|rocjpeg|rocshmem)[A-Za-z0-9_]*")
_DOMAIN_NAME = re.compile(r"(?:KERNEL_DISPATCH|HIP_|HSA_|MEMORY_|SCRATCH_|MARKER_|RCCL_|ROCDECODE|ROCJPEG|OMPT|KFD)[A-Z0-9_]*")


def _parse_stats(path: Path, head: Head) -> Parsed:
    columns, rows = _csv_table(path, head)
    i_name = columns.find("Name")
    i_calls = columns.find("Calls")
    i_total = columns.find("TotalDurationNs")
    i_min = columns.find("MinNs", required=False)
    i_max = columns.find("MaxNs", required=False)
    width = 1 + max(i for i in (i_name, i_calls, i_total, i_min, i_max) if i is not None)
    rows, note = _complete_rows(rows, width)
    records = {"name": [], "calls": [], "total_ns": [], "min_ns": [], "max_ns": []}
    for line_no, f in rows:
        records["name"].append(f[i_name])
        records["calls"].append(_number(f[i_calls], "Calls", line_no))
        records["total_ns"].append(_number(f[i_total], "TotalDurationNs", line_no))
        records["min_ns"].append(_number(f[i_min], "MinNs", line_no) if i_min is not None else math.nan)
        records["max_ns"].append(_number(f[i_max], "MaxNs", line_no) if i_max is not None else math.nan)
    names = records["name"]
    if names and all(_DOMAIN_NAME.fullmatch(n.strip()) for n in names):
        raise FormatError("this is a domain or memory-copy stats file, not kernel stats (use *_kernel_stats.csv)")
    if names and all(_API_NAME.fullmatch(n.strip()) for n in names):
        raise FormatError("this is a HIP/HSA API stats file, not kernel stats (use *_kernel_stats.csv)")
    fmt = "rocprofv3-kernel-stats" if i_min is not None else "rocprof-v1-stats"
    if fmt == "rocprof-v1-stats":
        note = _join("legacy rocprof stats: no min/max per kernel", note)
    return Parsed(build_table(pd.DataFrame(records)), fmt, note)


def _join(*notes: str | None) -> str | None:
    kept = [n for n in notes if n]
    return "; ".join(kept) if kept else None


# ----------------------------------------------------------------------------- per-dispatch traces
def _header_offset(path: Path, head: Head) -> tuple[int, list[str], list[str]]:
    """Byte offset of the header line, its fields, and up to 50 sample rows (for rounding checks)."""
    offset = 0
    lines = head.raw.split(b"\n")
    for i, raw_line in enumerate(lines):
        line = raw_line.decode("utf-8", errors="replace")
        fmt = classify_line(line)
        if fmt is not None:
            header = next(csv.reader([line.strip().lstrip("\ufeff")]))
            sample = [ln.decode("utf-8", errors="replace") for ln in lines[i + 1 : i + 51]]
            return offset, header, sample
        offset += len(raw_line) + 1
    raise FormatError(f"no kernel-table header found ({EXPECTED})")


def _parse_dispatch_trace(path: Path, head: Head, fmt: str) -> Parsed:
    """rocprofv3 kernel_trace, rocpd convert CSV, rocprof-compute timestamps/pmc_perf, counters.

    These can be millions of rows: pandas' C parser reads only the needed columns.
    """
    offset, header, sample = _header_offset(path, head)
    columns = Columns(header)
    i_name = columns.find("Kernel_Name")
    i_start = columns.find("Start_Timestamp", required=False)
    i_end = columns.find("End_Timestamp", required=False)
    i_dispatch = columns.find("Dispatch_Id", "Correlation_Id", required=False)
    wanted = sorted({i for i in (i_name, i_start, i_end, i_dispatch) if i is not None})
    with open(path, "rb") as fh:
        fh.seek(offset)
        try:
            df = pd.read_csv(fh, usecols=wanted, engine="c", encoding_errors="replace")
        except pd.errors.EmptyDataError:
            raise FormatError("header but no rows") from None
        last_complete = _last_line_complete(fh, len(header))
    if len(df.columns) != len(wanted):
        raise FormatError("the header does not match the columns of the rows")
    df.columns = [f"c{i}" for i in wanted]  # by position: pandas keeps raw (unstripped, de-duplicated) names
    note = None
    if not last_complete and len(df):
        df = df.iloc[:-1]
        note = "the last row was incomplete (truncated file?) and was skipped"
    name_col = f"c{i_name}"
    df = df[df[name_col].notna()]
    if fmt == "rocprofv3-counter-collection" and i_dispatch is not None:
        # one row per (dispatch, counter): keep one row per dispatch
        df = df.drop_duplicates(subset=[f"c{i_dispatch}"])
    if i_start is None or i_end is None:
        return Parsed(counts_table(df[name_col]), fmt, _join(note, "no timestamps in this file: call counts only"))
    start = _as_int_or_float(df[f"c{i_start}"])
    end = _as_int_or_float(df[f"c{i_end}"])
    duration = (end - start).astype(float)
    valid = duration.notna() & (duration >= 0)
    skipped = int((~valid).sum())
    rounded = _rounded(sample, columns, i_start, i_end)
    if rounded or (valid.any() and not (duration[valid] > 0).any()):
        why = "timestamps are rounded (e.g. 8.1097E+14)" if rounded else "all durations are zero"
        return Parsed(counts_table(df[name_col]), fmt, _join(note, f"{why}: no kernel durations, call counts only"))
    if skipped:
        note = _join(note, f"{skipped} rows without a valid End_Timestamp - Start_Timestamp were skipped")
    return Parsed(table_from_durations(df.loc[valid, name_col], duration[valid]), fmt, note)


def _last_line_complete(fh: io.BufferedReader, width: int) -> bool:
    """Whether the file's last non-empty line has all the header's fields (else it was cut off)."""
    fh.seek(0, io.SEEK_END)
    size = fh.tell()
    fh.seek(max(0, size - 65536))
    tail = fh.read().decode("utf-8", errors="replace").rstrip("\r\n")
    last = tail.rsplit("\n", 1)[-1]
    try:
        fields = next(csv.reader([last.rstrip("\r")]), [])
    except csv.Error:
        return False
    return len(fields) >= width


def _as_int_or_float(series: pd.Series) -> pd.Series:
    """Exact int64 when the column is all integers (ns epochs overflow float precision)."""
    if pd.api.types.is_integer_dtype(series):
        return series.astype("int64")
    return pd.to_numeric(series, errors="coerce")


def _rounded(sample: list[str], columns: Columns, i_start: int, i_end: int) -> bool:
    for fields in csv.reader([s for s in sample if s.strip()]):
        for i in (i_start, i_end):
            if i < len(fields) and _SCI.match(fields[i]):
                return True
    return False


# ----------------------------------------------------------------------------- rocprof-compute top
def _parse_compute_top(path: Path, head: Head) -> Parsed:
    columns, rows = _csv_table(path, head)
    i_name = columns.find("Kernel_Name")
    i_count = columns.find("Count")
    i_sum, unit = columns.match(r"sum\((\w+)\)")
    factor = _unit_factor(unit, "Sum(...)")
    rows, note = _complete_rows(rows, 1 + max(i_name, i_count, i_sum))
    records = {
        "name": [f[i_name] for _, f in rows],
        "calls": [_number(f[i_count], "Count", n) for n, f in rows],
        "total_ns": [_number(f[i_sum], "Sum", n) * factor for n, f in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "rocprof-compute-top", note)


# ----------------------------------------------------------------------------- ncu
_NCU_DURATION_METRICS = ("gpu__time_duration.sum", "gpu__time_duration.avg", "gpu__time_duration", "duration")


def _parse_ncu(path: Path, head: Head) -> Parsed:
    """Nsight Compute --csv: details page (one row per launch x metric) or raw page (one per launch)."""
    columns, rows = _csv_table(path, head, stop_at_blank=True)
    i_id = columns.find("ID")
    i_name = columns.find("Kernel Name")
    i_pid = columns.find("Process ID", required=False)
    i_metric = columns.find("Metric Name", required=False)
    i_value = columns.find("Metric Value", required=False)
    i_unit = columns.find("Metric Unit", required=False)
    names: dict[tuple[str, str], str] = {}
    durations: dict[tuple[str, str], float] = {}
    note = None
    if i_metric is not None and i_value is not None:
        rows, note = _complete_rows(rows, 1 + max(i_id, i_name, i_metric, i_value))
        for line_no, f in rows:
            key = (f[i_pid] if i_pid is not None else "", f[i_id])
            names.setdefault(key, f[i_name])
            if f[i_metric].strip().lower() in _NCU_DURATION_METRICS and key not in durations:
                unit = f[i_unit] if i_unit is not None else "ns"
                durations[key] = _number(f[i_value], "Metric Value", line_no) * _unit_factor(unit or "ns", f"line {line_no}")
    else:
        i_dur = columns.find(*_NCU_DURATION_METRICS[:3], required=False)
        unit = "ns"
        if rows and (len(rows[0][1]) <= i_id or not rows[0][1][i_id].strip()):  # raw page: row 2 holds the units
            units_row = rows.pop(0)[1]
            if i_dur is not None and i_dur < len(units_row) and units_row[i_dur].strip():
                unit = units_row[i_dur]
        rows, note = _complete_rows(rows, 1 + max(i for i in (i_id, i_name, i_dur) if i is not None))
        for line_no, f in rows:
            key = (f[i_pid] if i_pid is not None else "", f[i_id])
            names[key] = f[i_name]
            if i_dur is not None:
                durations[key] = _number(f[i_dur], columns.names[i_dur], line_no) * _unit_factor(unit, "the units row")
    if not names:
        raise FormatError("ncu header but no profiled kernels")
    keys = list(names)
    if not any(not math.isnan(durations.get(k, math.nan)) for k in keys):
        return Parsed(
            counts_table(pd.Series([names[k] for k in keys])),
            "ncu",
            _join(note, "no gpu__time_duration metric in this ncu output: launch counts only "
                  "(profile with --metrics gpu__time_duration.sum)"),
        )
    timed = [k for k in keys if not math.isnan(durations.get(k, math.nan))]
    if len(timed) < len(keys):
        note = _join(note, f"{len(keys) - len(timed)} launches without a duration were skipped")
    table = table_from_durations(pd.Series([names[k] for k in timed]), pd.Series([durations[k] for k in timed]))
    return Parsed(table, "ncu", _join(note, "ncu serializes and replays kernels: times are per isolated launch"))


# ----------------------------------------------------------------------------- nsys
def _parse_nsys(path: Path, head: Head) -> Parsed:
    columns, rows = _csv_table(path, head, stop_at_blank=True)
    i_name = columns.find("Name")
    i_total, unit = columns.match(r"total time(?:\s*\((\w+)\))?")
    factor = _unit_factor(unit or "ns", "Total Time")
    i_calls = columns.match(r"instances|calls|count")[0]
    i_min = (columns.match(r"min(?:imum)?(?:\s*\(\w+\))?", required=False) or (None,))[0]
    i_max = (columns.match(r"max(?:imum)?(?:\s*\(\w+\))?", required=False) or (None,))[0]
    rows, note = _complete_rows(rows, 1 + max(i for i in (i_name, i_total, i_calls, i_min, i_max) if i is not None))
    records = {
        "name": [f[i_name] for _, f in rows],
        "calls": [_number(f[i_calls], "Instances", n) for n, f in rows],
        "total_ns": [_number(f[i_total], "Total Time", n) * factor for n, f in rows],
        "min_ns": [_number(f[i_min], "Min", n) * factor if i_min is not None else math.nan for n, f in rows],
        "max_ns": [_number(f[i_max], "Max", n) * factor if i_max is not None else math.nan for n, f in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "nsys-kern-sum", note)


def _parse_nsys_trace(path: Path, head: Head) -> Parsed:
    columns, rows = _csv_table(path, head, stop_at_blank=True)
    i_name = columns.find("Name")
    i_dur, unit = columns.match(r"duration\s*\((\w+)\)")
    factor = _unit_factor(unit, "Duration")
    rows, note = _complete_rows(rows, 1 + max(i_name, i_dur))
    names = pd.Series([f[i_name] for _, f in rows], dtype=object)
    durations = pd.Series([_number(f[i_dur], "Duration", n) * factor for n, f in rows], dtype=float)
    valid = durations.notna()
    return Parsed(table_from_durations(names[valid], durations[valid]), "nsys-gpu-trace", note)


# ----------------------------------------------------------------------------- rocpd summary (csv + console)
def _parse_rocpd_summary(path: Path, head: Head) -> Parsed:
    columns, rows = _csv_table(path, head)
    i_name = columns.find("Name")
    i_calls = columns.find("Calls")
    i_total, unit = columns.match(r"duration \((\w+)\)")
    factor = _unit_factor(unit, "DURATION")
    i_min = (columns.match(r"min \((\w+)\)", required=False) or (None,))[0]
    i_max = (columns.match(r"max \((\w+)\)", required=False) or (None,))[0]
    rows, note = _complete_rows(rows, 1 + max(i for i in (i_name, i_calls, i_total, i_min, i_max) if i is not None))
    records = {
        "name": [f[i_name] for _, f in rows],
        "calls": [_number(f[i_calls], "Calls", n) for n, f in rows],
        "total_ns": [_number(f[i_total], "DURATION", n) * factor for n, f in rows],
        "min_ns": [_number(f[i_min], "MIN", n) * factor if i_min is not None else math.nan for n, f in rows],
        "max_ns": [_number(f[i_max], "MAX", n) * factor if i_max is not None else math.nan for n, f in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "rocpd-summary", note)


_CONSOLE_NUMBERS = 7  # Calls, DURATION, AVERAGE, PERCENT, MIN, MAX, STD_DEV


def _parse_rocpd_console(path: Path, head: Head) -> Parsed:
    """`rocpd summary` console text: a pandas-printed table; numbers are the last 7 tokens."""
    lines = _read_text(path, head).split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("KERNELS_SUMMARY")), None)
    if start is None:
        raise FormatError("no KERNELS_SUMMARY section")
    by_rank = "BY_RANK" in lines[start]
    header = lines[start + 1] if start + 1 < len(lines) else ""
    m = re.search(r"DURATION \((\w+)\)", header)
    if "Name" not in header or not m:
        raise FormatError("KERNELS_SUMMARY without its Name/Calls/DURATION header line")
    factor = _unit_factor(m.group(1), "DURATION")
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
        records["calls"].append(_number(numbers[0], "Calls", line_no))
        records["total_ns"].append(_number(numbers[1], "DURATION", line_no) * factor)
        records["min_ns"].append(_number(numbers[4], "MIN", line_no) * factor)
        records["max_ns"].append(_number(numbers[5], "MAX", line_no) * factor)
    note = "names are re-spaced from console text; prefer `rocpd summary --format csv`"
    if abbreviated:
        note += "; pandas abbreviated the console table (\"...\"): some kernels are missing"
    return Parsed(build_table(pd.DataFrame(records)), "rocpd-summary-console", note)


# ----------------------------------------------------------------------------- rocprofv3 -S text
def _parse_rocprofv3_summary(path: Path, head: Head) -> Parsed:
    """`rocprofv3 -S` tables: the KERNEL_DISPATCH section, else kernel rows of the combined one."""
    lines = _read_text(path, head).split("\n")
    sections: dict[str, list[tuple[int, dict[str, str]]]] = {}
    current = None
    header: list[str] | None = None
    for line_no, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("ROCPROFV3 ") and s.endswith("SUMMARY:"):
            current, header = s[len("ROCPROFV3 ") : -len("SUMMARY:")].strip() or "ALL", None
            sections[current] = []
            continue
        if current is None or not s.startswith("|") or set(s) <= set("|- "):
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if header is None:
            header = [c.upper() for c in cells]
            continue
        extra = len(cells) - len(header)
        if extra < 0:
            raise FormatError(f"line {line_no}: {len(cells)} cells, the header has {len(header)}")
        cells = ["|".join(cells[: extra + 1])] + cells[extra + 1 :]  # a '|' inside a kernel name
        sections[current].append((line_no, dict(zip(header, cells))))
    rows = sections.get("KERNEL_DISPATCH") or [
        r for section in sections.values() for r in section if r[1].get("DOMAIN") == "KERNEL_DISPATCH"
    ]
    if not rows:
        raise FormatError("rocprofv3 summary has no KERNEL_DISPATCH rows (was --kernel-trace on?)")
    records = {"name": [], "calls": [], "total_ns": [], "min_ns": [], "max_ns": []}
    for line_no, row in rows:
        unit_key = next((k for k in row if k.startswith("DURATION")), None)
        if unit_key is None or "NAME" not in row or "CALLS" not in row:
            raise FormatError(f"line {line_no}: summary table without NAME/CALLS/DURATION columns")
        m = re.search(r"\((\w+)\)", unit_key)
        factor = _unit_factor(m.group(1) if m else "nsec", "DURATION")
        min_key = next((k for k in row if k.startswith("MIN")), None)
        max_key = next((k for k in row if k.startswith("MAX")), None)
        records["name"].append(row["NAME"])
        records["calls"].append(_number(row["CALLS"], "CALLS", line_no))
        records["total_ns"].append(_number(row[unit_key], "DURATION", line_no) * factor)
        records["min_ns"].append(_number(row[min_key], "MIN", line_no) * factor if min_key else math.nan)
        records["max_ns"].append(_number(row[max_key], "MAX", line_no) * factor if max_key else math.nan)
    return Parsed(build_table(pd.DataFrame(records)), "rocprofv3-summary", None)


# ----------------------------------------------------------------------------- rocprof-sys
#: Host-side regions that share rocprof-sys' wall_clock table with the GPU kernels.
HOST_REGION = re.compile(
    r"(?:main|hip[A-Z_]\w*|__hip\w*|hsa_\w*|roctx\w*|rccl\w*|nccl\w*|MPI_\w*|ompt_\w*|omp_\w*|"
    r"pthread_\w*|start_thread|python\d*(?:\.\d+)?|Py\w*|_Py\w*)(?:\s.*)?"
)
_LABEL_PREFIX = re.compile(r"^\|?\d+>>>\s*(?:\|_)?")
_HOST_NOTE = "rocprof-sys wall_clock: totals per label over all threads; host regions (main, hip*/hsa* API, ompt*, pthread*) left out"


def _clean_label(label: str) -> str:
    return _LABEL_PREFIX.sub("", label.strip()).strip()


def _wall_clock_table(records: dict[str, list[Any]], fmt: str, skipped_host: int) -> Parsed:
    df = pd.DataFrame(records)
    if df.empty:
        detail = f" ({skipped_host} host regions only)" if skipped_host else ""
        raise FormatError(f"rocprof-sys wall_clock has no GPU kernel entries{detail}")
    return Parsed(build_table(df), fmt, _HOST_NOTE)


def _parse_rocprof_sys_text(path: Path, head: Head) -> Parsed:
    lines = _read_text(path, head).split("\n")
    header = None
    records: dict[str, list[Any]] = {"name": [], "calls": [], "total_ns": [], "min_ns": [], "max_ns": []}
    skipped_host = 0
    for line_no, line in enumerate(lines, 1):
        s = line.strip()
        if not s.startswith("|") or set(s) <= set("|- "):
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if header is None:
            if "LABEL" in cells and "COUNT" in cells:
                header = [c.upper() for c in cells]
            continue
        if len(cells) < len(header):
            continue  # a title row such as "REAL-CLOCK TIMER (I.E. WALL-CLOCK TIMER)"
        label = "|".join(cells[: len(cells) - len(header) + 1])
        row = dict(zip(header[1:], cells[len(cells) - len(header) + 1 :]))
        name = _clean_label(label)
        if HOST_REGION.fullmatch(name):
            skipped_host += 1
            continue
        factor = _unit_factor(row.get("UNITS", "sec"), f"line {line_no}")
        records["name"].append(name)
        records["calls"].append(_number(row.get("COUNT", ""), "COUNT", line_no))
        records["total_ns"].append(_number(row.get("SUM", ""), "SUM", line_no) * factor)
        records["min_ns"].append(_number(row.get("MIN", ""), "MIN", line_no) * factor)
        records["max_ns"].append(_number(row.get("MAX", ""), "MAX", line_no) * factor)
    if header is None:
        raise FormatError("no LABEL/COUNT header in the wall_clock table")
    return _wall_clock_table(records, "rocprof-sys-wall-clock", skipped_host)


def _parse_rocprof_sys_json(path: Path, data: dict[str, Any]) -> Parsed:
    metric = data["timemory"].get("wall_clock") if isinstance(data.get("timemory"), dict) else None
    if not isinstance(metric, dict):
        raise FormatError("timemory JSON without a wall_clock metric")
    factor = _unit_factor(str(metric.get("unit_repr", "sec")), "unit_repr")
    records: dict[str, list[Any]] = {"name": [], "calls": [], "total_ns": [], "min_ns": [], "max_ns": []}
    skipped_host = 0
    for rank in _list(metric.get("ranks")):
        for node in _list(rank.get("graph") if isinstance(rank, dict) else None):
            if not isinstance(node, dict) or not isinstance(node.get("prefix"), str):
                continue
            name = _clean_label(node["prefix"])
            if HOST_REGION.fullmatch(name):
                skipped_host += 1
                continue
            stats = node.get("stats") if isinstance(node.get("stats"), dict) else {}
            entry = node.get("entry") if isinstance(node.get("entry"), dict) else {}
            records["name"].append(name)
            records["calls"].append(_json_number(stats.get("count", entry.get("laps"))))
            records["total_ns"].append(_json_number(stats.get("sum", entry.get("repr_data"))) * factor)
            records["min_ns"].append(_json_number(stats.get("min")) * factor)
            records["max_ns"].append(_json_number(stats.get("max")) * factor)
    return _wall_clock_table(records, "rocprof-sys-json", skipped_host)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _json_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value) if math.isfinite(value) else math.nan


def _parse_perfetto(path: Path, head: Head) -> Parsed:
    """rocprof-sys Perfetto trace through the optional `perfetto` package's trace processor.

    Kernel dispatch slices carry the category "rocm_kernel_dispatch" (rocprof-sys source).
    """
    try:
        from perfetto.trace_processor import TraceProcessor
    except ImportError:
        raise FormatError(
            "a Perfetto protobuf trace; reading it needs `pip install perfetto` (and its trace_processor "
            "download); open it in https://ui.perfetto.dev or use wall_clock-<pid>.json"
        ) from None
    try:
        processor = TraceProcessor(trace=str(path))
        try:
            rows = list(
                processor.query(
                    "SELECT name, COUNT(*) AS calls, SUM(dur) AS total_ns, MIN(dur) AS min_ns, MAX(dur) AS max_ns "
                    "FROM slice WHERE category = 'rocm_kernel_dispatch' GROUP BY name"
                )
            )
        finally:
            processor.close()
    except Exception as exc:  # the trace processor raises its own types (and needs a binary download)
        raise FormatError(f"perfetto trace processor failed: {_one_line(exc)}") from None
    records = {
        "name": [r.name for r in rows],
        "calls": [r.calls for r in rows],
        "total_ns": [r.total_ns for r in rows],
        "min_ns": [r.min_ns for r in rows],
        "max_ns": [r.max_ns for r in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "rocprof-sys-perfetto", None)


# ----------------------------------------------------------------------------- JSON: torch trace / timemory
def _parse_json(path: Path, head: Head) -> Parsed:
    text = _read_text(path, head)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"not valid JSON (truncated?): {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if isinstance(data, dict) and "timemory" in data:
        return _parse_rocprof_sys_json(path, data)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise FormatError("JSON without traceEvents (not a PyTorch/Chrome trace) or timemory data")
    return _parse_torch_events(events)


def _parse_torch_events(events: list[Any]) -> Parsed:
    """Device kernels from `cat == "kernel"` events (µs); CPU operators by self time otherwise."""
    kernels_name: list[str] = []
    kernels_dur: list[float] = []
    ops: list[tuple[Any, Any, float, float, str]] = []
    wanted = {"kernel": True, "Kernel": True, "cpu_op": False, "Operator": False, "operator": False}
    for e in events:  # the hot loop of a million-event trace: cheapest test first
        if type(e) is not dict:
            continue
        cat = e.get("cat")
        is_kernel = wanted.get(cat) if type(cat) is str else None
        if is_kernel is None or e.get("ph") != "X":
            continue
        name, dur = e.get("name"), _json_number(e.get("dur"))
        if not isinstance(name, str) or not dur >= 0:
            continue
        if is_kernel:
            kernels_name.append(name)
            kernels_dur.append(dur * 1e3)
        else:
            ts = _json_number(e.get("ts"))
            if not math.isnan(ts):
                ops.append((_hashable(e.get("pid")), _hashable(e.get("tid")), ts, dur, name))
    if kernels_name:
        return Parsed(table_from_durations(pd.Series(kernels_name), pd.Series(kernels_dur)), "pytorch-trace", None)
    if not ops:
        raise FormatError("trace has no kernel or cpu_op events")
    names, self_ns = _self_times(ops)
    return Parsed(
        table_from_durations(pd.Series(names), pd.Series(self_ns)),
        "pytorch-trace",
        "CPU run: no device kernels; table shows operators by self CPU time",
    )


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float)) or value is None else repr(value)


def _self_times(ops: list[tuple[Any, Any, float, float, str]]) -> tuple[list[str], list[float]]:
    """Self time of each op = its duration minus its directly nested ops, per thread."""
    ops.sort(key=lambda o: (str(o[0]), str(o[1]), o[2], -o[3]))
    names: list[str] = []
    self_ns: list[float] = []
    stack: list[tuple[float, int]] = []  # (end, index into self_ns)
    thread = None
    for pid, tid, ts, dur, name in ops:
        if (pid, tid) != thread:
            stack, thread = [], (pid, tid)
        while stack and stack[-1][0] <= ts:
            stack.pop()
        if stack:
            parent = stack[-1][1]
            self_ns[parent] -= dur * 1e3
        names.append(name)
        self_ns.append(dur * 1e3)
        stack.append((ts + dur, len(self_ns) - 1))
    return names, [max(0.0, v) for v in self_ns]


# ----------------------------------------------------------------------------- PyTorch operators.csv
def _parse_torch_operators(path: Path, head: Head) -> Parsed:
    """tinylab's operators.csv: kernel rows (device_type CUDA), else CPU operators by self time."""
    columns, rows = _csv_table(path, head)
    i_key = columns.find("key")
    i_count = columns.find("count")
    i_self_cpu = columns.find("self_cpu_time_total")
    i_self_dev = columns.find("self_device_time_total", "self_cuda_time_total", required=False)
    i_type = columns.find("device_type", required=False)
    i_annot = columns.find("is_user_annotation", required=False)
    width = 1 + max(i for i in (i_key, i_count, i_self_cpu, i_self_dev, i_type, i_annot) if i is not None)
    rows, note = _complete_rows(rows, width)

    def on_device(f: list[str]) -> bool:
        return i_type is not None and "cuda" in f[i_type].lower()

    annotated = {f[i_key] for _, f in rows if i_annot is not None and f[i_annot].strip().lower() == "true"}
    cpu_names = {f[i_key] for _, f in rows if not on_device(f)}
    # GPU-side user annotations (record_function spans) come as device rows; without the
    # is_user_annotation column they are told apart by also having a CPU row of the same name.
    device = [(n, f) for n, f in rows if on_device(f) and f[i_key] not in annotated and f[i_key] not in cpu_names]
    if device and i_self_dev is not None:
        records = {
            "name": [f[i_key] for _, f in device],
            "calls": [_number(f[i_count], "count", n) for n, f in device],
            "total_ns": [_number(f[i_self_dev], "self_device_time_total", n) * 1e3 for n, f in device],
        }
        return Parsed(build_table(pd.DataFrame(records)), "pytorch-operators", note)
    cpu = [(n, f) for n, f in rows if not on_device(f) and f[i_key] not in annotated and not f[i_key].startswith("ProfilerStep")]
    records = {
        "name": [f[i_key] for _, f in cpu],
        "calls": [_number(f[i_count], "count", n) for n, f in cpu],
        "total_ns": [_number(f[i_self_cpu], "self_cpu_time_total", n) * 1e3 for n, f in cpu],
    }
    return Parsed(
        build_table(pd.DataFrame(records)),
        "pytorch-operators",
        _join(note, "CPU run: no device kernels; table shows operators by self CPU time"),
    )


# ----------------------------------------------------------------------------- tinylab kernels.csv
def _parse_tinylab(path: Path, head: Head) -> Parsed:
    columns, rows = _csv_table(path, head)
    idx = {c: columns.find(c, required=c in ("name", "calls", "total_ns")) for c in ("name", "calls", "total_ns", "min_ns", "max_ns")}
    rows, note = _complete_rows(rows, 1 + max(i for i in idx.values() if i is not None))
    records: dict[str, list[Any]] = {"name": [f[idx["name"]] for _, f in rows]}
    for column in ("calls", "total_ns", "min_ns", "max_ns"):
        i = idx[column]
        records[column] = [_number(f[i], column, n) if i is not None else math.nan for n, f in rows]
    return Parsed(build_table(pd.DataFrame(records)), "tinylab", note)


# ----------------------------------------------------------------------------- rocpd SQLite
def _parse_rocpd(path: Path, head: Head) -> Parsed:
    """ROCm 7 rocpd database: the `kernels` view, else the dispatch and symbol tables joined."""
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise FormatError(f"cannot open SQLite database: {exc}") from None
    try:
        objects = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        df, note = _rocpd_kernels(con, objects)
    except sqlite3.DatabaseError as exc:
        raise FormatError(f"corrupt or unreadable SQLite database: {exc}") from None
    finally:
        con.close()
    if df.empty:
        raise FormatError("rocpd database has no kernel dispatches (was --kernel-trace on?)")
    return Parsed(build_table(df), "rocpd", note)


_AGG = "COUNT(*) AS calls, SUM({d}) AS total_ns, MIN({d}) AS min_ns, MAX({d}) AS max_ns"


def _rocpd_kernels(con: sqlite3.Connection, objects: set[str]) -> tuple[pd.DataFrame, str | None]:
    def frame(sql: str) -> pd.DataFrame:
        rows = con.execute(sql).fetchall()
        return pd.DataFrame(rows, columns=["name", "calls", "total_ns", "min_ns", "max_ns"])

    if "kernels" in objects:
        cols = {row[1].lower() for row in con.execute("PRAGMA table_info(kernels)")}
        if {"name"} <= cols and ("duration" in cols or {"start", "end"} <= cols):
            d = "duration" if "duration" in cols else '("end" - start)'
            df = frame(f"SELECT name, {_AGG.format(d=d)} FROM kernels GROUP BY name")
            if not df.empty:
                return df, None
    pairs = []
    if {"rocpd_kernel_dispatch", "rocpd_info_kernel_symbol"} <= objects:
        pairs.append(("rocpd_kernel_dispatch", "rocpd_info_kernel_symbol"))
    else:  # un-merged per-process tables carry a UUID suffix
        for name in sorted(objects):
            if name.startswith("rocpd_kernel_dispatch_"):
                symbols = "rocpd_info_kernel_symbol_" + name[len("rocpd_kernel_dispatch_") :]
                if symbols in objects:
                    pairs.append((name, symbols))
    if not pairs:
        raise FormatError("SQLite database without rocpd kernel data (no `kernels` view or rocpd_kernel_dispatch table)")
    parts = []
    for dispatch, symbols in pairs:
        sym_cols = {row[1].lower() for row in con.execute(f'PRAGMA table_info("{symbols}")')}
        label = "COALESCE(s.display_name, s.kernel_name)" if "display_name" in sym_cols else "s.kernel_name"
        parts.append(
            f'SELECT {label} AS name, d."end" - d.start AS dur FROM "{dispatch}" d '
            f'JOIN "{symbols}" s ON d.kernel_id = s.id'
        )
    sql = f"SELECT name, {_AGG.format(d='dur')} FROM ({' UNION ALL '.join(parts)}) GROUP BY name"
    return frame(sql), "read from rocpd_kernel_dispatch + rocpd_info_kernel_symbol (the kernels view was empty or missing)"


# ----------------------------------------------------------------------------- dispatch table
def _trace(fmt: str) -> Callable[[Path, Head], Parsed]:
    return lambda path, head: _parse_dispatch_trace(path, head, fmt)


_PARSERS: dict[str, Callable[[Path, Head], Parsed]] = {
    "rocprofv3-kernel-stats": _parse_stats,
    "rocprof-v1-stats": _parse_stats,
    "rocprofv3-kernel-trace": _trace("rocprofv3-kernel-trace"),
    "rocpd-csv": _trace("rocpd-csv"),
    "rocprof-compute": _trace("rocprof-compute"),
    "rocprofv3-counter-collection": _trace("rocprofv3-counter-collection"),
    "rocprof-compute-top": _parse_compute_top,
    "ncu": _parse_ncu,
    "nsys-kern-sum": _parse_nsys,
    "nsys-gpu-trace": _parse_nsys_trace,
    "rocpd-summary": _parse_rocpd_summary,
    "rocpd-summary-console": _parse_rocpd_console,
    "rocprofv3-summary": _parse_rocprofv3_summary,
    "rocprof-sys-wall-clock": _parse_rocprof_sys_text,
    "rocprof-sys-perfetto": _parse_perfetto,
    "json": _parse_json,
    "pytorch-operators": _parse_torch_operators,
    "tinylab": _parse_tinylab,
    "rocpd": _parse_rocpd,
}

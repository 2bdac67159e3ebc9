"""Which format a file is, from its bytes: magic numbers, JSON keys, the CSV header line.

Never from the file name: tools rename their outputs between versions and users rename files.
Columns are matched without regard to case because every tool has re-capitalized its columns
across versions (docs/formats.md section 0). Also the two helpers that find a table's header line.
"""

from __future__ import annotations

import csv
import gzip
import re
import zlib
from pathlib import Path

from tinylab.analysis.formats._base import (
    EXPECTED,
    GZIP_MAGIC,
    SNIFF_BYTES,
    SQLITE_MAGIC,
    Columns,
    FormatError,
    Head,
    read_text,
)
from tinylab.core.errors import UserError
from tinylab.core.safeio import open_regular

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


def sniff(path: Path) -> tuple[str, "Head"]:
    """(format, head) of one file, from its first bytes."""
    try:
        with open_regular(path, follow_links=True) as fh:  # a FIFO or a device would block or never end
            raw = fh.read(SNIFF_BYTES)
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise UserError(f"{path}: file is empty")
    if raw.startswith(SQLITE_MAGIC):
        return "rocpd", Head(raw, None)
    if raw.startswith(GZIP_MAGIC):
        try:
            with open_regular(path, follow_links=True) as fh, gzip.open(fh, "rb") as gz:
                inner = gz.read(SNIFF_BYTES)
        except (OSError, EOFError, zlib.error) as exc:
            raise UserError(f"{path}: corrupt or truncated gzip data ({exc})") from None
        return sniff_text(path, Head(inner, "gzip"))
    if looks_like_perfetto(raw):
        return "rocprof-sys-perfetto", Head(raw, None)
    return sniff_text(path, Head(raw, None))


def looks_like_perfetto(raw: bytes) -> bool:
    """Perfetto protobuf traces start with a TracePacket field tag (0x0a) and are not UTF-8 text."""
    if raw[:1] != b"\x0a":
        return False
    try:
        raw[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def sniff_text(path: Path, head: Head) -> tuple[str, Head]:
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


def json_kind(path: Path, head: Head) -> str | None:
    """Cheap JSON kind from the head, for folder scans (the full parse decides for single files)."""
    text = head.raw.decode("utf-8", errors="replace")
    if '"traceEvents"' in text or '"ph"' in text:
        return "pytorch-trace"
    if '"timemory"' in text:
        return "rocprof-sys-json"
    if text.lstrip("\ufeff \t\r\n").startswith("[") and '"frame"' in text and '"metrics"' in text:
        return "proton"
    return None


def csv_table(path: Path, head: Head, stop_at_blank: bool = False) -> tuple[Columns, list[tuple[int, list[str]]]]:
    """Header and rows of the first kernel table in a (small) CSV file.

    Returns (columns, [(line number, fields)]). Lines before the header (==PROF==
    preambles, program output) are skipped; so are lines starting with "==" after it.
    """
    text = read_text(path, head)
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


def header_offset(path: Path, head: Head) -> tuple[int, list[str], list[str]]:
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

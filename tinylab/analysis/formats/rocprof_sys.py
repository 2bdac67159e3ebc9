"""rocprof-sys (formerly omnitrace): wall_clock-<pid>.txt / .json timemory tables and its Perfetto trace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from tinylab.analysis.formats._base import (
    FormatError,
    Head,
    Parsed,
    as_list,
    json_number,
    number,
    one_line,
    read_text,
    unit_factor,
)
from tinylab.analysis.kernel_table import build_table
from tinylab.rocm_releases import SYS_KERNEL_CATEGORIES

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


def parse_wall_clock_text(path: Path, head: Head) -> Parsed:
    lines = read_text(path, head).split("\n")
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
        factor = unit_factor(row.get("UNITS", "sec"), f"line {line_no}")
        records["name"].append(name)
        records["calls"].append(number(row.get("COUNT", ""), "COUNT", line_no))
        records["total_ns"].append(number(row.get("SUM", ""), "SUM", line_no) * factor)
        records["min_ns"].append(number(row.get("MIN", ""), "MIN", line_no) * factor)
        records["max_ns"].append(number(row.get("MAX", ""), "MAX", line_no) * factor)
    if header is None:
        raise FormatError("no LABEL/COUNT header in the wall_clock table")
    return _wall_clock_table(records, "rocprof-sys-wall-clock", skipped_host)


def parse_timemory(path: Path, data: dict[str, Any]) -> Parsed:
    metric = data["timemory"].get("wall_clock") if isinstance(data.get("timemory"), dict) else None
    if not isinstance(metric, dict):
        raise FormatError("timemory JSON without a wall_clock metric")
    factor = unit_factor(str(metric.get("unit_repr", "sec")), "unit_repr")
    records: dict[str, list[Any]] = {"name": [], "calls": [], "total_ns": [], "min_ns": [], "max_ns": []}
    skipped_host = 0
    for rank in as_list(metric.get("ranks")):
        for node in as_list(rank.get("graph") if isinstance(rank, dict) else None):
            if not isinstance(node, dict) or not isinstance(node.get("prefix"), str):
                continue
            name = _clean_label(node["prefix"])
            if HOST_REGION.fullmatch(name):
                skipped_host += 1
                continue
            stats = node.get("stats") if isinstance(node.get("stats"), dict) else {}
            entry = node.get("entry") if isinstance(node.get("entry"), dict) else {}
            records["name"].append(name)
            records["calls"].append(json_number(stats.get("count", entry.get("laps"))))
            records["total_ns"].append(json_number(stats.get("sum", entry.get("repr_data"))) * factor)
            records["min_ns"].append(json_number(stats.get("min")) * factor)
            records["max_ns"].append(json_number(stats.get("max")) * factor)
    return _wall_clock_table(records, "rocprof-sys-json", skipped_host)


def parse_perfetto(path: Path, head: Head) -> Parsed:
    """rocprof-sys Perfetto trace through the optional `perfetto` package's trace processor.

    Kernel dispatch slices carry the category "device_hip" (ROCm 6.2, 6.3) or "rocm_kernel_dispatch"
    (6.4+): every category a release uses is queried, so the trace's release need not be known.
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
                    f"FROM slice WHERE category IN ({', '.join(repr(c) for c in SYS_KERNEL_CATEGORIES)}) GROUP BY name"
                )
            )
        finally:
            processor.close()
    except Exception as exc:  # the trace processor raises its own types (and needs a binary download)
        raise FormatError(f"perfetto trace processor failed: {one_line(exc)}") from None
    records = {
        "name": [r.name for r in rows],
        "calls": [r.calls for r in rows],
        "total_ns": [r.total_ns for r in rows],
        "min_ns": [r.min_ns for r in rows],
        "max_ns": [r.max_ns for r in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "rocprof-sys-perfetto", None)

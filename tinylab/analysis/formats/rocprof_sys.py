"""rocprof-sys (formerly omnitrace): wall_clock-<pid>.txt / .json timemory tables and its Perfetto trace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
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
from tinylab.core.kernel_table import build_table
from tinylab.core.markers import PHASES, parse_step_range
from tinylab.core.rocm_releases import SYS_KERNEL_CATEGORIES

#: Host-side regions that share rocprof-sys' wall_clock table with the GPU kernels.
HOST_REGION = re.compile(
    r"(?:main|hip[A-Z_]\w*|__hip\w*|hsa_\w*|roctx\w*|rccl\w*|nccl\w*|MPI_\w*|ompt_\w*|omp_\w*|"
    r"pthread_\w*|start_thread|python\d*(?:\.\d+)?|Py\w*|_Py\w*)(?:\s.*)?"
)


_LABEL_PREFIX = re.compile(r"^\|?\d+>>>\s*(?:\|_)?")


_HOST_NOTE = ("rocprof-sys wall_clock: totals per label over all threads; host regions (main, hip*/hsa* API, ompt*, "
              "pthread*, the trainer's step and phase ranges) left out")


def _clean_label(label: str) -> str:
    return _LABEL_PREFIX.sub("", label.strip()).strip()


def _host(name: str) -> bool:
    """A host region, not a GPU kernel: the runtime's own, or the trainer's step and phase ranges
    (roctx ranges are timemory regions too: rocprof-sys library/rocprofiler-sdk.cpp, RS@64cf36def :283)."""
    return bool(HOST_REGION.fullmatch(name)) or name in PHASES or parse_step_range(name) is not None


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
        if _host(name):
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
            if _host(name):
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


def _query(path: Path, sql: str) -> list[Any]:
    """Rows of a SQL query over a Perfetto trace, through the optional `perfetto` package's trace
    processor (FormatError without it: the trace is then for ui.perfetto.dev only)."""
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
            return list(processor.query(sql))
        finally:
            processor.close()
    except Exception as exc:  # the trace processor raises its own types (and needs a binary download)
        raise FormatError(f"perfetto trace processor failed: {one_line(exc)}") from None


_KERNEL_CATEGORIES = ", ".join(repr(c) for c in SYS_KERNEL_CATEGORIES)


def parse_perfetto(path: Path, head: Head) -> Parsed:
    """rocprof-sys Perfetto trace through the optional `perfetto` package's trace processor.

    Kernel dispatch slices carry the category "device_hip" (ROCm 6.2, 6.3) or "rocm_kernel_dispatch"
    (6.4+): every category a release uses is queried, so the trace's release need not be known.
    """
    rows = _query(path, "SELECT name, COUNT(*) AS calls, SUM(dur) AS total_ns, MIN(dur) AS min_ns, MAX(dur) AS max_ns "
                        f"FROM slice WHERE category IN ({_KERNEL_CATEGORIES}) GROUP BY name")
    records = {
        "name": [r.name for r in rows],
        "calls": [r.calls for r in rows],
        "total_ns": [r.total_ns for r in rows],
        "min_ns": [r.min_ns for r in rows],
        "max_ns": [r.max_ns for r in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "rocprof-sys-perfetto", None)


def perfetto_steps(path: Path) -> tuple[tuple[pd.Series, np.ndarray, np.ndarray], list[tuple[str, int, int]]]:
    """The kernel slices (names, starts, ends) and every range named like a tinylab step of a rocprof-sys
    Perfetto trace: all slices share the trace's clock (ns). The step ranges are the trainer's roctx
    ranges, found by name (their category differs between releases); FormatError without the package."""
    rows = _query(path, "SELECT name, ts, dur, category IN ({0}) AS kernel FROM slice WHERE category IN ({0}) "
                        "OR name GLOB '*tinylab*step *'".format(_KERNEL_CATEGORIES))
    kernels = [r for r in rows if r.kernel]
    starts = np.array([r.ts for r in kernels], dtype=np.float64)
    ends = starts + np.array([r.dur for r in kernels], dtype=np.float64)
    ranges = [(r.name, r.ts, r.ts + r.dur) for r in rows if not r.kernel and r.dur is not None and r.dur >= 0]
    return (pd.Series([r.name for r in kernels], dtype=object), starts, ends), ranges

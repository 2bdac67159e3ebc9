"""Readers for every native profiler output tinylab understands, chosen by content.

One module per tool (rocprofv3, rocpd, rocprof_compute, rocprof_sys, ncu, nsys, pytorch, proton,
kernels_csv; dispatch.py for the per-dispatch CSVs several tools write), detection in detect.py,
and here the one registry: format name -> description, reader, and whether several files of it in
one folder are processes of one run (their tables add up).

Every reader returns a `Parsed` (normalized kernel table + format name + note) or raises
UserError with one line naming the file and the problem.
"""

from __future__ import annotations

import contextlib
import csv
import json
import sqlite3
import stat
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd

from tinylab.analysis.formats import (
    kernels_csv,
    ncu,
    nsys,
    proton,
    pytorch,
    rocpd,
    rocprof_compute,
    rocprof_sys,
    rocprofv3,
    trace_events,
)
from tinylab.analysis.formats._base import (
    DEADLINE,
    EXPECTED,
    Bounded,
    FormatError,
    Head,
    Parsed,
    one_line,
    read_text,
    reporting,  # noqa: F401 - the progress hook readers of this package take
)
from tinylab.analysis.formats.detect import json_kind, sniff
from tinylab.analysis.formats.dispatch import parse_dispatch_trace
from tinylab.analysis.formats.trace_events import NotATrace, TraceEvents
from tinylab.core.kernel_table import build_table
from tinylab.core.errors import UserError
from tinylab.core.safeio import is_plain_dir, is_plain_file


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    read: Callable[[Path, Head], Parsed]
    #: several files of it in one folder are separate processes of one run: their tables add up
    mergeable: bool = False


def _trace(fmt: str) -> Callable[[Path, Head], Parsed]:
    return lambda path, head: parse_dispatch_trace(path, head, fmt)


def _parse_json(path: Path, head: Head) -> Parsed:
    """A PyTorch/Chrome trace, a rocprof-sys timemory JSON or a proton tree: which one, the content
    decides. Of a trace, only the events its table can be made of are read: the kernels of one
    that lists a device (again with its CPU operators in the rare case it holds no kernel), the
    kernels and CPU operators of one that does not (a CPU run's are operators and Python calls)."""
    both = pytorch.KERNELS | pytorch.OPERATORS
    found = _trace_or_document(path, head, pytorch.KERNELS if pytorch.lists_devices(head.raw) else both)
    if isinstance(found, TraceEvents) and found.only == pytorch.KERNELS and not found.named().any():
        found = _trace_or_document(path, head, both)
    if isinstance(found, TraceEvents):
        return pytorch.parse_trace(found)
    if isinstance(found, dict) and "timemory" in found:
        return rocprof_sys.parse_timemory(path, found)
    if proton.is_hatchet(found):
        return proton.parse_data(path, found)
    raise FormatError("JSON without traceEvents (not a PyTorch/Chrome trace) or timemory data")


#: The most JSON read whole (json.loads makes a Python object of every value: several times the
#: text in memory); traces are streamed instead.
JSON_LIMIT = 64 << 20


def _trace_or_document(path: Path, head: Head, only: frozenset[str] | None = None) -> Any:
    """A trace's events as columns (streamed: trace_events.py; `only`: of those categories), or a
    JSON document that is no trace (rocprof-sys timemory) read whole, as is a small trace that
    msgspec refuses and json takes (NaN literals: every event)."""
    refused = None
    try:
        if proton.HEAD.match(head.raw):  # a proton tree: a list of nodes, not of trace events
            raise NotATrace
        return trace_events.read_events(path, only)
    except NotATrace:
        pass
    except Bounded:
        raise
    except FormatError as exc:
        refused = exc
    try:
        data = json.loads(read_text(path, head, JSON_LIMIT))
    except Bounded:
        if refused is not None:  # too large to read whole: msgspec's word on it stands
            raise refused from None
        raise
    except json.JSONDecodeError as exc:
        raise FormatError(f"not valid JSON (truncated?): {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if proton.is_hatchet(data):  # a proton tree is a list too, but of no trace events
        return data
    try:
        return trace_events.from_objects(str(path), data)
    except NotATrace:
        return data


#: The one registry, best first: when a folder holds several formats, the first one present is read.
REGISTRY: tuple[Format, ...] = (
    Format("rocprofv3-kernel-stats", "rocprofv3 --stats *_kernel_stats.csv", rocprofv3.parse_stats, True),
    Format("rocpd", "rocprofv3 ROCm 7 rocpd SQLite database (*_results.db)", rocpd.parse_database, True),
    Format("rocprofv3-kernel-trace", "rocprofv3 --kernel-trace *_kernel_trace.csv", _trace("rocprofv3-kernel-trace"), True),
    Format("rocpd-csv", "rocpd convert -f csv out_kernel_trace.csv", _trace("rocpd-csv"), True),
    Format("rocprof-compute", "rocprof-compute workload (timestamps.csv / pmc_perf.csv)", _trace("rocprof-compute")),
    Format("rocprof-compute-top", "rocprof-compute analyze pmc_kernel_top.csv", rocprof_compute.parse_top),
    Format("nsys-kern-sum", "nsys stats --report cuda_gpu_kern_sum --format csv", nsys.parse_kern_sum),
    Format("nsys-gpu-trace", "nsys stats --report cuda_gpu_trace --format csv", nsys.parse_gpu_trace),
    Format("ncu", "Nsight Compute --csv (details or raw page)", ncu.parse),
    Format("pytorch-trace", "PyTorch profiler Chrome/Perfetto trace (.json / .json.gz)", _parse_json),
    Format("pytorch-operators", "tinylab operators.csv (PyTorch key_averages attributes)", pytorch.parse_operators),
    Format("proton", "Triton proton .hatchet tree (JSON)", proton.parse),
    Format("rocprof-sys-json", "rocprof-sys wall_clock-<pid>.json", _parse_json, True),
    Format("rocprof-sys-wall-clock", "rocprof-sys wall_clock-<pid>.txt", rocprof_sys.parse_wall_clock_text, True),
    Format("rocprof-sys-perfetto", "rocprof-sys perfetto-trace-<pid>.proto (needs the perfetto package)",
           rocprof_sys.parse_perfetto, True),
    Format("rocprofv3-summary", "rocprofv3 -S summary text", rocprofv3.parse_summary),
    Format("rocpd-summary", "rocpd summary --format csv kernels_summary.csv", rocpd.parse_summary_csv),
    Format("rocpd-summary-console", "rocpd summary console output", rocpd.parse_console),
    Format("rocprofv3-counter-collection", "rocprofv3 --pmc counter_collection.csv", _trace("rocprofv3-counter-collection")),
    Format("rocprof-v1-stats", "legacy rocprof --stats results.stats.csv", rocprofv3.parse_stats),
    Format("tinylab", "tinylab normalized kernels.csv", kernels_csv.parse),
)
FORMATS: dict[str, Format] = {f.name: f for f in REGISTRY}
_JSON = Format("json", "JSON (PyTorch trace, rocprof-sys timemory or proton tree)", _parse_json)


#: A rocprof-compute workload's kernel table, best first (see _load_folder).
WORKLOAD_TABLES = rocprof_compute.WORKLOAD_TABLES

#: A folder scan stops after this many files or seconds: `tinylab hotspots /` must end, and say why.
SCAN_FILES = 5000
SCAN_SECONDS = 15.0
#: One load, of a file or of a folder with everything parsed in it, ends within this budget:
#: readers that can run long (SQLite queries) stop at it, and a scan parses no file after it.
LOAD_SECONDS = 90.0


class Skipped(UserError):
    """A file one of the readers' bounds stopped (time, size, what a database may run): a folder
    scan notes it and reads on."""


def load(path: Path) -> Parsed:
    """Read a native output file or folder into the normalized table, within LOAD_SECONDS."""
    try:
        kind = path.stat().st_mode
    except FileNotFoundError:
        raise UserError(f"{path}: no such file or folder") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with _budget():
        if stat.S_ISDIR(kind):
            return _load_folder(path)
        fmt, head = sniff(path)
        return _parse_as(path, fmt, head)


def read_trace(path: Path) -> TraceEvents:
    """The events of a PyTorch profiler (Chrome) trace as columns, for every question asked of a
    trace (step anatomy, kernel table, advice): streamed within LOAD_SECONDS and the bounds of
    trace_events.py, and the last trace read is kept while its file stays the same, so that
    several questions cost one read. UserError naming the file."""
    try:
        info = path.stat()
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    key = (str(path.resolve()), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    with _LAST_LOCK:
        if _LAST and _LAST[0] == key:
            return _LAST[1]
    try:
        with _budget():
            fmt, head = sniff(path)
            if fmt != "json":
                raise FormatError(f"it is {FORMATS[fmt].description}")
            found = _trace_or_document(path, head)
    except Bounded as exc:
        raise UserError(f"{path}: {exc}") from None
    except FormatError as exc:
        raise UserError(f"{path}: not a readable JSON trace: {exc}") from None
    except (ValueError, OverflowError, UnicodeError, EOFError, zlib.error, RecursionError) as exc:
        raise UserError(f"{path}: not a readable JSON trace (truncated or corrupt?): {one_line(exc)}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {one_line(exc)}") from None
    if not isinstance(found, TraceEvents):
        raise UserError(f"{path}: no traceEvents: not a PyTorch profiler trace")
    with _LAST_LOCK:
        _LAST[:] = [key, found]
    return found


#: The last trace read_trace read: [key, TraceEvents] (workers of the lab call it from threads).
_LAST: list[Any] = []
_LAST_LOCK = threading.Lock()


@contextlib.contextmanager
def _budget() -> Iterator[None]:
    """The load's deadline (LOAD_SECONDS from now) unless an outer load set one."""
    token = DEADLINE.set(time.monotonic() + LOAD_SECONDS) if DEADLINE.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            DEADLINE.reset(token)


def _spent() -> bool:
    deadline = DEADLINE.get()
    return deadline is not None and time.monotonic() >= deadline


def _parse_as(path: Path, fmt: str, head: Head) -> Parsed:
    spec = FORMATS.get(fmt, _JSON)
    try:
        parsed = spec.read(path, head)
    except Bounded as exc:
        raise Skipped(f"{path}: {exc}") from None
    except FormatError as exc:
        raise UserError(f"{path}: {exc}") from None
    except UserError:
        raise
    except (ValueError, OverflowError, UnicodeError, csv.Error, sqlite3.Error, EOFError, zlib.error, RecursionError) as exc:
        raise UserError(f"{path}: cannot read as {spec.description}: {one_line(exc)}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {one_line(exc)}") from None
    if parsed.table.empty:
        raise UserError(f"{path}: {FORMATS[parsed.format].description} holds no kernel rows")
    return parsed


def _load_folder(folder: Path) -> Parsed:
    found: dict[str, list[tuple[Path, Head]]] = {}
    unreadable: list[Path] = []
    for path in _candidate_files(folder, unreadable):
        try:
            fmt, head = sniff(path)
        except UserError:
            continue
        if fmt == "json":
            fmt = json_kind(path, head)
            if fmt is None:
                continue
        found.setdefault(fmt, []).append((path, head))
    failures: list[str] = []
    skipped: list[str] = []  # stopped by a bound: said in the note of what is read instead
    for spec in REGISTRY:
        fmt = spec.name
        files = sorted(found.get(fmt, []), key=lambda item: str(item[0]))
        parsed: list[Parsed] = []
        paths: list[Path] = []
        for path, head in files:
            if _spent():
                raise UserError(f"{folder}: reading its profiler files took over {LOAD_SECONDS:.0f} s; stopped "
                                f"before {path.relative_to(folder)}" + (f" ({skipped[0]})" if skipped else ""))
            try:
                parsed.append(_parse_as(path, fmt, head))
                paths.append(path)
            except Skipped as exc:
                skipped.append(str(exc))
                failures.append(str(exc))
            except UserError as exc:  # e.g. hip_api_stats.csv shares the kernel_stats header
                failures.append(str(exc))
        if not parsed:
            continue
        if spec.mergeable and len(parsed) > 1:
            _check_one_output(folder, spec, paths)
            merged = pd.concat([p.table for p in parsed], ignore_index=True)
            notes = sorted({p.note for p in parsed if p.note})
            named = ", ".join(str(p.relative_to(folder)) for p in paths[:4]) + (", ..." if len(paths) > 4 else "")
            note = f"merged {len(parsed)} files (one per process: {named})" + ("; " + "; ".join(notes) if notes else "")
            return Parsed(build_table(merged), fmt,
                          "; ".join(filter(None, [note, _skipped(folder, unreadable), _bounded(skipped)])))
        # one run written several ways (ncu details + raw, rocprof-compute's per-pass files): of a
        # rocprof-compute workload its timing pass (timestamps.csv), else pmc_perf.csv, the join of
        # every pass, which rocprof-compute's own top-kernel table reads when there is no timing pass
        # (7.0's rocprofv3 backend: RS@64cf36def utils/file_io.py:120); never an SQ_*.csv, one
        # accumulation pass. Other formats: the file with the most GPU time.
        exact = sorted((WORKLOAD_TABLES.index(path.name), n) for n, path in enumerate(paths)
                       if path.name in WORKLOAD_TABLES)
        chosen, where = (parsed[exact[0][1]], paths[exact[0][1]]) if exact else max(
            zip(parsed, paths), key=lambda pp: (pp[0].table["total_ns"].sum(), pp[0].table["calls"].sum()))
        read = f"read {where.relative_to(folder)}" + (f" (of {len(parsed)} {fmt} files)" if len(parsed) > 1 else "")
        return Parsed(chosen.table, chosen.format,
                      "; ".join(filter(None, [read, chosen.note, _skipped(folder, unreadable), _bounded(skipped)])))
    detail = f"; e.g. {failures[0]}" if failures else ""
    if unreadable:
        detail += f"; {_skipped(folder, unreadable)}"
    raise UserError(f"{folder}: no supported profiler output found in this folder ({EXPECTED}){detail}")


def _output_root(scanned: Path, path: Path) -> Path:
    """The folder of the one profiler output `path` is a process's file of: its folder less the
    tools' per-process layout (rocprofv3's <host>/<pid>/ folders), never above the `scanned` one,
    so that the files of one run's processes share it and two recordings side by side do not."""
    folder = path.parent
    if folder.name.isdigit():  # <pid>/ (rocprofv3 -d out/%hostname%/%pid%), under its host folder
        folder = folder.parent.parent
    return folder if folder.is_relative_to(scanned) else scanned


def _check_one_output(folder: Path, spec: Format, paths: list[Path]) -> None:
    """Refuse to add up files of several outputs (a recording and a test fixture under `.`): only
    one run's processes make one table; the learner names the output to read."""
    roots = sorted({_output_root(folder, path) for path in paths})
    if len(roots) < 2:
        return
    named = ", ".join(str(root.relative_to(folder)) if root != folder else "." for root in roots[:3])
    raise UserError(f"{folder}: holds {spec.description} files of {len(roots)} separate outputs ({named}"
                    f"{', ...' if len(roots) > 3 else ''}), not one run's processes: name one, e.g. "
                    f"tinylab hotspots {roots[0]}")


def _bounded(skipped: list[str]) -> str | None:
    """A note naming the files a bound stopped, or None."""
    if not skipped:
        return None
    return "skipped " + "; ".join(skipped[:2]) + (f"; and {len(skipped) - 2} more" if len(skipped) > 2 else "")


def _skipped(folder: Path, unreadable: list[Path]) -> str | None:
    """A note naming the folders a scan could not read, or None."""
    if not unreadable:
        return None
    named = ", ".join(str(p.relative_to(folder)) if p != folder else "." for p in unreadable[:3])
    return (f"{len(unreadable)} folder{'s' if len(unreadable) > 1 else ''} could not be read and "
            f"{'were' if len(unreadable) > 1 else 'was'} skipped: {named}" + (", ..." if len(unreadable) > 3 else ""))


def _candidate_files(folder: Path, unreadable: list[Path] | None = None) -> Iterator[Path]:
    """Files under folder, shallowest first (rocprofv3 nests <host>/<pid>_*, rocprof-sys a timestamp).

    Links are never followed, so the scan stays inside the folder and a link loop cannot trap it;
    FIFOs and devices are skipped; a folder that cannot be listed is skipped (and added to
    `unreadable`); past SCAN_FILES files or SCAN_SECONDS it stops with a UserError.
    """
    seen = 0
    deadline = min(time.monotonic() + SCAN_SECONDS, DEADLINE.get() or float("inf"))
    level = [folder]
    for _depth in range(6):
        next_level = []
        for directory in level:
            try:
                entries = sorted(directory.iterdir())
            except OSError:
                if unreadable is not None:
                    unreadable.append(directory)
                continue
            for entry in entries:
                if is_plain_dir(entry):
                    next_level.append(entry)
                elif is_plain_file(entry) and _non_empty(entry):
                    seen += 1
                    if seen > SCAN_FILES or time.monotonic() > deadline:
                        raise UserError(f"{folder}: stopped looking after {seen - 1:,} files: point at the "
                                        "profiler's own output folder or file")
                    yield entry
        level = next_level


def _non_empty(path: Path) -> bool:
    try:
        return path.lstat().st_size > 0
    except OSError:
        return False

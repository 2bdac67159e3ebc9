"""rocprof-sys wall_clock tables and its Perfetto trace.

Expected numbers come from the fixtures themselves, read with plain csv/json code in the test
(or written out by hand from the file), never from tinylab's parsers.
"""

from __future__ import annotations

import re

import pytest
from support import samples
from support.formats import (
    DISPATCHES,
    EXPECTED,
    assert_matches,
    rows,
    write,
)
from support.paths import FIX

from tinylab.analysis.hotspots import load_kernel_table
from tinylab.core.errors import UserError


def test_rocprof_sys_json_keeps_kernels_drops_host_regions(tmp_path):
    """Host regions go, the trainer's roctx step and phase ranges among them (timemory regions on a GPU run)."""
    ranges = ("tinylab warm-up step 0", "tinylab step 1", "forward", "backward", "optimizer")
    table, fmt = load_kernel_table(write(tmp_path, "wall_clock-4242.json", samples.wall_clock_json(DISPATCHES, ranges)))
    assert fmt == "rocprof-sys-json"
    assert not {"main", "hipLaunchKernel", *ranges} & set(table["name"])
    assert_matches(table, EXPECTED, rel=1e-9)


def test_rocprof_sys_text_table_fixture():
    path = FIX / "rocprof-sys/docs/wall_clock.example.txt"
    table, fmt = load_kernel_table(path)
    assert fmt == "rocprof-sys-wall-clock"
    calls, total = 0, 0.0
    for line in path.read_text().splitlines():
        if re.search(r"\|_conj_grad\s*\|", line):  # cells from the right: ... COUNT DEPTH METRIC UNITS SUM ...
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            calls += int(cells[-11])
            total += float(cells[-7]) * 1e9
    conj = rows(table)["conj_grad"]
    assert conj["calls"] == calls == 912
    assert conj["total_ns"] == pytest.approx(total)
    assert not any(n == "main" or n.startswith("ompt_") for n in table["name"])


def test_rocprof_sys_perfetto_trace_through_the_trace_processor(tmp_path, monkeypatch):
    """A .proto is read with the optional `perfetto` package; kernel slices have category
    rocm_kernel_dispatch. Without the package the error says how to get a table instead."""
    import sys
    import types
    from types import SimpleNamespace

    proto = tmp_path / "perfetto-trace-4242.proto"
    proto.write_bytes(b"\x0a\x8c\x01\x12\x00\xff\xfe\x80binary perfetto")
    monkeypatch.setitem(sys.modules, "perfetto", None)
    with pytest.raises(UserError, match=r"perfetto-trace-4242.proto: a Perfetto protobuf trace; .*pip install perfetto"):
        load_kernel_table(proto)

    queries = []

    class TraceProcessor:
        def __init__(self, trace):
            assert trace == str(proto)

        def query(self, sql):
            queries.append(sql)
            return [SimpleNamespace(name=n, calls=c, total_ns=t, min_ns=lo, max_ns=hi) for n, (c, t, lo, hi) in EXPECTED.items()]

        def close(self):
            queries.append("closed")

    module = types.ModuleType("perfetto.trace_processor")
    module.TraceProcessor = TraceProcessor
    monkeypatch.setitem(sys.modules, "perfetto", types.ModuleType("perfetto"))
    monkeypatch.setitem(sys.modules, "perfetto.trace_processor", module)
    table, fmt = load_kernel_table(proto)
    assert fmt == "rocprof-sys-perfetto"
    assert_matches(table, EXPECTED)
    # kernels are device_hip slices on ROCm 6.2/6.3 and rocm_kernel_dispatch from 6.4: both are read
    assert "category IN ('device_hip', 'rocm_kernel_dispatch')" in queries[0] and queries[-1] == "closed"


def test_rocprof_sys_perfetto_trace_gives_the_measured_steps(tmp_path, monkeypatch):
    """Kernel slices (either release's category) and the trainer's roctx step ranges on one clock: the
    query runs on SQLite, the engine under Perfetto's trace processor, over a `slice` table of its
    columns (name, ts, dur, category); the dispatches are the real ROCm 7 docs trace's, shifted."""
    import sqlite3
    import sys
    import types

    from tinylab.analysis.formats.rocprof_sys import perfetto_steps
    from tinylab.core.steps import measured_kernels, step_windows

    base = DISPATCHES[0][1]
    shifted = [(name, start - base, end - base) for name, start, end in DISPATCHES]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE slice (name TEXT, ts INTEGER, dur INTEGER, category TEXT)")
    half = len(shifted) // 2  # a 6.2/6.3 trace files kernels as device_hip, 6.4+ as rocm_kernel_dispatch
    db.executemany("INSERT INTO slice VALUES (?, ?, ?, ?)",
                   [(n, s, e - s, "device_hip" if i < half else "rocm_kernel_dispatch") for i, (n, s, e) in enumerate(shifted)]
                   + [("tinylab warm-up step 0", 0, 40_000, "rocm_marker_api"), ("forward", 40_100, 10_000, "rocm_marker_api"),
                      ("tinylab step 1", 40_000, 160_000, "rocm_marker_api"), ("hipLaunchKernel", 41_000, 500, "rocm_hip_api")])

    class TraceProcessor:
        def __init__(self, trace):
            self.trace = trace

        def query(self, sql):
            cursor = db.execute(sql)
            names = [d[0] for d in cursor.description]
            return [types.SimpleNamespace(**dict(zip(names, row))) for row in cursor]

        def close(self):
            pass

    module = types.ModuleType("perfetto.trace_processor")
    module.TraceProcessor = TraceProcessor
    monkeypatch.setitem(sys.modules, "perfetto", types.ModuleType("perfetto"))
    monkeypatch.setitem(sys.modules, "perfetto.trace_processor", module)
    dispatches, ranges = perfetto_steps(tmp_path / "perfetto-trace-1.proto")
    assert len(dispatches[0]) == len(shifted) and {r[0] for r in ranges} == {"tinylab warm-up step 0", "tinylab step 1"}
    table, steps = measured_kernels(*dispatches, step_windows(ranges))
    measured = [d for d in shifted if 40_000 <= d[1] <= 200_000]
    assert steps == 1 and 0 < len(measured) < len(shifted)
    assert_matches(table, samples.expected_from_dispatches(measured))
    # the adapter: the measured steps' table instead of the whole run's wall_clock one
    from tinylab.profilers.rocprof_sys import RocprofSysAdapter

    out = tmp_path / "rocprof-sys" / "2026-11-26_23.00"
    out.mkdir(parents=True)
    write(out, "wall_clock-1.json", samples.wall_clock_json(shifted))
    (out / "perfetto-trace-1.proto").write_bytes(b"\x0a\x8c\x01\x12\x00\xff\xfe\x80binary perfetto")
    result = RocprofSysAdapter().collect(tmp_path / "rocprof-sys")
    assert (result.format, result.steps) == ("rocprof-sys-perfetto", 1)
    assert_matches(result.table, samples.expected_from_dispatches(measured))
    assert "kernels of the 1 measured steps (roctx step ranges of 2026-11-26_23.00/perfetto-trace-1.proto" in result.note

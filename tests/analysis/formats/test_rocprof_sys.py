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
from tinylab.errors import UserError


def test_rocprof_sys_json_keeps_kernels_drops_host_regions(tmp_path):
    table, fmt = load_kernel_table(write(tmp_path, "wall_clock-4242.json", samples.wall_clock_json(DISPATCHES)))
    assert fmt == "rocprof-sys-json"
    assert "main" not in set(table["name"]) and "hipLaunchKernel" not in set(table["name"])
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

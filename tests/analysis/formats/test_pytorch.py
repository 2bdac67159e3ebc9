"""The PyTorch profiler trace and tinylab operators.csv.

Expected numbers come from the fixtures themselves, read with plain csv/json code in the test
(or written out by hand from the file), never from tinylab's parsers.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
from support.formats import (
    rows,
    write,
)
from support.paths import FIX

from tinylab.analysis.hotspots import load_kernel_table


def _trace_kernels(path: Path) -> dict[str, tuple[int, float]]:
    data = json.loads(gzip.open(path).read())
    out: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for e in data["traceEvents"]:
        if e.get("cat") == "kernel":
            out[e["name"]][0] += 1
            out[e["name"]][1] += e["dur"] * 1000
    return {k: tuple(v) for k, v in out.items()}


def test_pytorch_cuda_trace_kernels():
    path = FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz"
    table, fmt = load_kernel_table(path)
    assert fmt == "pytorch-trace" and table.attrs["note"] is None
    got = {k: (v["calls"], v["total_ns"]) for k, v in rows(table).items()}
    expected = _trace_kernels(path)
    assert got.keys() == expected.keys()
    for k, (calls, total) in expected.items():
        assert got[k][0] == calls and got[k][1] == pytest.approx(total)


def test_pytorch_trace_and_operator_csv_agree_on_top_kernels():
    trace, _ = load_kernel_table(FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz")
    ops, fmt = load_kernel_table(FIX / "pytorch-profiler/cuda_h100/torchprof_key_averages.csv")
    assert fmt == "pytorch-operators"
    assert "Optimizer.step#AdamW.step" not in set(ops["name"])  # a GPU-side annotation, not a kernel
    assert list(trace["name"][:5]) == list(ops["name"][:5])


def test_pytorch_cpu_trace_is_operators_by_self_time():
    for name in ("torchprof_trace.json.gz", "tinylab.1795658815729917784.pt.trace.json.gz"):
        table, fmt = load_kernel_table(FIX / "pytorch-profiler/cpu_only" / name)
        assert fmt == "pytorch-trace"
        assert table.attrs["note"] == "CPU run: no device kernels; table shows operators by self CPU time"
        assert table["name"][0] == "aten::mm" and table["category"][0] == "gemm"
    ops, _ = load_kernel_table(FIX / "pytorch-profiler/cpu_only/torchprof_key_averages.csv")
    assert ops["name"][0] == "aten::mm" and "CPU run" in ops.attrs["note"]


def test_self_time_subtracts_nested_ops(tmp_path):
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 0.0, "dur": 100.0},
        {"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 10.0, "dur": 30.0},
        {"ph": "X", "cat": "cpu_op", "name": "leaf", "pid": 1, "tid": 1, "ts": 15.0, "dur": 5.0},
        {"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 50.0, "dur": 10.0},
        {"ph": "X", "cat": "cpu_op", "name": "other_thread", "pid": 1, "tid": 2, "ts": 20.0, "dur": 7.0},
    ]
    table, _ = load_kernel_table(write(tmp_path, "t.json", json.dumps({"traceEvents": events})))
    got = {k: (v["calls"], v["total_ns"]) for k, v in rows(table).items()}
    assert got == {"outer": (1, 60_000), "inner": (2, 35_000), "leaf": (1, 5_000), "other_thread": (1, 7_000)}


def test_chrome_trace_as_bare_event_list_and_old_category_case(tmp_path):
    events = [{"ph": "X", "cat": "Kernel", "name": "k", "ts": 1, "dur": 2.5}]
    table, _ = load_kernel_table(write(tmp_path, "t.json", json.dumps(events)))
    assert rows(table)["k"]["total_ns"] == 2500


@pytest.mark.parametrize("trace,only", [
    ("cuda_h100/torchprof_trace.json.gz", {"kernel", "Kernel"}),  # lists a device: its kernels
    ("tinylab_cpu_v1_memory/trace.json.gz", {"kernel", "Kernel", "cpu_op", "Operator", "operator"}),  # lists none
])
def test_a_trace_is_read_for_the_events_of_its_table_only(monkeypatch, trace, only):
    """The kernel table asks the reader for the events it is made of (the kernels: a tenth of a GPU
    trace's events; the CPU operators, not the Python calls, of a CPU run's): the same table as
    from every event."""
    from tinylab.analysis.formats import pytorch, trace_events

    path = FIX / "pytorch-profiler" / trace
    asked = []
    read = trace_events.read_events
    monkeypatch.setattr(trace_events, "read_events", lambda p, only=None: asked.append(only) or read(p, only))
    table, _ = load_kernel_table(path)
    assert asked == [only]
    whole = pytorch.parse_trace(read(path)).table
    assert table.to_dict() == whole.to_dict()
    assert len(read(path, frozenset(only))) < len(read(path)) * 0.8


def test_a_trace_that_lists_a_gpu_but_holds_no_kernel_is_read_again_whole(tmp_path, monkeypatch):
    """An empty GPU capture (the device listed, no kernel recorded): its table is of CPU operators."""
    from tinylab.analysis.formats import trace_events

    doc = json.loads(gzip.open(FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz").read())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "kernel"]
    assert doc["deviceProperties"]
    asked = []
    read = trace_events.read_events
    monkeypatch.setattr(trace_events, "read_events", lambda p, only=None: asked.append(only) or read(p, only))
    table, fmt = load_kernel_table(write(tmp_path, "t.json", json.dumps(doc)))
    assert asked == [frozenset({"kernel", "Kernel"}), frozenset({"kernel", "Kernel", "cpu_op", "Operator", "operator"})]
    assert fmt == "pytorch-trace" and "CPU run" in table.attrs["note"] and len(table) > 10

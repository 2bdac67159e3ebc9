"""Every supported native format becomes the same normalized table.

Expected numbers come from the fixtures themselves, read with plain csv/json code in the test
(or written out by hand from the file), never from tinylab's parsers.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tinylab.analysis.hotspots import load_kernel_table
from tinylab.analysis.kernel_table import KERNEL_COLUMNS
from tinylab.errors import UserError

from . import samples
from .conftest import FIX
from .rocpd_db import KERNELS_VIEW_COLUMNS, write_rocpd

ROCM7 = FIX / "rocprofv3/rocm7-docs-data"
DISPATCHES = samples.rocm7_dispatches()
EXPECTED = samples.expected_from_dispatches(DISPATCHES)
ADDITION = "void addition_kernel<float>(float*, float const*, float const*, int, int)"


def rows(table) -> dict[str, dict]:
    return {r["name"]: r for r in table.to_dict("records")}


def assert_matches(table, expected: dict, min_max: bool = True, rel: float = 0.0) -> None:
    got = rows(table)
    assert set(got) == set(expected)
    for name, (calls, total, lo, hi) in expected.items():
        r = got[name]
        assert r["calls"] == calls, name
        assert r["total_ns"] == pytest.approx(total, rel=rel), name
        assert r["avg_ns"] == pytest.approx(total / calls, rel=max(rel, 1e-9)), name
        if min_max:
            assert r["min_ns"] == pytest.approx(lo, rel=rel) and r["max_ns"] == pytest.approx(hi, rel=rel), name
    assert list(table.columns) == KERNEL_COLUMNS
    assert list(table["total_ns"]) == sorted(table["total_ns"], reverse=True)
    assert table["pct"].sum() == pytest.approx(100.0)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- rocprofv3 CSV
def test_rocm7_kernel_trace_by_hand():
    table, fmt = load_kernel_table(ROCM7 / "kernel_trace.csv")
    assert fmt == "rocprofv3-kernel-trace"
    add = rows(table)[ADDITION]
    # three dispatches: 1550151853042437-...029637, ...094357-...082957, ...174037-...164197
    assert (add["calls"], add["total_ns"], add["min_ns"], add["max_ns"]) == (3, 12800 + 11400 + 9840, 9840, 12800)
    assert_matches(table, EXPECTED)


def test_every_trace_and_summary_format_gives_the_same_table(tmp_path):
    """ROCm 6.x and 7.x headers, rocpd convert CSV, stats, nsys (3 header generations), rocpd summary."""
    variants = {
        "rocprofv3-kernel-trace": samples.rocprofv3_trace_6x(DISPATCHES),
        "rocpd-csv": samples.rocpd_convert_csv(DISPATCHES),
        "rocprofv3-kernel-stats": samples.rocprofv3_stats(DISPATCHES),
        "nsys-kern-sum": samples.nsys_kern_sum(DISPATCHES, "2023"),
        "nsys-gpu-trace": samples.nsys_gpu_trace(DISPATCHES),
        "rocpd-summary": samples.rocpd_summary_csv(DISPATCHES),
    }
    for fmt, text in variants.items():
        table, detected = load_kernel_table(write(tmp_path, f"{fmt}.out", text))
        assert detected == fmt
        assert_matches(table, EXPECTED)
    for style in ("2022", "2020"):
        table, detected = load_kernel_table(write(tmp_path, f"nsys{style}.csv", samples.nsys_kern_sum(DISPATCHES, style)))
        assert detected == "nsys-kern-sum"
        assert_matches(table, EXPECTED)


def test_rocpd_summary_by_rank_merges_processes(tmp_path):
    text = samples.rocpd_summary_csv(DISPATCHES, by_rank=True)
    two_ranks = text + "\n".join(text.splitlines()[1:]).replace("714789", "715613") + "\n"
    table, _ = load_kernel_table(write(tmp_path, "kernels_summary.csv", two_ranks))
    doubled = {k: (2 * c, 2 * t, lo, hi) for k, (c, t, lo, hi) in EXPECTED.items()}
    assert_matches(table, doubled)


def test_rocprofv3_6x_header_with_integer_agent(tmp_path):
    text = samples.rocprofv3_trace_6x(DISPATCHES)
    assert '"Private_Segment_Size"' in text and '"Stream_Id"' not in text
    table, _ = load_kernel_table(write(tmp_path, "pid_kernel_trace.csv", text))
    assert_matches(table, EXPECTED)


def test_truncated_kernel_names_fixture():
    table, _ = load_kernel_table(ROCM7 / "kernel_trace_truncated.csv")
    assert set(table["name"]) == {"addition_kernel", "divide_kernel", "multiply_kernel", "subtract_kernel"}
    assert rows(table)["divide_kernel"]["total_ns"] == 1552082594709678 - 1552082594696598


def test_real_pytorch_kernel_stats_keep_commas_in_names():
    table, fmt = load_kernel_table(FIX / "rocprofv3/hpctraining-pytorch-resnet/pid_kernels_kernel_stats.mpi_rank.csv")
    assert fmt == "rocprofv3-kernel-stats"
    with open(FIX / "rocprofv3/hpctraining-pytorch-resnet/pid_kernels_kernel_stats.mpi_rank.csv", newline="") as fh:
        src = list(csv.DictReader(fh))
    got = rows(table)
    assert len(got) == len(src) == 9
    for r in src:
        k = got[r["Name"]]
        assert (k["calls"], k["total_ns"], k["min_ns"], k["max_ns"]) == (
            int(r["Calls"]), float(r["TotalDurationNs"]), float(r["MinNs"]), float(r["MaxNs"]))
    assert table["name"][0].startswith("rccl_main_kernel(")
    assert any("MulFunctor<float> >, at::detail::Array<char*, 2> >(int," in n for n in got)


def test_domain_and_api_stats_are_refused_with_a_reason():
    with pytest.raises(UserError, match=r"hip_api_stats.csv: this is a HIP/HSA API stats file"):
        load_kernel_table(ROCM7 / "hip_api_stats.csv")
    with pytest.raises(UserError, match=r"hip_domain_stats.csv: this is a domain or memory-copy stats file"):
        load_kernel_table(ROCM7 / "hip_domain_stats.csv")
    with pytest.raises(UserError, match=r"memory_copy_trace.csv: a memory-copy trace, not a kernel table"):
        load_kernel_table(ROCM7 / "memory_copy_trace.csv")
    with pytest.raises(UserError, match=r"hip_trace.csv: a HIP/HSA/marker API trace"):
        load_kernel_table(ROCM7 / "hip_trace.csv")


def test_counter_collection_keeps_one_row_per_dispatch():
    table, fmt = load_kernel_table(ROCM7 / "counter_collection.csv")
    assert fmt == "rocprofv3-counter-collection"
    assert rows(table)[ADDITION]["total_ns"] == 3200098838483232 - 3200098838431081
    assert int(table["calls"].sum()) == 4
    old, _ = load_kernel_table(FIX / "rocprofv3/rocm6.2-docs-data/counter_collection.csv")
    assert old["total_ns"].isna().all() and "call counts only" in old.attrs["note"]


def test_rocprofv3_summary_text_kernel_dispatch_section():
    table, fmt = load_kernel_table(ROCM7 / "summary.txt")
    assert fmt == "rocprofv3-summary"
    add = rows(table)[ADDITION]
    assert (add["calls"], add["total_ns"], add["min_ns"], add["max_ns"]) == (8, 184324, 11200, 98802)
    assert len(table) == 4  # kernel rows appear again in the combined section: not double counted


def test_legacy_rocprof_stats_have_no_min_max():
    table, fmt = load_kernel_table(FIX / "rocprof-v1/results.stats.batched_gemm.csv")
    assert fmt == "rocprof-v1-stats"
    assert table["total_ns"][0] == 331634184678 and math.isnan(table["min_ns"][0])
    assert table["category"][0] == "gemm"
    assert "legacy" in table.attrs["note"]


# ----------------------------------------------------------------------------- rocpd SQLite
@pytest.mark.parametrize("views,kernels_view,note", [
    (True, "working", None),
    (True, "empty", "kernels view was empty"),
    (True, "none", "kernels view was empty or missing"),
    (False, "none", "rocpd_kernel_dispatch"),
])
def test_rocpd_database(tmp_path, views, kernels_view, note):
    db = tmp_path / "host" / "4242_results.db"
    db.parent.mkdir()
    write_rocpd(db, DISPATCHES, views=views, kernels_view=kernels_view)
    table, fmt = load_kernel_table(db)
    assert fmt == "rocpd"
    assert_matches(table, EXPECTED)
    assert (table.attrs["note"] is None) == (note is None)
    if note:
        assert "rocpd_kernel_dispatch" in table.attrs["note"]


def test_rocpd_builder_has_the_documented_kernels_view(tmp_path):
    import sqlite3

    db = tmp_path / "x.db"
    write_rocpd(db, DISPATCHES)
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(kernels)")]
    con.close()
    assert cols == [c.strip() for c in KERNELS_VIEW_COLUMNS.split(",")]


def test_rocpd_without_dispatches_or_tables(tmp_path):
    import sqlite3

    empty = tmp_path / "empty.db"
    write_rocpd(empty, [])
    with pytest.raises(UserError, match=r"empty.db: rocpd database has no kernel dispatches"):
        load_kernel_table(empty)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (a)").connection.commit()
    with pytest.raises(UserError, match=r"other.db: SQLite database without rocpd kernel data"):
        load_kernel_table(other)


# ----------------------------------------------------------------------------- rocprof-compute
def test_rocprof_compute_workload_folder():
    table, fmt = load_kernel_table(FIX / "rocprof-compute/vcopy_MI200")
    assert fmt == "rocprof-compute"
    (row,) = table.to_dict("records")
    assert row["name"] == "vecCopy(double*, double*, double*, int, int) [clone .kd]"
    assert row["calls"] == 3
    assert row["total_ns"] == (1411551767656192 - 1411551767635712) + (1411551767765792 - 1411551767749472) + (
        1411551767802112 - 1411551767786592)


def test_rocprof_compute_rounded_timestamps_give_counts_only(tmp_path):
    table, fmt = load_kernel_table(write(tmp_path, "timestamps.csv", samples.rounded_compute_timestamps()))
    assert fmt == "rocprof-compute"
    assert table["total_ns"].isna().all() and table["calls"].tolist() == [3]
    assert "rounded" in table.attrs["note"] and "call counts only" in table.attrs["note"]


@pytest.mark.parametrize("unit", ["ns", "us"])
def test_rocprof_compute_kernel_top(tmp_path, unit):
    table, fmt = load_kernel_table(write(tmp_path, "pmc_kernel_top.csv", samples.rocprof_compute_top(DISPATCHES, unit)))
    assert fmt == "rocprof-compute-top"
    assert_matches(table, EXPECTED, min_max=False, rel=1e-9)


def test_non_kernel_rocprof_compute_files_point_to_the_workload():
    for name in ("sysinfo.csv", "roofline.csv", "pmc_dispatch_info.csv"):
        with pytest.raises(UserError, match=f"{name}: .*pass the workload folder instead"):
            load_kernel_table(FIX / "rocprof-compute/vcopy_MI200" / name)


# ----------------------------------------------------------------------------- rocprof-sys
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


# ----------------------------------------------------------------------------- NVIDIA
def _ncu_expected(path: Path, raw: bool) -> dict[str, tuple[int, float]]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    out: dict[str, list] = defaultdict(lambda: [0, 0.0])
    reader = csv.DictReader(lines[start:])
    for r in reader:
        if raw and r["ID"] == "":
            continue  # the units row
        if not raw and r["Metric Name"] != "gpu__time_duration.sum":
            continue
        value = r["gpu__time_duration.sum"] if raw else r["Metric Value"]
        out[r["Kernel Name"]][0] += 1
        out[r["Kernel Name"]][1] += float(value.replace(",", ""))
    return {k: tuple(v) for k, v in out.items()}


@pytest.mark.parametrize("name,raw", [("ncu_details_metrics.csv", False), ("ncu_raw.csv", True)])
def test_ncu_csv_pages(name, raw):
    path = FIX / "ncu/h100_ncu2025.3" / name
    table, fmt = load_kernel_table(path)
    assert fmt == "ncu"
    expected = _ncu_expected(path, raw)
    got = rows(table)
    assert {k: (v["calls"], v["total_ns"]) for k, v in got.items()} == expected
    assert any(v > 1000 for _, v in expected.values())  # thousands separators were parsed, not dropped


def test_ncu_sections_duration_in_microseconds(tmp_path):
    table, fmt = load_kernel_table(write(tmp_path, "ncu.log", samples.ncu_details_sections(DISPATCHES)))
    assert fmt == "ncu"
    assert_matches(table, EXPECTED, rel=1e-6)


# ----------------------------------------------------------------------------- PyTorch
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


# ----------------------------------------------------------------------------- folders
def test_rocprofv3_output_folder_merges_processes(tmp_path):
    for host_pid in ("node1/111", "node1/222"):
        path = tmp_path / f"{host_pid}_kernel_stats.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(samples.rocprofv3_stats(DISPATCHES))
        (tmp_path / f"{host_pid}_kernel_trace.csv").write_text(ROCM7.joinpath("kernel_trace.csv").read_text())
        (tmp_path / f"{host_pid}_hip_api_stats.csv").write_text(ROCM7.joinpath("hip_api_stats.csv").read_text())
    table, fmt = load_kernel_table(tmp_path)
    assert fmt == "rocprofv3-kernel-stats"
    assert_matches(table, {k: (2 * c, 2 * t, lo, hi) for k, (c, t, lo, hi) in EXPECTED.items()})
    assert "merged 2 files" in table.attrs["note"]


def test_folder_with_nothing_readable(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(UserError, match="no supported profiler output found in this folder"):
        load_kernel_table(tmp_path)


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
    assert "category = 'rocm_kernel_dispatch'" in queries[0] and queries[-1] == "closed"

"""rocprofv3 (and legacy rocprof v1) CSV and summary text.

Expected numbers come from the fixtures themselves, read with plain csv/json code in the test
(or written out by hand from the file), never from tinylab's parsers.
"""

from __future__ import annotations

import csv
import math

import pytest
from support import samples
from support.formats import (
    ADDITION,
    DISPATCHES,
    EXPECTED,
    ROCM7,
    assert_matches,
    rows,
    write,
)
from support.paths import FIX

from tinylab.analysis.hotspots import load_kernel_table
from tinylab.core.errors import UserError


def test_rocm7_kernel_trace_by_hand():
    table, fmt = load_kernel_table(ROCM7 / "kernel_trace.csv")
    assert fmt == "rocprofv3-kernel-trace"
    add = rows(table)[ADDITION]
    # three dispatches: 1550151853042437-...029637, ...094357-...082957, ...174037-...164197
    assert (add["calls"], add["total_ns"], add["min_ns"], add["max_ns"]) == (3, 12800 + 11400 + 9840, 9840, 12800)
    assert_matches(table, EXPECTED)


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


# ----------------------------------------------------------------------------- measured steps
def marker_trace(ranges: list[tuple[str, int, int]]) -> str:
    """marker_api_trace.csv with rocprofv3's own header (rocm_releases.MARKER_TRACE_HEADER)."""
    from tinylab.core.rocm_releases import MARKER_TRACE_HEADER

    lines = [",".join(f'"{c}"' for c in MARKER_TRACE_HEADER)]
    lines += [f'"MARKER_CORE_API","{name}",4242,4242,{i},{start},{end}' for i, (name, start, end) in enumerate(ranges, 1)]
    return "\n".join(lines) + "\n"


def test_only_the_kernels_of_measured_step_ranges_are_kept(tmp_path):
    """Two warm-up and two measured step ranges (plus phase ranges inside): the dispatches of the
    real ROCm 7 docs trace are shifted into them, one outside every range."""
    from tinylab.analysis.formats.rocprofv3 import marker_ranges, trace_dispatches
    from tinylab.core.steps import measured_kernels, step_windows

    base = DISPATCHES[0][1]
    shifted = [(name, start - base, end - base) for name, start, end in DISPATCHES]  # 0 .. ~150 us
    ranges = [("tinylab warm-up step 0", 0, 20_000), ("tinylab warm-up step 1", 20_000, 40_000),
              ("tinylab step 2", 40_000, 90_000), ("forward", 40_100, 60_000), ("tinylab step 3", 90_000, 130_000)]
    write(tmp_path, "1_marker_api_trace.csv", marker_trace(ranges))
    write(tmp_path, "1_kernel_trace.csv", samples.rocprofv3_trace_6x(shifted))
    windows = step_windows(marker_ranges([tmp_path / "1_marker_api_trace.csv"]))
    assert [(w[0], w[1]) for w in windows] == [(0, True), (1, True), (2, False), (3, False)]  # "forward" is no step
    table, steps = measured_kernels(*trace_dispatches([tmp_path / "1_kernel_trace.csv"]), windows)
    inside = [(n, s, e) for n, s, e in shifted if 40_000 <= s <= 130_000]
    assert steps == 2 and 0 < len(inside) < len(shifted)
    assert_matches(table, samples.expected_from_dispatches(inside))


def test_no_measured_range_means_no_restriction(tmp_path):
    from tinylab.analysis.formats.rocprofv3 import marker_ranges, trace_dispatches
    from tinylab.core.steps import measured_kernels, step_windows

    write(tmp_path, "m.csv", marker_trace([("tinylab warm-up step 0", 0, 10)]))
    dispatches = trace_dispatches([ROCM7 / "kernel_trace.csv"])
    assert measured_kernels(*dispatches, step_windows(marker_ranges([tmp_path / "m.csv"]))) is None
    # an API trace shares the header: its calls are ranges, none a step; a missing file is none
    assert step_windows(marker_ranges([ROCM7 / "hip_trace.csv", tmp_path / "missing.csv"])) == []

"""rocprof-compute workloads and analyze tables.

Expected numbers come from the fixtures themselves, read with plain csv/json code in the test
(or written out by hand from the file), never from tinylab's parsers.
"""

from __future__ import annotations

import pytest
from support import samples
from support.formats import (
    DISPATCHES,
    EXPECTED,
    assert_matches,
    write,
)
from support.paths import FIX

from tinylab.analysis.hotspots import load_kernel_table
from tinylab.errors import UserError


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


def _renamed_workload(tmp_path, names: dict[str, str]):
    """The real vcopy MI200 workload with its three dispatches renamed (Dispatch_ID -> kernel)."""
    import csv

    folder = tmp_path / "workload"
    folder.mkdir(parents=True)
    with open(FIX / "rocprof-compute/vcopy_MI200/timestamps.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["Kernel_Name"] = names[row["Dispatch_ID"]]
    with open(folder / "timestamps.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return folder


def test_analysis_targets_are_the_filtered_kernels_then_the_top_gemm(tmp_path):
    """Dispatch durations of the real workload: 0 -> 20480 ns, 1 -> 16320 ns, 2 -> 15520 ns."""
    from tinylab.analysis.formats.rocprof_compute import analysis_targets

    workload = _renamed_workload(tmp_path, {"0": "Cijk_Ailk_Bljk_S_B_MT64x64", "1": "_rmsnorm_fwd_kernel",
                                            "2": "_attn_fwd_kernel"})
    assert analysis_targets(workload, ("_attn_fwd", "_rmsnorm_fwd")) == [
        (2, "_attn_fwd_kernel"), (1, "_rmsnorm_fwd_kernel"), (0, "Cijk_Ailk_Bljk_S_B_MT64x64")]
    assert analysis_targets(workload) == [(0, "Cijk_Ailk_Bljk_S_B_MT64x64")]  # the top GEMM is the top kernel
    assert analysis_targets(workload, ("nothing_like_it",)) == [(0, "Cijk_Ailk_Bljk_S_B_MT64x64")]
    same = _renamed_workload(tmp_path / "b", {"0": "_rmsnorm_fwd_kernel", "1": "_rmsnorm_fwd_kernel", "2": "x"})
    assert analysis_targets(same) == [(0, "_rmsnorm_fwd_kernel")]  # no GEMM: the top kernel's longest dispatch


def test_kernel_totals_sum_each_kernels_dispatches(tmp_path):
    from tinylab.analysis.formats.rocprof_compute import kernel_totals

    workload = _renamed_workload(tmp_path, {"0": "_rmsnorm_fwd_kernel", "1": "x", "2": "_rmsnorm_fwd_kernel"})
    assert kernel_totals(workload) == {"_rmsnorm_fwd_kernel": 20480 + 15520, "x": 16320}
    assert kernel_totals(tmp_path / "empty") == {}


def test_the_real_speed_of_light_table():
    """The real analyzer's table (Metric, Avg, Unit, Peak, Pct of Peak), numbers as written in the file."""
    from tinylab.analysis.formats.rocprof_compute import analyzed_kernels, read_speed_of_light

    ((kernel, folder),) = analyzed_kernels(FIX / "rocprof-compute/vcopy_MI200_analyze")
    assert kernel == "vecCopy(double*, double*, double*, int, int) [clone .kd]" and folder.name == "dispatch_0"
    table = read_speed_of_light(folder)
    assert len(table) == 31
    assert table["l2 cache bw"] == {"metric": "L2 Cache BW", "value": 1275.1, "unit": "Gb/s", "peak": 3481.6,
                                    "pct": 36.62}
    assert table["lds bank conflicts/access"]["value"] is None and table["l2-fabric read latency"]["pct"] is None

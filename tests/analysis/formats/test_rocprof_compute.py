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
from tinylab.core.errors import UserError


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


def test_the_speed_of_light_table_in_every_layout_and_spelling(tmp_path):
    """The real table, as 3.8+ spells its percentage ("Percent of Peak") and as 3.7+ writes it: one CSV
    per analysis view, kernel_metric.csv with a row a (kernel, metric, value_name) (RS@002a2c74
    utils/analysis_orm.py), the kernel in kernel.csv. Both read to the same table."""
    import csv

    from tinylab.analysis.formats.rocprof_compute import analyzed_kernels, read_speed_of_light, sol_file

    real = FIX / "rocprof-compute/vcopy_MI200_analyze/dispatch_0"
    expected = read_speed_of_light(real)
    renamed = tmp_path / "renamed" / "dispatch_0"
    renamed.mkdir(parents=True)
    (renamed / "2.1_Speed-of-Light.csv").write_text(
        (real / "2.1_Speed-of-Light.csv").read_text().replace("Pct of Peak", "Percent of Peak", 1))
    (renamed / "0.2_Dispatch_List.csv").write_text((real / "0.2_Dispatch_List.csv").read_text())
    assert read_speed_of_light(renamed) == expected
    views = tmp_path / "views" / "dispatch_7"
    views.mkdir(parents=True)
    kernel = "vecCopy(double*, double*, double*, int, int) [clone .kd]"
    (views / "kernel.csv").write_text(f'kernel_uuid,workload_id,workload_name,kernel_name,dispatch_count\n1,1,w,"{kernel}",1\n')
    with open(real / "2.1_Speed-of-Light.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with open(views / "kernel_metric.csv", "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["kernel_name", "metric_name", "metric_id", "sub_table_name", "unit", "value_name", "value"])
        out.writerow([kernel, "Wavefronts Num", "7.1.0", "Wavefront Launch Stats", "Waves", "Avg", "5"])  # another table
        for i, row in enumerate(rows):
            for name, column in (("Avg", "Avg"), ("Peak", "Peak"), ("Percent of Peak", "Pct of Peak")):
                out.writerow([kernel, row["Metric"], f"2.1.{i}", "Speed-of-Light", row["Unit"], name, row[column]])
    assert sol_file(views).name == "kernel_metric.csv" and sol_file(tmp_path) is None
    assert analyzed_kernels(views.parent) == [(kernel, views)]
    assert read_speed_of_light(views) == expected


def test_a_workload_before_analyze_merged_its_passes_is_found(tmp_path):
    """3.6+ writes one results_<pass>.csv a counter pass; analyze merges them into pmc_perf.csv later."""
    from tinylab.analysis.formats.rocprof_compute import find_workload

    workload = tmp_path / "workload" / "MI300X"
    workload.mkdir(parents=True)
    (workload / "results_pmc_perf_0.csv").write_text("Dispatch_ID,Kernel_Name\n")
    assert find_workload(tmp_path / "workload") == workload

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

"""The rocprof-compute wrapper adapter (tinylab/profilers/rocprof_compute.py) against the stand-in
executables (tests/profilers/bin), which accept only the real tools' documented flags and write their
real output formats: each mode's argv is accepted and runs the program, collect() reads what it wrote."""

from __future__ import annotations

import json

import pytest
from support.adapters import CONFIG, run_wrapped, totals

from tinylab.config import ConfigError, RunConfig
from tinylab.profilers.rocprof_compute import RocprofComputeAdapter


@pytest.mark.parametrize("mode,flags", [("full", []), ("counters", ["--no-roof"]), ("roof-only", ["--roof-only"])])
def test_rocprof_compute(standins, tmp_path, mode, flags):
    adapter = RocprofComputeAdapter(mode)
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert adapter.wrap_argv(out, CONFIG)[1:] == ["profile", "-n", "tinylab", "-p", str(out / "workload"), *flags,
                                                  "--device", "0", "--"]
    result = adapter.collect(out)
    assert result.format == "rocprof-compute"
    assert totals(result.table) == {"vecCopy(double*, double*, double*, int, int) [clone .kd]": (3, 52320.0)}
    assert "analyze/list_stats.txt" in result.artifacts
    assert "analyze/dispatch_0/2.1_Speed-of-Light.csv" in result.artifacts  # dispatch 0 is the longest (20480 ns)
    assert "workload/pmc_kernel_top.csv" in result.artifacts
    if mode != "counters":
        roofline = json.loads((out / "roofline.json").read_text())
        assert roofline["devices"] == 4 and roofline["peaks"]["HBMBw"] == pytest.approx(1389.07, abs=0.01)
    else:
        assert not (out / "roofline.json").exists()
    with pytest.raises(ConfigError, match="unknown rocprof-compute mode 'everything': choose from full"):
        RunConfig(profilers=["rocprof-compute"], rocprof_compute_mode="everything").validate()

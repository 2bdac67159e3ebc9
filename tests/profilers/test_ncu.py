"""The ncu wrapper adapter (tinylab/profilers/ncu.py) against the stand-in executables
(tests/profilers/bin), which accept only the real tools' documented flags and write their real output
formats: wrap_argv() is accepted and runs the program, collect() reads what it wrote or says why
there is nothing."""

from __future__ import annotations

import pytest
from support.adapters import CONFIG, run_wrapped

from tinylab.config import ConfigError, RunConfig
from tinylab.profilers.registry import get_adapter
from tinylab.profilers.ncu import NcuAdapter


def test_ncu(standins, tmp_path):
    adapter = NcuAdapter(launch_count=50)
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert adapter.wrap_argv(out, CONFIG)[1:] == [
        "--csv", "--metrics", "gpu__time_duration.sum", "--print-units", "base", "--launch-count", "50",
        "--log-file", str(out / "ncu.csv"), "--"]
    result = adapter.collect(out)
    assert result.format == "ncu" and len(result.table) == 5 and result.table["total_ns"].sum() == 19136


def test_ncu_permission_error_note(tmp_path):
    (tmp_path / "ncu.csv").write_text("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n")
    result = NcuAdapter().collect(tmp_path)
    assert result.table is None and "ERR_NVGPUCTRPERM" in result.note


def test_ncu_launch_count_comes_from_the_config():
    cfg = RunConfig(profilers=["ncu"], ncu_launch_count=50).validate()
    assert get_adapter("ncu", cfg).launch_count == 50 and get_adapter("ncu").launch_count == 2000
    with pytest.raises(ConfigError, match="--ncu-launch-count must be an integer from 1 to 10000000, got 0"):
        RunConfig(profilers=["ncu"], ncu_launch_count=0).validate()

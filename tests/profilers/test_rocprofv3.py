"""The rocprofv3 wrapper adapter (tinylab/profilers/rocprofv3.py) against the stand-in executables
(tests/profilers/bin), which accept only the real tools' documented flags and write their real output
formats: wrap_argv() is accepted and runs the program, collect() reads what it wrote (every ROCm
release's stand-in: tests/profilers/test_releases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.adapters import CONFIG, TRUNCATED, run_wrapped, totals

from tinylab.config import ConfigError, RunConfig
from tinylab.profilers.base import write_kernel_table
from tinylab.profilers.registry import get_adapter


def test_rocprofv3(standins, tmp_path):
    """ROCm 7.0 (the stand-ins outside a tree): its --output-format lists rocpd, so the run records the
    database, and the kernel table is read from it."""
    adapter = get_adapter("rocprofv3")
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "program_ran").read_text() == "yes"
    argv = adapter.wrap_argv(out, CONFIG)
    assert argv[1:] == ["--kernel-trace", "--truncate-kernels", "--marker-trace", "--output-format", "rocpd",
                        "--output-directory", str(out), "--"]
    result = adapter.collect(out)
    assert result.format == "rocpd"
    assert totals(result.table) == {k: (v[0], v[1]) for k, v in TRUNCATED.items()}
    names = list(result.artifacts)
    assert any(n.endswith("_results.db") and "/" in n for n in names)  # <hostname>/<pid>_results.db
    event = write_kernel_table(tmp_path / "run", "rocprofv3", result)
    assert event["kernel_table"] == "profiles/rocprofv3/kernels.csv"
    assert all(not Path(p).is_absolute() for p in event["artifacts"].values())
    assert (tmp_path / "run" / event["kernel_table"]).is_file()


def test_rocprofv3_extra_traces_and_formats_from_the_config(standins, tmp_path):
    cfg = RunConfig(profilers=["rocprofv3"], rocprofv3_traces=["hip", "memory-copy"],
                    rocprofv3_formats=["csv", "pftrace"]).validate()
    adapter = get_adapter("rocprofv3", cfg)
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    logged = standins.read_text().split("\t")
    assert "--hip-trace" in logged and "--memory-copy-trace" in logged
    assert logged[logged.index("--output-format") + 1 : logged.index("--output-format") + 4] == ["rocpd", "csv", "pftrace"]
    assert "--stats" in logged  # csv asked for: its per-kernel table too
    result = adapter.collect(out)
    assert any(n.endswith("_results.db") for n in result.artifacts)
    assert any(n.endswith("_hip_api_trace.csv") for n in result.artifacts)
    assert result.format == "rocprofv3-kernel-stats"  # stats preferred over the database and the trace
    for path in (p for n, p in result.artifacts.items() if n.endswith("_results.db")):
        from tinylab.analysis.hotspots import load_kernel_table

        db_table, fmt = load_kernel_table(Path(path))
        assert fmt == "rocpd" and totals(db_table) == totals(result.table)


def test_rocprofv3_options_are_validated():
    with pytest.raises(ConfigError, match="--rocprofv3-traces 'kfd': choose from hip, memory-copy"):
        RunConfig(profilers=["rocprofv3"], rocprofv3_traces=["kfd"]).validate()
    with pytest.raises(ConfigError, match="--rocprofv3-formats 'xml': choose from csv"):
        RunConfig(profilers=["rocprofv3"], rocprofv3_formats=["xml"]).validate()

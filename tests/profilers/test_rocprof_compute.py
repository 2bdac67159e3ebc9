"""The rocprof-compute wrapper adapter (tinylab/profilers/rocprof_compute.py) against the stand-in
executables (tests/profilers/bin), which accept only the real tools' documented flags and write their
real output formats: each mode's argv is accepted and runs the program, collect() reads what it wrote."""

from __future__ import annotations

import json

import pytest
from support.adapters import CONFIG, run_wrapped, totals

from tinylab.core.errors import UserError
from tinylab.config import ConfigError, RunConfig
from tinylab.profilers.rocprof_compute import RocprofComputeAdapter


@pytest.mark.parametrize("mode,flags", [("full", []), ("counters", ["--no-roof"]), ("roof-only", ["--roof-only"])])
def test_rocprof_compute(standins, tmp_path, mode, flags):
    adapter = RocprofComputeAdapter(mode)
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert adapter.wrap_argv(out, CONFIG)[1:] == ["profile", "--name", "tinylab", "--path", str(out / "workload"), *flags,
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


def _on(monkeypatch, tmp_path, install: str) -> None:
    """The stand-ins of one install first on PATH, an AMD GPU 'visible'."""
    import os

    from support.rocm import rocm_tree

    from tinylab.profilers import base

    monkeypatch.setenv("PATH", str(rocm_tree(tmp_path / "opt", install)) + os.pathsep + os.environ["PATH"])
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    for name in ("ROCM_PATH", "STANDIN_ROCM_RELEASE", "STANDIN_DROP_OPTIONS", "STANDIN_EXTRA_OPTIONS"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("install", ["7.14", "10.1"])
def test_a_workload_folder_with_files_gets_overwrite_where_listed(install, tmp_path, monkeypatch):
    """3.8+ (ROCm 10.0) refuses a non-empty workload folder without --overwrite; tinylab's is fresh, and
    if it ever is not, --overwrite is passed where the tool lists it (older ones overwrite anyway)."""
    _on(monkeypatch, tmp_path, install)
    monkeypatch.setenv("STANDIN_COMPUTE_PASSES", "1")
    adapter = RocprofComputeAdapter("counters")
    out = tmp_path / "run" / "profiles" / "rocprof-compute"
    (out / "workload").mkdir(parents=True)
    (out / "workload" / "left.txt").write_text("from before")
    argv = adapter.wrap_argv(out, CONFIG)
    assert ("--overwrite" in argv) == (install == "10.1")
    import subprocess

    proc = subprocess.run(argv + ["/bin/true"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    without = [a for a in argv if a != "--overwrite"]
    if install == "10.1":  # the stand-in refuses as 3.8+ does
        proc = subprocess.run(without + ["/bin/true"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and "is not empty: pass --overwrite" in proc.stderr


@pytest.mark.parametrize("install", ["7.0", "7.2"])
def test_a_metric_set_is_one_pass_where_the_tool_lists_set(install, tmp_path, monkeypatch):
    """--profile-set NAME -> --set NAME (rocprof-compute 3.3+, ROCm 7.1): a single counter pass, which
    the pass counter shows; a tool that lists no --set refuses it before launch, naming itself."""
    from tinylab.config import RunConfig

    _on(monkeypatch, tmp_path, install)
    config = RunConfig(num_steps=3, warmup_steps=1, profilers=["rocprof-compute"], profile_set="compute_thruput_util")
    adapter = RocprofComputeAdapter("counters")
    if install == "7.0":
        with pytest.raises(UserError) as err:
            adapter.check(config)
        assert str(err.value) == ("rocprof-compute 3.2.3 (ROCm 7.0.2) lists no --set in `rocprof-compute profile --help`: "
                                  "tinylab needs it for --profile-set compute_thruput_util (single-pass metric sets "
                                  "came with rocprof-compute 3.3, ROCm 7.1)")
        return
    adapter.check(config)
    out = tmp_path / "out"
    out.mkdir()
    argv = adapter.wrap_argv(out, config)
    assert argv[argv.index("--set") + 1] == "compute_thruput_util"
    import subprocess

    proc = subprocess.run(argv + ["/bin/true"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert adapter.planned_passes(out, "gfx942") == 1 and proc.stdout.count("Current input file") == 1
    with pytest.raises(UserError, match="--set cannot be used with --roof-only"):
        RocprofComputeAdapter("roof-only").check(config)


def test_roof_only_from_3_6_writes_the_roofline_alone(tmp_path, monkeypatch):
    """rocprof-compute 3.6+ (ROCm 7.13) --roof-only "creates roofline.csv only": its ceilings are read,
    nothing is analyzed, and the profile says why there is no kernel table."""
    _on(monkeypatch, tmp_path, "10.1")
    adapter = RocprofComputeAdapter("roof-only")
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (out / "workload").iterdir() if p.is_file()] == ["roofline.csv"]
    result = adapter.collect(out)
    assert result.table is None and not (out / "analyze").exists()
    assert result.note == "no kernel table: the workload holds roofline.csv only (--roof-only, rocprof-compute 3.6+)"
    assert json.loads((out / "roofline.json").read_text())["peaks"]["HBMBw"] == pytest.approx(1389.07, abs=0.01)

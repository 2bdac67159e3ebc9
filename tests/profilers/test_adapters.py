"""Wrapper adapters against stand-in executables (tests/profilers/bin) that accept only the real
tools' documented flags and write their real output formats: available() finds them,
wrap_argv() is accepted and runs the program, collect() reads what they wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import samples
from support.paths import BIN

from tinylab.config import PROFILERS, RunConfig
from tinylab.errors import UserError
from tinylab.profilers import (
    IN_PROCESS,
    WRAPPER,
    all_adapters,
    base,
    get_adapter,
    inprocess_hooks,
    write_kernel_table,
)
from tinylab.profilers.ncu import NcuAdapter
from tinylab.profilers.nsys import NsysAdapter
from tinylab.profilers.rocprof_compute import RocprofComputeAdapter
from tinylab.profilers.rocprofv3 import Rocprofv3Adapter

CONFIG = RunConfig(num_steps=3, warmup_steps=1)
EXPECTED = samples.expected_from_dispatches(samples.rocm7_dispatches())
TRUNCATED = samples.expected_from_dispatches(samples.rocm7_dispatches(samples.FIXTURES / "rocprofv3/rocm7-docs-data/kernel_trace_truncated.csv"))
PROGRAM = [sys.executable, "-c", "import pathlib; pathlib.Path('program_ran').write_text('yes')"]


def run_wrapped(adapter, tmp_path: Path, program=PROGRAM) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path / "run" / "profiles" / adapter.name
    out.mkdir(parents=True)
    argv = adapter.wrap_argv(out, CONFIG)
    proc = subprocess.run(argv + program, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    return out, proc


def totals(table) -> dict[str, tuple[int, float]]:
    return {r["name"]: (r["calls"], r["total_ns"]) for r in table.to_dict("records")}


def test_registry_matches_config_names():
    adapters = all_adapters()
    assert [a.name for a in adapters] == list(PROFILERS)
    assert {a.name for a in adapters if a.kind == IN_PROCESS} == {"pytorch", "deepspeed"}
    assert all(a.kind in (IN_PROCESS, WRAPPER) and a.description and a.fix for a in adapters)
    with pytest.raises(UserError, match="unknown profiler 'vtune': choose from pytorch, deepspeed, rocprofv3"):
        get_adapter("vtune")


@pytest.mark.parametrize("name,version,release", [
    # outside a ROCm tree the AMD stand-ins are 7.0: rocprofv3 --version names its ROCm, the others
    # are mapped from their own version (rocm_releases.SYS_TO_ROCM / COMPUTE_TO_ROCM)
    ("rocprofv3", "1.0.0", "ROCm 7.0.0"), ("rocprof-sys", "1.1.0", "ROCm 7.0"), ("rocprof-compute", "3.2.2", "ROCm 7.0"),
    ("ncu", "2025.3.1.0", None), ("nsys", "2024.6.1.90-246135386443v0", None),
])
def test_available_finds_the_tool_and_its_version(standins, name, version, release):
    assert get_adapter(name).available() == base.Availability(True, None, version, release)


def test_unavailable_reasons(monkeypatch, tmp_path, standins):
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"nvidia"})
    amd = get_adapter("rocprofv3").available()
    assert not amd.available and amd.version == "1.0.0"
    assert amd.reason == "rocprofv3 1.0.0 (ROCm 7.0.0) found, but no AMD GPU is visible (/dev/kfd missing)"
    assert get_adapter("ncu").available().available
    monkeypatch.setenv("PATH", str(tmp_path))
    assert get_adapter("nsys").available() == base.Availability(False, "nsys not found on PATH", None)
    broken = tmp_path / "ncu"
    broken.write_text("#!/bin/sh\necho 'ncu: cannot load libnvperf' >&2\nexit 3\n")
    broken.chmod(0o755)
    status = get_adapter("ncu").available()
    assert not status.available and "--version failed: ncu: cannot load libnvperf" in status.reason


def test_standins_refuse_undocumented_flags(standins, tmp_path):
    for argv in (["rocprofv3", "--kernel-trace", "--bogus", "--", "true"], ["ncu", "--launch-count", "0", "--", "true"],
                 ["rocprof-sys-run", "--trace"], ["nsys", "profile", "--trace", "cuda", "true"]):
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode != 0, argv
    stats_alone = subprocess.run(["rocprofv3", "--stats", "--", "true"], capture_output=True, text=True)
    assert stats_alone.returncode == 1 and "--stats needs a tracing option" in stats_alone.stderr


def test_rocprofv3(standins, tmp_path):
    adapter = get_adapter("rocprofv3")
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "program_ran").read_text() == "yes"
    argv = adapter.wrap_argv(out, CONFIG)
    assert argv[1:] == ["--kernel-trace", "--stats", "--truncate-kernels", "--marker-trace", "--output-format", "csv",
                        "--output-directory", str(out), "--"]
    result = adapter.collect(out)
    assert result.format == "rocprofv3-kernel-stats"
    assert totals(result.table) == {k: (v[0], v[1]) for k, v in TRUNCATED.items()}
    names = list(result.artifacts)
    assert any(n.endswith("_kernel_stats.csv") and "/" in n for n in names)  # <hostname>/<pid>_kernel_stats.csv
    event = write_kernel_table(tmp_path / "run", "rocprofv3", result)
    assert event["kernel_table"] == "profiles/rocprofv3/kernels.csv"
    assert all(not Path(p).is_absolute() for p in event["artifacts"].values())
    assert (tmp_path / "run" / event["kernel_table"]).is_file()


def test_rocprofv3_extra_traces_and_rocpd_from_env(standins, tmp_path, monkeypatch):
    monkeypatch.setenv("TINYLAB_ROCPROFV3_TRACE", "hip,memory-copy")
    monkeypatch.setenv("TINYLAB_ROCPROFV3_FORMAT", "rocpd,pftrace")
    adapter = get_adapter("rocprofv3")
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    logged = standins.read_text().split("\t")
    assert "--hip-trace" in logged and "--memory-copy-trace" in logged
    assert logged[logged.index("--output-format") + 1 : logged.index("--output-format") + 4] == ["csv", "rocpd", "pftrace"]
    result = adapter.collect(out)
    assert any(n.endswith("_results.db") for n in result.artifacts)
    assert any(n.endswith("_hip_api_trace.csv") for n in result.artifacts)
    assert result.format == "rocprofv3-kernel-stats"  # stats preferred over the database and the trace
    for path in (p for n, p in result.artifacts.items() if n.endswith("_results.db")):
        from tinylab.analysis.hotspots import load_kernel_table

        db_table, fmt = load_kernel_table(Path(path))
        assert fmt == "rocpd" and totals(db_table) == totals(result.table)


def test_rocprofv3_options_are_validated():
    with pytest.raises(UserError, match="unknown rocprofv3 trace 'kfd'"):
        Rocprofv3Adapter(traces=("kfd",))
    with pytest.raises(UserError, match="unknown rocprofv3 output format 'xml'"):
        Rocprofv3Adapter(output_formats=("xml",))


def test_rocprof_sys(standins, tmp_path):
    adapter = get_adapter("rocprof-sys")
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert adapter.wrap_argv(out, CONFIG)[1:] == ["--profile", "--trace", "-o", str(out), "--"]
    result = adapter.collect(out)
    assert result.format == "rocprof-sys-json"
    assert {k: v for k, v in totals(result.table).items()} == pytest.approx({k: (v[0], v[1]) for k, v in EXPECTED.items()})
    assert "ui.perfetto.dev" in result.note and any(n.endswith(".proto") for n in result.artifacts)


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
    with pytest.raises(UserError, match="unknown rocprof-compute mode"):
        RocprofComputeAdapter("everything")


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


def test_ncu_launch_count_from_env(monkeypatch):
    monkeypatch.setenv("TINYLAB_NCU_LAUNCH_COUNT", "lots")
    with pytest.raises(UserError, match="TINYLAB_NCU_LAUNCH_COUNT must be an integer"):
        get_adapter("ncu")


def test_nsys(standins, tmp_path):
    adapter = get_adapter("nsys")
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    argv = adapter.wrap_argv(out, CONFIG)
    assert argv[1:] == ["profile", "-o", str(out / "report"), "-t", "cuda,nvtx,osrt", "--force-overwrite", "true"]
    result = adapter.collect(out)
    # a CPU program marks no NVTX range: the whole run's kernel summary, and the note says so
    assert result.format == "nsys-kern-sum" and result.steps is None
    assert "no NVTX step ranges recorded" in result.note and "covers the whole run" in result.note
    assert totals(result.table) == {k: (v[0], v[1]) for k, v in EXPECTED.items()}
    assert {"report.nsys-rep", "report_cuda_gpu_kern_sum.csv", "report_cuda_gpu_trace.csv"} <= set(result.artifacts)
    logged = [line.split("\t") for line in standins.read_text().splitlines()]
    for report in ("nvtx_pushpop_trace", "cuda_gpu_trace", "cuda_gpu_kern_sum"):
        assert ["nsys", "stats", "--report", report, "--format", "csv", "--output", str(out / "report"),
                str(out / "report.nsys-rep")] in logged


def test_nsys_keeps_the_measured_steps_where_it_recorded_their_ranges(tmp_path):
    """A GPU run: nsys recorded the trainer's NVTX step ranges (":tinylab step N", the default
    domain) on the clock of its kernel trace; the table is the measured steps' kernels, the profile
    says how many steps. The dispatches are the real ROCm 7 docs trace's, shifted into the ranges."""
    out = tmp_path / "nsys"
    out.mkdir()
    (out / "report.nsys-rep").write_text("report")
    dispatches = samples.rocm7_dispatches()
    base = dispatches[0][1]
    shifted = [(name, start - base, end - base) for name, start, end in dispatches]
    ranges = [("tinylab warm-up step 0", 0, 40_000), ("forward", 40_100, 60_000), ("tinylab step 1", 40_000, 200_000)]
    (out / "report_cuda_gpu_trace.csv").write_text(samples.nsys_gpu_trace(shifted))
    (out / "report_nvtx_pushpop_trace.csv").write_text(samples.nsys_pushpop_trace(ranges))
    (out / "report_cuda_gpu_kern_sum.csv").write_text(samples.nsys_kern_sum(shifted).split("\n\n", 1)[1])
    result = NsysAdapter().collect(out)
    measured = [d for d in shifted if 40_000 <= d[1] <= 200_000]
    assert result.format == "nsys-gpu-trace" and result.steps == 1 and 0 < len(measured) < len(shifted)
    assert totals(result.table) == {k: (v[0], v[1]) for k, v in samples.expected_from_dispatches(measured).items()}
    assert "kernels of the 1 measured steps (NVTX step ranges" in result.note
    (out / "report_nvtx_pushpop_trace.csv").write_text("Start (ns),Name\n1,x\n")  # no End column
    broken = NsysAdapter().collect(out)
    assert broken.format == "nsys-kern-sum" and "the step ranges could not be read" in broken.note


def test_nsys_without_report(tmp_path):
    result = get_adapter("nsys").collect(tmp_path)
    assert result.table is None and "no report.nsys-rep" in result.note


def test_program_failure_is_passed_through(standins, tmp_path):
    out, proc = run_wrapped(get_adapter("rocprofv3"), tmp_path, program=[sys.executable, "-c", "raise SystemExit(3)"])
    assert proc.returncode == 3


def test_adapter_contracts_are_declared():
    """In-process tools have hooks and no argv; wrappers have argv; neither can leave one out."""
    from tinylab.profilers.base import InProcessAdapter, WrapperAdapter

    for adapter in all_adapters():
        assert isinstance(adapter, InProcessAdapter) != isinstance(adapter, WrapperAdapter), adapter.name
        assert hasattr(adapter, "wrap_argv") == isinstance(adapter, WrapperAdapter), adapter.name
    incomplete = type("Incomplete", (WrapperAdapter,), {"name": "x", "executable": "x", "vendor": "amd"})
    with pytest.raises(TypeError, match="wrap_argv"):
        incomplete()


def test_inprocess_hooks_only_for_in_process_tools(tmp_path):
    hooks = inprocess_hooks(RunConfig(profilers=["pytorch", "rocprofv3"]), tmp_path)
    assert [h.name for h in hooks] == ["pytorch"]
    assert inprocess_hooks(RunConfig(profilers=[]), tmp_path) == []


def test_write_kernel_table_without_table(tmp_path):
    event = write_kernel_table(tmp_path, "deepspeed", base.CollectResult({"flops.json": str(tmp_path / "x")}, None, "n", "f"))
    assert event == {"tool": "deepspeed", "artifacts": {"flops.json": "x"}, "kernel_table": None, "format": "f", "note": "n",
                     "steps": None, "passes": None}


def test_bin_folder_is_not_on_path_by_default():
    """Guards the other tests: without the `standins` fixture the real tools (absent here) are used."""
    import os

    assert str(BIN) not in os.environ.get("PATH", "").split(os.pathsep)


def test_gpu_vendor_override(monkeypatch):
    monkeypatch.setenv("TINYLAB_GPU_VENDORS", "amd, nvidia")
    assert base.gpu_vendors() == {"amd", "nvidia"}
    monkeypatch.setenv("TINYLAB_GPU_VENDORS", "")
    assert base.gpu_vendors() == set()

"""What every adapter shares (tinylab/profilers/base.py): available() finds a wrapped tool and its
version or says why not, the in-process/wrapper contracts, a wrapped program's exit status, the
kernel-table event, the GPU vendors; and the stand-in executables (tests/profilers/bin) themselves."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.adapters import run_wrapped
from support.paths import BIN

from tinylab.profilers import base
from tinylab.profilers.base import write_kernel_table
from tinylab.profilers.registry import all_adapters, get_adapter


@pytest.mark.parametrize("name,version,release", [
    # outside a ROCm tree the AMD stand-ins are 7.0: rocprofv3 --version names its ROCm, the others
    # are mapped from their own version (rocm_releases.SYS_TO_ROCM / COMPUTE_TO_ROCM)
    ("rocprofv3", "1.0.0", "ROCm 7.0.0"), ("rocprof-sys", "1.1.0", "ROCm 7.0"), ("rocprof-compute", "3.2.3", "ROCm 7.0"),
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

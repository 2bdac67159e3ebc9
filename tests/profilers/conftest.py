"""Fixtures of the profiler tests: the real fixture folder and the stand-in tool executables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tinylab.profilers import base

FIX = Path(__file__).resolve().parents[1] / "fixtures"
BIN = Path(__file__).resolve().parent / "bin"


@pytest.fixture
def standins(monkeypatch, tmp_path) -> Path:
    """Stand-in rocprofv3/rocprof-sys-run/rocprof-compute/ncu/nsys first on PATH, GPUs of both
    vendors 'visible'; returns the log file where each stand-in appends the argv it got."""
    monkeypatch.setenv("PATH", str(BIN) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd", "nvidia"})
    log = tmp_path / "standin_argv.log"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    return log

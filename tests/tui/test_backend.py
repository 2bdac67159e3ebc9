"""The lab's Backend: its doctor child."""

from __future__ import annotations

import sys

import pytest
from support.foreign import plant

from tinylab.core import childproc
from tinylab.core.errors import UserError
from tinylab.tui.backend import Backend


def test_the_doctor_child_never_imports_from_the_labs_folder(tmp_path, monkeypatch):
    """Opening the lab in a folder holding a torch.py (or models/, or a tinylab/ of one's own) ran
    that code in the doctor child (`python -m tinylab doctor` puts the folder first on sys.path)."""
    sentinel = plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    report = Backend(tmp_path / "runs").doctor()
    assert not sentinel.exists(), sentinel.read_text()
    assert report.profilers["pytorch"].available and report.packages["torch"]


def test_the_doctor_child_runs_at_the_least_cpu_priority(tmp_path, monkeypatch):
    """Enter launches a plain run while the doctor child still imports torch: at full priority it
    took a core from that first run (0.96 cores of other load in its first sample, then 0.06), and
    the run was marked busy. The child is niced to 19: it gets what the run leaves."""
    # a child that reports its niceness (after the parent has had time to set it) as its error
    niceness = "import os, sys, time; time.sleep(1); print(os.nice(0), file=sys.stderr); sys.exit(3)"
    monkeypatch.setattr(childproc, "python", lambda *args: [sys.executable, "-c", niceness])
    with pytest.raises(UserError, match=rf"tinylab doctor failed: {childproc.BACKGROUND_NICE}$"):
        Backend(tmp_path / "runs").doctor()

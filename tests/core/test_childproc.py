"""External commands under a time cap and an output cap (tinylab.core.childproc.run_bounded)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from tinylab.core.childproc import run_bounded


def test_a_hung_command_is_killed_with_what_it_started(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    script = f"sleep 60 & echo $! > {pid_file}; sleep 60"
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded(["sh", "-c", script], 0.5)
    assert time.monotonic() - started < 5
    grandchild = int(pid_file.read_text())
    time.sleep(0.1)
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE


def test_output_is_kept_up_to_its_bound_and_decoded():
    done = run_bounded([sys.executable, "-c", "import sys; sys.stdout.write('x' * 3_000_000); sys.stderr.write('\\xff')"],
                       30, limit=1000)
    assert done.returncode == 0 and done.stdout == "x" * 1000 and done.stderr == "ÿ"

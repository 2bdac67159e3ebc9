"""`tinylab lab` needs a terminal: without one it says so at once instead of waiting forever."""

from __future__ import annotations

import subprocess

from support.runs import cli


def test_the_lab_without_a_terminal_is_a_one_line_error(tmp_path):
    proc = cli("lab", "--runs-dir", str(tmp_path / "runs"), timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr.startswith("tinylab: error: the lab needs a terminal") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()

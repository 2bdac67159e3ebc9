"""`tinylab serve`'s lab command (textual-serve itself is an optional extra)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.foreign import plant

from tinylab.tui.serve import lab_command


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P needs Python 3.11; the served lab keeps the caller's folder")
def test_the_served_lab_never_imports_from_the_callers_folder(tmp_path):
    """Each browser session starts `python -m tinylab lab`: from a folder holding a tinylab/ or
    torch.py of one's own, that would be the code that runs."""
    sentinel = plant(tmp_path)
    command = lab_command(str(tmp_path / "runs"))
    assert command[-2:] == ["--runs-dir", str(tmp_path / "runs")]
    proc = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0 and "--runs-dir" in proc.stdout, proc.stderr
    assert not sentinel.exists(), sentinel.read_text()

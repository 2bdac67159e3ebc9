"""End to end, as a person over SSH sees it: the real `tinylab` in an 80x24 tmux pane.

Opens the lab, types a tiny config into the form, launches with enter, waits for the Run screen
to say finished, quits with q, and checks that the lab exited cleanly while its run is done.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tinylab.runs.store import RunStore

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

#: The Lab's number fields in tab order after the version list (as their focus hint names them),
#: with a tiny CPU config.
TINY = [("batch", "2"), ("seq", "16"), ("steps", "6"), ("warm-up", "1"), ("hidden", "64"), ("layers", "2"),
        ("heads", "4"), ("kv", "2")]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def wait_screen(session: str, text: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.25)
    raise AssertionError(f"{text!r} not on screen after {timeout:.0f}s; the screen:\n{screen}")


def test_open_launch_watch_quit_in_tmux(tmp_path: Path):
    runs = tmp_path / "runs"
    session = f"tinylab-e2e-{uuid.uuid4().hex[:8]}"
    exe = shutil.which("tinylab", path=os.path.dirname(sys.executable)) or f"{sys.executable} -m tinylab"
    command = f"{exe} --runs-dir {runs}; echo LAB-EXITED-$?; sleep 60"
    tmux("new-session", "-d", "-x", "80", "-y", "24", "-s", session, command)
    try:
        wait_screen(session, "Versions", 30)
        wait_screen(session, "ready: v1", 10)
        for field, value in TINY:
            tmux("send-keys", "-t", session, "Tab")
            wait_screen(session, f" {field}: ", 10)  # focused (and its text selected): typing replaces it
            tmux("send-keys", "-t", session, value)
        wait_screen(session, "ready: v1 b2 s16 h64 l2", 10)
        tmux("send-keys", "-t", session, "Enter")
        wait_screen(session, "tinylab — Run", 20)
        screen = wait_screen(session, "● finished", 150)
        assert "step 6/6" in screen and "samples/s" in screen
        tmux("send-keys", "-t", session, "q")
        wait_screen(session, "LAB-EXITED-0", 20)
    finally:
        tmux("kill-session", "-t", session)
    (run,) = RunStore(runs).list()
    assert run.status() == "finished"

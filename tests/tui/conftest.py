"""Shared set-up for the lab's tests: an app over fake runs, with frozen time, a fake doctor, the
tests' own scenarios (scenarios/) and a progress file of their own."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Callable

import pytest

from tinylab.tui.app import TinyLabApp, create_app

from .fakes import NOW, fake_doctor, make_store

SCENARIOS = Path(__file__).parent / "scenarios"


def make_app(runs_dir: str | Path, **kwargs) -> TinyLabApp:
    options = dict(clock=lambda: NOW, doctor=fake_doctor(), exercises_root=SCENARIOS, poll_s=0.1, animate=False)
    return create_app(runs_dir, **{**options, **kwargs})


@pytest.fixture(autouse=True)
def progress_file(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The learner has passed step 1 of fusion-basics, and nothing else."""
    path = tmp_path_factory.mktemp("progress") / "progress.json"
    path.write_text(json.dumps({"scenarios": {"fusion-basics": {"steps": {"1": {"passed_at": 1.0}}}}}))
    monkeypatch.setenv("TINYLAB_PROGRESS_FILE", str(path))
    return path


async def wait_for(pilot, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Let the app run until predicate() holds; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await pilot.pause(0.05)
        await asyncio.sleep(0)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake run store, as the relative path "runs" so that shown paths do not depend on tmp_path."""
    monkeypatch.chdir(tmp_path)
    make_store(Path("runs"))
    return Path("runs")

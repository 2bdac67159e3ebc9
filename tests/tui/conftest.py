"""Shared set-up for the lab's tests: an app over fake runs, with frozen time and a fake doctor."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Callable

import pytest

from tinylab.tui.app import TinyLabApp, create_app

from .fakes import NOW, FakeExercises, fake_doctor, make_store


def make_app(runs_dir: str | Path, **kwargs) -> TinyLabApp:
    options = dict(clock=lambda: NOW, doctor=fake_doctor(), exercises=FakeExercises(), poll_s=0.1, animate=False)
    return create_app(runs_dir, **{**options, **kwargs})


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

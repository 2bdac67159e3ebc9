"""Shared set-up for the lab's tests: an app over fake runs, with frozen time, a fake doctor, the
tests' own scenarios (scenarios/) and a progress file of their own; the pilot helpers the tests of
the screens share (the fake runs' ids, a tiny form, the current screen's name, a widget's text)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from support.anatomy import fake_anatomy, fake_sweep

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


def screen_text(svg: str) -> list[str]:
    """A snapshot SVG's screen as lines of text (its <text> runs placed by their x and y)."""
    import html
    import re

    rows: dict[float, list[tuple[float, str]]] = {}
    for x, y, text in re.findall(r'<text[^>]*x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(y), []).append((float(x), html.unescape(text).replace("\xa0", " ")))
    lines = []
    for y in sorted(rows):
        line = ""
        for x, text in sorted(rows[y]):
            line = line.ljust(round(x / 12.2)) + text  # textual's SVG: 12.2 px a cell
        lines.append(line.rstrip())
    return lines


@pytest.fixture
def snap_compare(snap_compare, request):
    """The plugin's compare, which on a mismatch also prints the screen lines that differ: CI keeps
    only its output, not the HTML report, and a snapshot that fails there once must say where."""
    import difflib
    import pickle

    def compare(*args, **kwargs) -> bool:
        if snap_compare(*args, **kwargs):
            return True
        try:  # the plugin's report data, not its API: a newer plugin may keep it elsewhere
            from pytest_textual_snapshot import node_to_report_path

            _, expected, actual, *_ = pickle.loads(node_to_report_path(request.node).read_bytes())
        except Exception as exc:  # the mismatch stands; only its diff is not printed
            print(f"(no screen diff: the snapshot plugin's report data could not be read: {exc!r})")
            return False
        diff = difflib.unified_diff(screen_text(expected), screen_text(actual), "accepted", "this run",
                                    n=1, lineterm="")
        print("\n".join(list(diff)[:80]) or "the same text: colours or styles differ")
        return False

    return compare


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake run store, as the relative path "runs" so that shown paths do not depend on tmp_path."""
    monkeypatch.chdir(tmp_path)
    make_store(Path("runs"))
    return Path("runs")


@dataclass
class FakeKernels:
    """The Lab's kernel calls answered from tests/tui/fakes.py in no time: `studies` lists the
    precisions asked for; a study reports three progress steps, then waits for `gate` (when
    set) and raises `error` (when set)."""

    studies: list = field(default_factory=list)
    stages: list = field(default_factory=list)
    sweeps: list = field(default_factory=list)
    gate: threading.Event | None = None
    error: str | None = None

    def study(self, cfg, targets=None, name=None, *, progress=None, **_):
        from tinylab.anatomy import Progress
        from tinylab.core.errors import UserError
        from tinylab.service.lab import KernelStudy

        self.studies.append(cfg.precision)
        for done in (1, 2, 3):
            if progress:
                progress(Progress("compiling", done, 132, "attn_fwd @ gfx942"))
        if self.gate is not None:
            assert self.gate.wait(10), "the test never opened the gate"
        if self.error:
            raise UserError(self.error)
        return KernelStudy(fake_anatomy(cfg.precision))

    def stage(self, anatomy, name, target, stage):
        self.stages.append((name, target, stage))
        return f"// {stage} of {name} for {target}\n" + "\n".join(f"line {i} of {stage}" for i in range(1, 200))

    def sweep(self, anatomy, name, target, param, values=None, *, progress=None):
        from tinylab.anatomy import Progress

        self.sweeps.append((name, target, param))
        if progress:
            progress(Progress("compiling", 1, 3, f"{name} {param}"))
        return fake_sweep(anatomy, name, target, param)


@pytest.fixture
def fake_kernels(monkeypatch: pytest.MonkeyPatch) -> FakeKernels:
    from tinylab.tui.backend import Backend

    fake = FakeKernels()
    monkeypatch.setattr(Backend, "kernel_study", fake.study)
    monkeypatch.setattr(Backend, "kernel_stage", fake.stage)
    monkeypatch.setattr(Backend, "kernel_sweep", fake.sweep)
    return fake


# ------------------------------------------------------------------------------ pilot helpers
SIZE = (80, 24)
V1, V2, V3 = "20261126-020000-a1a1", "20261126-021000-b2b2", "20261126-022000-c3c3"
TINY_FORM = {"batch_size": "2", "seq_len": "16", "hidden_dim": "64", "num_layers": "2", "num_heads": "4",
             "num_kv_heads": "2", "num_steps": "6", "warmup_steps": "1"}


def screen_name(pilot) -> str:
    return type(pilot.app.screen).__name__


def fill_form(pilot, values: dict[str, str], device: str = "cpu") -> None:
    screen = pilot.app.screen
    for name, value in values.items():
        screen.query_one(f"#num-{name}").value = value
    screen.query_one("#device").value = device


def text_of(pilot, selector: str) -> str:
    return str(pilot.app.screen.query_one(selector).render())

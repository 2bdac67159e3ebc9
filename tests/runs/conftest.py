"""Fixtures of the run-engine tests.

Real runs cost seconds (mostly the trainer's torch import), so finished runs are made once per
session (`finished_pair`) and tests that need to change one work on a copy (helpers.clone_run).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tinylab.runs.store import TERMINAL, Run, RunStore

from .helpers import TINY_FLAGS, cli, output_tail, wait_for_status


# ------------------------------------------------------------------------------ session runs
@dataclass
class Pair:
    store: RunStore
    v1: Run
    v2: Run
    launch_seconds: list[float]


@pytest.fixture(scope="session")
def launched_pair(tmp_path_factory) -> Pair:
    """A v1 and a v2 run of the same tiny config, launched one after the other with
    `tinylab run --detach` (so they also serve as the two-concurrent-runs case); not waited for."""
    root = tmp_path_factory.mktemp("pair_runs")
    runs, seconds = [], []
    for version in ("v1", "v2"):
        t0 = time.perf_counter()
        proc = cli("run", "--detach", "--json", "--runs-dir", str(root), "--version", version,
                   "--num-steps", "8", "--warmup-steps", "2", *TINY_FLAGS)
        seconds.append(time.perf_counter() - t0)
        assert proc.returncode == 0, proc.stderr
        runs.append(Run(Path(json.loads(proc.stdout)["dir"])))
    return Pair(RunStore(root), runs[0], runs[1], seconds)


@pytest.fixture(scope="session")
def finished_pair(launched_pair) -> Pair:
    for run in (launched_pair.v1, launched_pair.v2):
        assert wait_for_status(run, TERMINAL, timeout=120) == "finished", output_tail(run)
    return launched_pair


def pytest_collection_modifyitems(items):
    """Run test_lifecycle.py first among these tests: its fixture launches the session pair along
    with its own five runs, so all of them start at once. (Only this folder's items move.)"""
    here = Path(__file__).parent
    mine = [i for i, item in enumerate(items) if here in item.path.parents]
    if mine:
        block = [items[i] for i in mine]
        block.sort(key=lambda item: item.path.name != "test_lifecycle.py")  # stable: keeps the rest in order
        for i, item in zip(mine, block):
            items[i] = item


@pytest.fixture
def store(tmp_path) -> RunStore:
    return RunStore(tmp_path / "runs")


@pytest.fixture
def own_process_record() -> dict:
    """pid and start time of this test process: a {pid, start_time} record that is alive."""
    me = psutil.Process(os.getpid())
    return {"pid": me.pid, "pgid": os.getpgid(me.pid), "start_time": me.create_time(), "launched_at": time.time()}

"""Test-wide set-up: Triton in its interpreter on a CPU, the run engine's session runs (shared by
tests/runs, tests/commands and tests/analysis), the profilers' stand-ins, and the kernel anatomy's
session (one worker pool, one fresh cache, the shipped configs compiled once for every target:
tests/anatomy, tests/commands/test_kernels.py and tests/exercises read them back).

TRITON_INTERPRET must be set before triton (and so kernels/) is first imported, which is why
it happens in pytest_configure, before collection, and not in a fixture; nothing this file
imports imports triton.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from support.paths import BIN, SLURM_BIN
from support.runs import TINY_FLAGS, cli, output_tail, wait_for_status
from support.slurm import FakeSlurm
from support.slow_tests import base_name, load as slow_tests
from support import slow_compiles

from tinylab.runs import slurm
from tinylab.anatomy import Cache, Pool, analyze
from tinylab.anatomy.launches import SHIPPED_CONFIGS
from tinylab.config import RunConfig
from tinylab.exercises import PROGRESS_ENV
from tinylab.profilers import base
from tinylab.runs.store import TERMINAL, Run, RunStore


@pytest.fixture(autouse=True)
def progress_file(tmp_path, monkeypatch) -> Path:
    """Exercise progress always goes to a temporary file in the tests, never to the user's own."""
    path = tmp_path / "progress" / "progress.json"
    monkeypatch.setenv(PROGRESS_ENV, str(path))
    return path


def pytest_configure(config) -> None:
    # xdist's workers get COLUMNS=80 from their start-up: the CLI would lay text out for it, where
    # a test reads what a pipe gets (a test that wants a width sets it)
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    if "TRITON_INTERPRET" not in os.environ:
        import torch

        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"


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


#: Session fixtures whose tests run in one xdist worker each, so that each is made once: the
#: compiled kernel anatomy (minutes) and the launched pair of runs.
SESSION_GROUPS = {"anatomy": {"shipped", "cache", "pool", "cache_home"}, "pair": {"launched_pair", "finished_pair"}}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items):
    """Run runs/test_launcher.py first: its fixture launches the session pair along with its own
    five runs, so all of them start at once (sort is stable: the rest keeps its order).

    Under pytest-xdist (`-n 2 --dist loadgroup`, the project's addopts: CI has two cores) each test
    is given a group that one worker runs whole: the tests of a session fixture above share its
    group (test_launcher.py goes with the pair), every other test goes with its module, whose
    module-scoped fixtures (a module's trained runs) are then made once."""
    launcher = Path(__file__).parent / "runs" / "test_launcher.py"
    items.sort(key=lambda item: item.path != launcher)
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        group = next((name for name, fixtures in SESSION_GROUPS.items() if uses & fixtures), None)
        if item.path == launcher:
            group = "pair"
        item.add_marker(pytest.mark.xdist_group(group or str(item.path.relative_to(Path(__file__).parent))))
    _mark_slow(items)


def _mark_slow(items) -> None:
    """The `slow` mark (support/slow_tests.py): the tests of the anatomy's and the pair's sessions, and
    the measured list (tests and whole modules)."""
    listed = slow_tests()
    for item in items:
        name = base_name(item.nodeid if item.nodeid.startswith("tests/") else f"tests/{item.nodeid}")
        sessions = SESSION_GROUPS["anatomy"] | SESSION_GROUPS["pair"]
        if name in listed or name.split("::", 1)[0] in listed or set(getattr(item, "fixturenames", ())) & sessions:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def store(tmp_path) -> RunStore:
    return RunStore(tmp_path / "runs")


@pytest.fixture
def own_process_record() -> dict:
    """pid and start time of this test process: a {pid, start_time} record that is alive."""
    me = psutil.Process(os.getpid())
    return {"pid": me.pid, "pgid": os.getpgid(me.pid), "start_time": me.create_time(), "launched_at": time.time()}


# ------------------------------------------------------------------------------ profilers
@pytest.fixture
def standins(monkeypatch, tmp_path) -> Path:
    """Stand-in rocprofv3/rocprof-sys-run/rocprof-compute/ncu/nsys first on PATH, GPUs of both
    vendors 'visible'; returns the log file where each stand-in appends the argv it got."""
    monkeypatch.setenv("PATH", str(BIN) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd", "nvidia"})
    log = tmp_path / "standin_argv.log"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    return log


# ------------------------------------------------------------------------------ Slurm
@pytest.fixture
def fake_slurm(monkeypatch, tmp_path) -> FakeSlurm:
    """Stand-in sbatch/squeue/sacct/scancel/scontrol/srun first on PATH, answering from a state file
    the test writes; Slurm's answers are not kept between calls (a test changes them at will)."""
    folder = tmp_path / "slurm"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(SLURM_BIN) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("SLURM_STANDIN_DIR", str(folder))
    monkeypatch.setattr(slurm, "CACHE_S", 0.0)
    monkeypatch.setattr(slurm, "_answers", {})
    monkeypatch.setattr(slurm, "_silent", {})
    return FakeSlurm(folder)


# ------------------------------------------------------------------------------ kernel anatomy
@pytest.fixture(scope="session")
def cache_home(tmp_path_factory):
    """A directory to use as XDG_CACHE_HOME: the session's cache is under tinylab/anatomy."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(scope="session")
def cache(cache_home) -> Cache:
    """The session's anatomy cache, holding the recorded reports of its slowest compiles
    (support/slow_compiles.py says why that is sound)."""
    fresh = Cache(cache_home / "tinylab" / "anatomy")
    slow_compiles.seed(fresh)
    return fresh


@pytest.fixture(scope="session")
def pool():
    with Pool() as p:
        yield p


@pytest.fixture(scope="session")
def shipped(cache, pool) -> dict:
    """SHIPPED_CONFIGS label -> (the Anatomy of that config, the config), each compiled for every
    target the installed Triton knows (tests/anatomy/test_ci_guard.py says what that costs). The
    configs are analyzed from threads sharing one pool, so its workers stay busy from first job to
    last, and a launch two configs share is compiled once."""

    def one(label: str):
        cfg = RunConfig(**SHIPPED_CONFIGS[label])
        return label, (analyze(cfg, None, cache=cache, pool=pool), cfg)

    with ThreadPoolExecutor(len(SHIPPED_CONFIGS)) as threads:
        return dict(threads.map(one, SHIPPED_CONFIGS))

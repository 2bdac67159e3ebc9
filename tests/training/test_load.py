"""Contention measured, not guessed: tiny CPU runs launched as a learner's are (tinylab.service.lab,
the supervisor rooting the run's process tree), beside busy loops this module starts and stops
itself, and beside none. Each loop ends itself after HOG_LIFE_S even if the test process dies."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Callable, Iterator

import psutil
import pytest
from support.runs import tiny_config, wait_for_status, wait_for_step

from tinylab.core.events import Summary
from tinylab.profilers import telemetry
from tinylab.profilers.base import usable_cpus
from tinylab.service.lab import Lab

#: The longest a busy loop spins, a bound for when `finally` never runs (the test process killed).
HOG_LIFE_S = 60
HOG = f"import time\nend = time.monotonic() + {HOG_LIFE_S}\nwhile time.monotonic() < end: pass"
#: How far inside the busy threshold the machine's load before and after an idle run must stay for
#: the test to judge it: the load during the run may differ a little from the load around it.
MARGIN = 0.25


@pytest.fixture
def busy_loops() -> Iterator[Callable[[], list[subprocess.Popen]]]:
    """What starts two processes spinning on the CPU (both cores of the CI machine); they stop
    with the test."""
    hogs: list[subprocess.Popen] = []

    def start() -> list[subprocess.Popen]:
        hogs.extend(subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(2))
        return hogs

    try:
        yield start
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(timeout=10)


def trained(tmp_path, steps: int, on_first_step: Callable[[], object] = lambda: None):
    """A tiny CPU run of `steps` steps: a second of training or more, since a load sample needs
    LOAD_MIN_WINDOW_S of it (tinylab.profilers.telemetry). `on_first_step` runs once it trains."""
    lab = Lab(tmp_path / "runs")
    run = lab.launch(tiny_config(num_steps=steps, warmup_steps=2))
    wait_for_step(run, timeout=60)
    on_first_step()
    assert wait_for_status(run, timeout=60) == "finished"
    return run, lab.record(run.id)


def machine_load(seconds: float = 1.0) -> float:
    """The busy cores' worth of the machine over `seconds` (no run of this test on it: the suite's
    other worker, other users)."""
    before = telemetry._busy_seconds(psutil.cpu_times())
    time.sleep(seconds)
    return (telemetry._busy_seconds(psutil.cpu_times()) - before) / seconds


def test_two_busy_loops_mark_a_tiny_cpu_run_busy(tmp_path, busy_loops):
    """The loops start at the run's first step: its start-up is not slowed, and is not sampled."""
    hogs: list[subprocess.Popen] = []
    run, record = trained(tmp_path, 80, lambda: hogs.extend(busy_loops()))
    assert len(hogs) == 2 and all(hog.poll() is None for hog in hogs)  # spinning all along
    s = record.summary
    assert s.others_cpu_cores >= 0.7, f"two busy loops read as {s.others_cpu_cores:.2f} cores"
    assert record.busy.startswith(f"other processes used {s.others_cpu_cores:.1f} CPU cores")
    assert f"machine busy   {record.busy}" in run.output_log.read_text()


def test_an_idle_run_is_not_marked_busy(tmp_path, monkeypatch):
    """One thread (OMP_NUM_THREADS=1) leaves the run a spare core, so the suite's other worker
    (`-n 2`: about a core's worth) is no contention for it. Its step times may spread wide (a tiny
    step on a CPU does): that alone marks nothing. The machine is shared, so its load is read
    before and after the run: a machine busier than the run's spare core then is not idle, and
    the test says so instead of judging."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    spare = max(0, (usable_cpus() or 1) - 1)
    before = machine_load()
    run, record = trained(tmp_path, 300)
    load = max(before, machine_load())
    if Summary(others_cpu_cores=load + MARGIN, spare_cpu_cores=spare).busy():  # near busy without the run
        pytest.skip(f"the machine was not idle: {load:.1f} cores busy beside the run, {spare} spare")
    s = record.summary
    assert run.events().of("load") and s.spare_cpu_cores == spare
    assert record.busy is None, f"others {s.others_cpu_cores:.2f} cores (before and after: {load:.2f}): {record.busy}"
    assert "machine busy" not in run.output_log.read_text()

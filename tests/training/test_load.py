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
HOG_LIFE_S = 120
HOG = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end: pass"
#: How far inside the busy threshold the machine's load before and after an idle run must stay for
#: the test to judge it: the load during the run may differ a little from the load around it.
MARGIN = 0.25


@pytest.fixture
def busy_loops() -> Iterator[Callable[[], list[subprocess.Popen]]]:
    """What starts two processes spinning on the CPU (both cores of the CI machine); they stop
    with the test."""
    hogs: list[subprocess.Popen] = []

    def start(life_s: float = HOG_LIFE_S) -> list[subprocess.Popen]:
        hogs.extend(subprocess.Popen([sys.executable, "-c", HOG, str(life_s)]) for _ in range(2))
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
    assert wait_for_status(run, timeout=HOG_LIFE_S) == "finished"
    return run, lab.record(run.id)


def machine_load(seconds: float = 1.0) -> float:
    """The busy cores' worth of the machine over `seconds` (no run of this test on it: the suite's
    other worker, other users)."""
    before = telemetry._busy_seconds(psutil.cpu_times())
    time.sleep(seconds)
    return (telemetry._busy_seconds(psutil.cpu_times()) - before) / seconds


def test_two_busy_loops_mark_a_tiny_cpu_run_busy(tmp_path, busy_loops):
    """The loops start at the run's first step: its start-up is not slowed, and is not sampled.
    30 steps are seconds of samples: 80 took over 60 s on a loaded CI machine (steps of 0.2-1.6 s),
    past the wait and the loops' own life."""
    hogs: list[subprocess.Popen] = []
    run, record = trained(tmp_path, 30, lambda: hogs.extend(busy_loops()))
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


# ------------------------------------------------------------------ verdicts under load (issue 37)
#: Sizes at which the layers are most of the work (a small vocabulary): 3 layers do about 3x 1's.
LAYERED = dict(hidden_dim=128, num_heads=4, num_kv_heads=4, seq_len=64, batch_size=4, vocab_size=256,
               num_steps=60, warmup_steps=5)  # a second or more: a load sample needs LOAD_MIN_WINDOW_S


def test_verdicts_under_two_busy_loops_never_name_a_winner_they_cannot_see(tmp_path, busy_loops, monkeypatch):
    """Issue 37's "done when", on the CI machine with two busy loops the whole time: identical tiny
    v1 runs get no verdict on samples/s or the step median, alone or repeated twice (3 runs a side
    pooled); a pair where B does 3x the work is never judged the wrong way round, and with
    `--repeat 2` it is judged right. One thread a run (the cores it may use on a shared node): torch's
    threads spinning against the loops and the suite's other worker stall whole steps, and the
    runs then spread ±191% between them (CI), which no three runs a side can see through. Whether
    a run is marked busy is what the loops took of its one core (the scheduler may give it a whole
    one): measured, so not asserted here; tests above check the mark itself."""
    from tinylab.service.repeat import Repeat, RepeatDone

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    busy_loops(240)
    lab = Lab(tmp_path / "runs")

    def launched(**changes) -> str:
        run = lab.launch(tiny_config(**{**LAYERED, "num_layers": 1, **changes}))
        assert wait_for_status(run, timeout=120) == "finished", run.output_log.read_text()[-800:]
        return run.id

    def repeated(a: str, b: str):
        done = [e for e in Repeat(lab, a, b, 2).run(poll_s=0.2) if isinstance(e, RepeatDone)][0]
        return done.comparison

    def verdicts(result) -> set:
        return {result.row("samples_per_s").better, result.row("step_ms_median").better}

    a, same, triple = launched(), launched(), launched(num_layers=3)
    alone = lab.compare(a, same)
    for record in (lab.record(a), lab.record(same)):  # the loops are seen; busy is what they took of the run's core
        assert record.summary.others_cpu_cores >= 0.7, record.summary
    assert verdicts(alone) == {None}, alone.row("samples_per_s").interval
    assert verdicts(lab.compare(a, triple)) <= {None, "a"}, "never the wrong way round"
    pooled = repeated(a, same)
    assert pooled.row("samples_per_s").interval.runs == (3, 3) and verdicts(pooled) == {None}
    right = repeated(a, triple)
    assert verdicts(right) == {"a"}, right.row("samples_per_s").interval


def test_a_quiet_pair_of_3x_work_is_judged_right_outright(tmp_path, monkeypatch):
    """On a quiet machine one pair is enough for 3x: "never sure" is no answer. The machine is shared
    (the suite's other worker, other users): when it is not quiet the test says so instead."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    spare = max(0, (usable_cpus() or 1) - 1)
    before = machine_load()
    lab = Lab(tmp_path / "runs")
    runs = [lab.launch(tiny_config(**{**LAYERED, "num_layers": layers})) for layers in (1,)]
    assert wait_for_status(runs[0], timeout=120) == "finished"
    runs.append(lab.launch(tiny_config(**{**LAYERED, "num_layers": 3})))
    assert wait_for_status(runs[1], timeout=120) == "finished"
    load = max(before, machine_load())
    result = lab.compare(runs[0].id, runs[1].id)
    if result.a.busy or result.b.busy or Summary(others_cpu_cores=load + MARGIN, spare_cpu_cores=spare).busy():
        pytest.skip(f"the machine was not quiet: {load:.1f} cores busy beside the runs ({result.a.busy or result.b.busy})")
    assert result.row("samples_per_s").better == result.row("step_ms_median").better == "a", \
        result.row("samples_per_s").interval

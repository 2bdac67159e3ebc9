"""`compare --repeat` (tinylab/service/repeat.py): the interleaving, `auto`'s two ends (settled,
budget spent), a failed repeat left out of the pool, the checks before anything launches, and a
stop that cancels the run in flight. Launches are stand-ins (support/repeat.py) but for the stop,
whose run is a real process."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from support.repeat import FakeLaunches, written_run
from support.runs import tiny_config

from tinylab.core.errors import UserError
from tinylab.runs.store import Run
from tinylab.service.lab import Lab
from tinylab.service.machine import Machine
from tinylab.service.repeat import Repeat, RepeatDone, RepeatEnded, RepeatStarted, interleaved


@pytest.fixture
def lab(tmp_path) -> Lab:
    return Lab(tmp_path / "runs", machine=lambda: Machine(cpus=2, host_memory_bytes=8 << 30))


def launches(monkeypatch, lab: Lab, a_figures, b_figures, a=100.0, b=100.0):
    run_a, run_b = written_run(lab.store.root, a), written_run(lab.store.root, b)
    fake = FakeLaunches.of(run_a, run_b, list(a_figures), list(b_figures)).patch(monkeypatch, Lab)
    return run_a, run_b, fake


def test_the_pairs_alternate_their_order():
    """After A B: B A, A B, B A; each side runs right after the other as often as after itself."""
    assert interleaved("a", 3) == ["b", "a", "a", "b", "b", "a"]
    assert interleaved("b", 2) == ["a", "b", "b", "a"]
    whole = ["a", "b", *interleaved("a", 4)]
    after_other = sum(1 for x, y in zip(whole, whole[1:]) if x != y)
    assert after_other == len(whole) // 2  # a plain A B A B ... would be len - 1


def test_repeat_n_launches_interleaved_from_the_side_that_ran_last(monkeypatch, lab):
    a, b, fake = launches(monkeypatch, lab, [101.0, 99.0], [100.0, 102.0])
    job = Repeat(lab, a.id, b.id, 2)
    events = list(job.run(poll_s=0.01))
    assert [side for side, _ in fake.launched] == ["b", "a", "a", "b"]
    cfgs = [cfg for _, cfg in fake.launched]
    assert all(cfg.seed == a.config().seed for cfg in cfgs)
    assert cfgs[0].label.startswith("repeat 1 of ") and cfgs[3].label.startswith("repeat 2 of ")
    assert [type(e) for e in events] == [RepeatStarted, RepeatEnded] * 4 + [RepeatDone]
    done = events[-1]
    assert [len(ids) for ids in done.comparison.pooled] == [3, 3]
    assert done.comparison.row("samples_per_s").better is None
    assert done.ended.startswith("done: 2 more runs a side; ")
    line = events[1].line()
    assert line.startswith("repeat 1/4: B ") and " finished, samples/s 100.0 -> B/A " in line, line


def test_auto_stops_once_the_interval_settles(monkeypatch, lab):
    """B three times as fast: one more pair settles it (a lone pair of 3x is already named, so
    the given pair here is close: 1.2x)."""
    a, b, fake = launches(monkeypatch, lab, [100.0] * 5, [300.0] * 5, a=100.0, b=120.0)
    job = Repeat(lab, a.id, b.id, None)
    assert job.compare().settled() is None
    done = list(job.run(poll_s=0.01))[-1]
    assert done.ended == "settled: the 99% interval excludes 1: B is better"
    assert len(fake.launched) < 2 * 5 and len(fake.launched) % 2 == 0
    assert done.comparison.row("samples_per_s").better == "b"


def test_auto_stops_at_the_budget_and_says_how_unsure(monkeypatch, lab):
    a, b, fake = launches(monkeypatch, lab, [60.0, 140.0, 70.0], [130.0, 65.0, 150.0])
    done = list(Repeat(lab, a.id, b.id, None, max_runs=3).run(poll_s=0.01))[-1]
    assert len(fake.launched) == 4  # 3 runs a side in all, the given two included
    assert done.ended.startswith("budget spent: 3 runs a side, still not sure: spread ±")
    assert [len(ids) for ids in done.comparison.pooled] == [3, 3]


def test_a_failed_repeat_is_reported_and_not_pooled(monkeypatch, lab):
    a, b, fake = launches(monkeypatch, lab, [100.0], [None])
    events = list(Repeat(lab, a.id, b.id, 1).run(poll_s=0.01))
    failed = next(e for e in events if isinstance(e, RepeatEnded) and e.side == "b")
    assert failed.status == "failed" and "failed (RuntimeError: boom), not pooled" in failed.line()
    done = events[-1]
    assert len(done.comparison.pooled[1]) == 1 and len(done.comparison.pooled[0]) == 2
    assert {"side": "b", "id": failed.run_id, "status": "failed"} in done.to_json()["launched"]
    assert lab.run(failed.run_id).status() == "failed"  # it stays in the store


def test_nothing_launches_when_a_config_cannot_start_or_a_run_is_live(monkeypatch, lab):
    a, _, fake = launches(monkeypatch, lab, [], [])
    gpu = written_run(lab.store.root, 100.0, tiny_config(device="cuda"))
    with pytest.raises(UserError, match=r"run B \(.*\)'s config cannot start on this machine: .*GPU"):
        Repeat(lab, a.id, gpu.id, 2)
    live = written_run(lab.store.root, None)
    (live.dir / "events.jsonl").write_text("")
    me = psutil.Process()
    (live.dir / "process.json").write_text(
        f'{{"pid": {me.pid}, "pgid": {os.getpgid(0)}, "start_time": {me.create_time()}, "launched_at": 1.0}}')
    with pytest.raises(UserError, match="is still running: repeat it once it has ended"):
        Repeat(lab, live.id, a.id, 1)
    with pytest.raises(UserError, match="--max-runs must be at least 2"):
        Repeat(lab, a.id, a.id, None, max_runs=1)
    assert fake.launched == []


def test_a_stop_cancels_the_run_in_flight(monkeypatch, lab):
    """stop() while a repeat trains: the run is cancelled (its process group signalled), stays in
    the store as cancelled, and is not pooled."""
    a, b = written_run(lab.store.root, 100.0), written_run(lab.store.root, 100.0)
    procs = []

    def launch(self, cfg):
        run = written_run(lab.store.root, 100.0, cfg)
        (run.dir / "events.jsonl").write_text("")  # no summary yet: training
        # the launcher signals only a group whose process names its run: as a supervisor's argv does
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(run.dir)],
                                start_new_session=True)
        procs.append(proc)
        (run.dir / "process.json").write_text(
            f'{{"pid": {proc.pid}, "pgid": {proc.pid}, "start_time": {psutil.Process(proc.pid).create_time()}, '
            f'"launched_at": {time.time()}}}')
        return run

    monkeypatch.setattr(Lab, "launch", launch)
    polls = itertools.count()
    job = Repeat(lab, a.id, b.id, 2)
    try:  # a few polls into the first repeat
        events = list(job.run(poll_s=0.01, stop=lambda: bool(procs) and next(polls) > 3))
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    done = events[-1]
    assert isinstance(done, RepeatDone) and done.ended == "stopped after 1 of 4 runs (the last one cancelled, not pooled)"
    assert len(procs) == 1 and procs[0].wait(5) is not None
    assert done.launched[0].status == "cancelled" and lab.run(done.launched[0].run_id).status() == "cancelled"
    assert [len(ids) for ids in done.comparison.pooled] == [1, 1]

"""Real detached runs reaching every status: running, finished, failed, cancelled, lost.

Long-running runs are started together once for the module (their torch imports overlap), each
test then ends its own run a different way and checks the status and the processes left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tinylab.config import RunConfig
from tinylab.runs.follow import follow
from tinylab.runs.launcher import cancel, launch
from tinylab.runs.store import TERMINAL, Run

from .helpers import (
    FOREVER_STEPS,
    REPO,
    TINY,
    TINY_FLAGS,
    cli,
    output_tail,
    process_gone,
    run_pids,
    tiny_config,
    wait_for,
    wait_for_status,
    wait_for_step,
)

LIVE = ("cancel", "kill_all", "kill_trainer", "kill_supervisor")


@pytest.fixture(scope="module")
def live_runs(tmp_path_factory):
    """One endless run per test below, each already inside its training loop."""
    from tinylab.runs.store import RunStore

    store = RunStore(tmp_path_factory.mktemp("live_runs"))
    runs = {name: launch(store, tiny_config(num_steps=FOREVER_STEPS, label=name)) for name in LIVE}
    try:
        for run in runs.values():
            wait_for_step(run, timeout=120)
        yield runs
    finally:  # whatever a failed test left behind
        for run in runs.values():
            if run.is_alive():
                cancel(run, grace_s=(0.5, 0.5))


def test_live_runs_are_running_with_their_own_process_group(live_runs):
    for run in live_runs.values():
        assert run.status() == "running"
        supervisor, trainer = run_pids(run)
        assert os.getpgid(supervisor) == supervisor == run.process["pgid"]
        assert os.getpgid(trainer) == supervisor, "the trainer must be in the group that cancel signals"
        assert os.getsid(supervisor) == supervisor, "a new session: closing the terminal sends it no SIGHUP"
        assert os.getpgid(supervisor) != os.getpgid(0)


def test_cancel_stops_the_whole_group_and_records_cancelled(live_runs):
    run = live_runs["cancel"]
    supervisor, trainer = run_pids(run)
    t0 = time.monotonic()
    assert cancel(run) is True
    print(f"cancel took {time.monotonic() - t0:.1f} s")
    assert run.status() == "cancelled"
    assert process_gone(supervisor) and process_gone(trainer)
    log = run.events()
    assert log.last("error")["type"] == "KeyboardInterrupt", "SIGINT reached the trainer first"
    assert log.last("exit")["returncode"] != 0  # 130 after SIGINT; -15 when a loaded machine needs SIGTERM
    assert cancel(run) is False, "a second cancel finds nothing to stop"


def test_killing_supervisor_and_trainer_is_lost(live_runs):
    run = live_runs["kill_all"]
    supervisor, trainer = run_pids(run)
    os.kill(supervisor, signal.SIGKILL)
    os.kill(trainer, signal.SIGKILL)
    assert wait_for_status(run, TERMINAL, timeout=20) == "lost"
    assert run.events().last("exit") is None and run.events().last("summary") is None


def test_killing_the_trainer_is_failed_with_the_signal_recorded(live_runs):
    run = live_runs["kill_trainer"]
    supervisor, trainer = run_pids(run)
    os.kill(trainer, signal.SIGKILL)
    assert wait_for_status(run, TERMINAL, timeout=20) == "failed"
    exit_event = run.events().last("exit")
    assert exit_event["returncode"] == -signal.SIGKILL and exit_event["signal"] == "SIGKILL"
    assert process_gone(supervisor)


def test_killing_only_the_supervisor_leaves_the_run_running_and_cancellable(live_runs):
    """The trainer keeps training when its supervisor dies; the run must not look lost, and
    cancel must still reach it (it shares the process group)."""
    run = live_runs["kill_supervisor"]
    supervisor, trainer = run_pids(run)
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: process_gone(supervisor), 10, "the supervisor to die")
    steps = len(run.events().of("step"))
    wait_for(lambda: len(run.events().of("step")) > steps, 30, "another step after the supervisor died", run)
    assert run.status() == "running"
    assert cancel(run, grace_s=(3.0, 2.0)) is True
    assert run.status() == "cancelled"
    assert process_gone(trainer)


def test_trainer_failure_is_failed_with_its_error(store, monkeypatch):
    """A config.json the trainer rejects (as after a hand edit): launched unvalidated, it must end
    `failed` with the trainer's error and exit code, not `lost` or `finished`."""
    monkeypatch.setattr(RunConfig, "validate", lambda self: self)
    run = launch(store, RunConfig(**{**TINY, "num_heads": 5}))  # 5 does not divide hidden 64
    assert wait_for_status(run, TERMINAL, timeout=60) == "failed"
    error = run.events().last("error")
    assert error["type"] == "ConfigError" and "--num-heads 5 must divide --hidden-dim 64" in error["message"]
    assert run.events().last("exit")["returncode"] == 2
    assert "error: ConfigError" in output_tail(run)


def test_killing_the_launching_process_does_not_stop_the_run(tmp_path):
    """`tinylab run` (attached) is SIGKILLed mid-run, like a dropped SSH session; the run carries on
    to `finished`, and `tinylab follow last` from another terminal streams it to its end."""
    runs_dir = tmp_path / "runs"
    launcher_proc = subprocess.Popen(
        [sys.executable, "-m", "tinylab", "run", "--runs-dir", str(runs_dir), *TINY_FLAGS,
         "--num-steps", "12", "--warmup-steps", "2"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = launcher_proc.stdout.readline()  # "run <id>  (<dir>)", printed right after the launch
        assert first.startswith("run "), first
        run = Run(runs_dir / first.split()[1])
        wait_for_step(run, timeout=90)
    finally:
        launcher_proc.kill()
        launcher_proc.wait(timeout=10)
    assert launcher_proc.returncode == -signal.SIGKILL
    assert run.status() == "running", "the launcher's death must not reach the run"
    followed = cli("follow", "last", "--runs-dir", str(runs_dir), timeout=120)
    assert followed.returncode == 0, followed.stderr
    assert "step   12/12" in followed.stdout and "summary (medians after warm-up)" in followed.stdout
    assert f"run {run.id} finished" in followed.stderr
    assert run.status() == "finished"
    assert len(run.events().of("step")) == 12


def test_follow_returns_the_final_status_of_a_finished_run(finished_pair):
    import io

    out = io.StringIO()
    assert follow(finished_pair.v1, out=out) == "finished"
    assert out.getvalue() == finished_pair.v1.output_log.read_text()


def test_two_concurrent_runs_both_finish_intact(finished_pair):
    """The session's v1 and v2 ran at the same time: distinct folders, no interleaved lines,
    each log complete and in order."""
    v1, v2 = finished_pair.v1, finished_pair.v2
    assert v1.id != v2.id and v1.dir != v2.dir
    assert {r.id for r in finished_pair.store.list()} >= {v1.id, v2.id}
    assert v1.process["pid"] != v2.process["pid"]
    for run, version in ((v1, "v1"), (v2, "v2")):
        log = run.events()
        assert log.corrupt_lines == [] and not log.partial_tail
        assert [e["event"] for e in log.events] == ["start"] + ["step"] * 8 + ["summary", "exit"]
        assert [e["step"] for e in log.of("step")] == list(range(8))
        assert log.last("start")["config"]["version"] == version
        assert log.last("exit")["returncode"] == 0
        assert f"tinylab {version} on" in output_tail(run, 100_000)
    overlap = min(v1.events().last("exit")["time"], v2.events().last("exit")["time"]) - max(
        v1.events().last("start")["time"], v2.events().last("start")["time"])
    assert overlap > 0, "the two runs did not actually run at the same time"

"""Real detached runs reaching every status: running, finished, failed, cancelled, lost.

The module's runs start together once (their torch imports overlap); each test then ends its
own run a different way and checks the status and the processes left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.runs import (
    FOREVER_STEPS,
    REPO,
    TINY,
    TINY_FLAGS,
    cli,
    output_tail,
    process_gone,
    run_pids,
    make_run,
    tiny_config,
    wait_for,
    wait_for_status,
    wait_for_step,
)

from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.runs.launcher import cancel, launch, run_group
from tinylab.runs.store import TERMINAL, Run, RunStore, write_json

LIVE = ("cancel", "kill_all", "kill_trainer", "kill_supervisor")
ATTACHED_STEPS = 20


@dataclass
class Attached:
    """A run started by an attached `tinylab run` that was SIGKILLed after the run's first step,
    with a `tinylab follow last` started from "another terminal" while the run was starting up."""

    run: Run
    killed_at: float
    launcher: subprocess.Popen
    follower: subprocess.Popen


@dataclass
class ModuleRuns:
    live: dict[str, Run]
    attached: Attached


@pytest.fixture(scope="module")
def runs(tmp_path_factory, launched_pair):
    """Every real run of this module, started with the session pair so that their torch imports
    overlap: one endless run per live-run test, each already inside its training loop (and then
    paused), and the attached one."""
    root = tmp_path_factory.mktemp("lifecycle")
    attached_dir = root / "attached"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "tinylab", "run", "--runs-dir", str(attached_dir), *TINY_FLAGS,
         "--num-steps", str(ATTACHED_STEPS), "--warmup-steps", "2"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    store = RunStore(root / "live")
    live = {name: launch(store, tiny_config(num_steps=FOREVER_STEPS, label=name)) for name in LIVE}
    follower = None
    try:
        first = launcher.stdout.readline()  # "run <id>  (<dir>)", printed right after the launch
        assert first.startswith("run "), first
        attached = Run(attached_dir / first.split()[1])
        follower = subprocess.Popen([sys.executable, "-m", "tinylab", "follow", "last", "--runs-dir", str(attached_dir)],
                                    cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_step(attached, timeout=120)
        launcher.kill()
        killed_at = time.time()
        launcher.wait(timeout=10)
        pause_when_training(list(live.values()))
        yield ModuleRuns(live, Attached(attached, killed_at, launcher, follower))
    finally:  # whatever a failed test left behind
        launcher.kill()
        if follower is not None:
            follower.kill()
        for run in live.values():
            if run.is_alive():
                resume(run)
                cancel(run, grace_s=(0.5, 0.5))


def pause_when_training(waiting: list[Run]) -> None:
    """SIGSTOP each run's process group once it is inside its training loop: runs that are done
    starting then leave the two CPUs to those still importing torch. Tests resume their own."""
    def pause_ready() -> bool:
        for run in list(waiting):
            if run.events().last("step"):
                os.killpg(run.process["pgid"], signal.SIGSTOP)
                waiting.remove(run)
        return not waiting

    wait_for(pause_ready, 120, "a step event of every live run")


def resume(run: Run) -> Run:
    os.killpg(run.process["pgid"], signal.SIGCONT)
    return run


@pytest.fixture
def live_runs(runs) -> dict[str, Run]:
    return runs.live


def test_live_runs_are_running_with_their_own_process_group(live_runs):
    for run in live_runs.values():
        assert run.status() == "running"  # paused (SIGSTOP) between tests, and alive
        supervisor, trainer = run_pids(run)
        assert os.getpgid(supervisor) == supervisor == run.process["pgid"]
        assert os.getpgid(trainer) == supervisor, "the trainer must be in the group that cancel signals"
        assert os.getsid(supervisor) == supervisor, "a new session: closing the terminal sends it no SIGHUP"
        assert os.getpgid(supervisor) != os.getpgid(0)


def test_cancel_stops_the_whole_group_and_records_cancelled(live_runs):
    run = resume(live_runs["cancel"])
    supervisor, trainer = run_pids(run)
    t0 = time.monotonic()
    proc = cli("cancel", run.id, "--runs-dir", str(run.dir.parent))
    print(f"tinylab cancel took {time.monotonic() - t0:.1f} s")
    assert proc.returncode == 0 and proc.stdout.strip() == f"run {run.id} cancelled", proc.stderr
    assert run.status() == "cancelled"
    assert process_gone(supervisor) and process_gone(trainer)
    log = run.events()
    error = log.last("error")
    assert error["type"] == "KeyboardInterrupt", "SIGINT reached the trainer first"
    assert error["message"].startswith("interrupted by SIG") and error["traceback"] == "", error
    assert log.last("exit")["returncode"] != 0  # 130 after SIGINT; -15 when a loaded machine needs SIGTERM
    assert cancel(run) is False, "a second cancel finds nothing to stop"


def test_killing_supervisor_and_trainer_is_lost(live_runs):
    run = resume(live_runs["kill_all"])
    supervisor, trainer = run_pids(run)
    os.kill(supervisor, signal.SIGKILL)
    os.kill(trainer, signal.SIGKILL)
    assert wait_for_status(run, TERMINAL, timeout=20) == "lost"
    assert run.events().last("exit") is None and run.events().last("summary") is None


def test_killing_the_trainer_is_failed_with_the_signal_recorded(live_runs):
    run = resume(live_runs["kill_trainer"])
    supervisor, trainer = run_pids(run)
    os.kill(trainer, signal.SIGKILL)
    assert wait_for_status(run, TERMINAL, timeout=20) == "failed"
    exit_event = run.events().last("exit")
    assert exit_event["returncode"] == -signal.SIGKILL and exit_event["signal"] == "SIGKILL"
    assert process_gone(supervisor)


def test_killing_only_the_supervisor_leaves_the_run_running_and_cancellable(live_runs):
    """The trainer keeps training when its supervisor dies; the run must not look lost, and
    cancel must still reach it (it shares the process group)."""
    run = resume(live_runs["kill_supervisor"])
    supervisor, trainer = run_pids(run)
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: process_gone(supervisor), 10, "the supervisor to die")
    steps = len(run.events().of("step"))
    wait_for(lambda: len(run.events().of("step")) > steps, 30, "another step after the supervisor died", run)
    assert run.status() == "running"
    assert cancel(run) is True
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
        # the load samples (twice a second) interleave with the steps
        assert [e["event"] for e in log.events if e["event"] != "load"] == ["start"] + ["step"] * 8 + ["summary", "exit"]
        assert log.of("load") and all(e["cpus"] >= 1 for e in log.of("load"))
        assert [e["step"] for e in log.of("step")] == list(range(8))
        assert log.last("start")["config"]["version"] == version
        assert log.last("exit")["returncode"] == 0
        assert f"tinylab {version} on" in output_tail(run, 100_000)
    overlap = min(v1.events().last("exit")["time"], v2.events().last("exit")["time"]) - max(
        v1.events().last("start")["time"], v2.events().last("start")["time"])
    assert overlap > 0, "the two runs did not actually run at the same time"


def test_killing_the_launching_process_does_not_stop_the_run(runs):
    """`tinylab run` (attached) was SIGKILLed mid-run, like a dropped SSH session: the run carries
    on to `finished`, and `tinylab follow last` streams it to its end. (Last in the module: the
    live runs above are gone by now, so this run has the CPU.)"""
    att = runs.attached
    assert att.launcher.returncode == -signal.SIGKILL
    out, err = att.follower.communicate(timeout=120)
    assert att.follower.returncode == 0, err
    assert f"following run {att.run.id} (running)" in err and f"run {att.run.id} finished" in err
    assert f"step   {ATTACHED_STEPS}/{ATTACHED_STEPS}" in out and "summary (medians after warm-up)" in out
    assert att.run.status() == "finished"
    assert len(att.run.events().of("step")) == ATTACHED_STEPS
    assert att.run.events().last("summary")["time"] > att.killed_at, "the launcher must die before the run ends"


def test_the_trainer_never_imports_from_the_callers_folder(tmp_path):
    """A `models/` package or a `torch.py` in the folder a run is started from must not run."""
    import subprocess

    from support.runs import TINY_FLAGS

    sentinel = tmp_path / "foreign-code-ran"
    (tmp_path / "models").mkdir()
    for name in ("models/__init__.py", "torch.py", "kernels.py", "tinylab_probe.py"):
        (tmp_path / name).write_text(f"open({str(sentinel)!r}, 'a').write({name!r})\nraise SystemExit(7)\n")
    # the console script, as users start it (`python -m` would put the folder first for the CLI itself)
    proc = subprocess.run([str(Path(sys.executable).with_name("tinylab")), "train", *TINY_FLAGS, "--num-steps", "3",
                           "--warmup-steps", "1", "--runs-dir", str(tmp_path / "store")],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not sentinel.exists(), sentinel.read_text()


# ------------------------------------------------------------------------------ cancel signals only the run's group
@pytest.fixture
def stranger():
    """A process leading its own session that has nothing to do with any run."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def _process_record(pid: int, **extra) -> dict:
    import psutil

    return {"pid": pid, "pgid": pid, "start_time": psutil.Process(pid).create_time(), **extra}


@pytest.fixture
def signals(monkeypatch) -> list:
    """os.killpg as the launcher calls it, recorded instead of sent (a regression must not signal
    the test's own group)."""
    from tinylab.runs import launcher

    sent: list = []
    monkeypatch.setattr(launcher.os, "killpg", lambda pgid, sig: sent.append((pgid, sig)))
    return sent


def _refused(run: Run, signals: list, *fragments: str) -> None:
    with pytest.raises(UserError) as caught:
        cancel(run, grace_s=(0.2, 0.2))
    assert "nothing signalled" in str(caught.value)
    for fragment in fragments:
        assert fragment in str(caught.value)
    assert not (run.dir / "cancel.json").exists() and signals == []


def test_cancel_refuses_a_group_that_is_not_the_runs(tmp_path, stranger, signals):
    """process.json names a live process and its group, but that process was never started for
    this run (an edited or stale record): nothing may be signalled."""
    run = make_run(tmp_path, "20260101-000000-aaaa", [])
    write_json(run.dir / "process.json", _process_record(stranger.pid))
    _refused(run, signals, "not in it")
    assert stranger.poll() is None, "the stranger must still be alive"


def test_cancel_refuses_a_recorded_group_other_than_the_supervisors(tmp_path, stranger, signals):
    run = make_run(tmp_path, "20260101-000000-aaaa", [])
    write_json(run.dir / "process.json", _process_record(stranger.pid, pgid=os.getpgid(0)))
    _refused(run, signals, "not the group tinylab started")
    write_json(run.dir / "process.json", _process_record(stranger.pid, pgid=True))
    _refused(run, signals, "not the group tinylab started")
    assert stranger.poll() is None


def test_cancel_refuses_this_commands_own_group(tmp_path, signals):
    run = make_run(tmp_path, "20260101-000000-aaaa", [])
    group = os.getpgid(0)
    write_json(run.dir / "process.json", {"pid": group, "pgid": group, "start_time": 0.0})
    write_json(run.dir / "trainer.json", _process_record(os.getpid()))  # alive: the run counts as running
    _refused(run, signals, "this command's own group")


def test_cancel_signals_a_group_started_for_the_run(tmp_path):
    run = make_run(tmp_path, "20260101-000000-aaaa", [])
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(run.dir)],
                            start_new_session=True)
    try:
        write_json(run.dir / "process.json", _process_record(proc.pid))
        assert run_group(run) == proc.pid
        assert cancel(run, grace_s=(0.5, 0.5)) is True
        assert proc.wait(timeout=10) is not None and (run.dir / "cancel.json").exists()
    finally:
        proc.kill()
        proc.wait()


def test_cancel_never_writes_through_a_planted_cancel_json_link(tmp_path):
    """A neighbour with write access plants cancel.json as a link to a victim file: the cancel
    replaces the link with its own record; the victim is untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    run = make_run(tmp_path / "runs", "20260101-000000-aaaa", [])
    (run.dir / "cancel.json").symlink_to(victim)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(run.dir)],
                            start_new_session=True)
    try:
        import psutil

        wait_for(lambda: any(run.id in arg for arg in psutil.Process(proc.pid).cmdline()), 10, "the stand-in's argv")
        write_json(run.dir / "process.json", _process_record(proc.pid))
        assert cancel(run, grace_s=(0.5, 0.5)) is True
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    assert victim.read_text() == "precious"
    assert not (run.dir / "cancel.json").is_symlink() and run.cancel_record is not None


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (root only): a real full disk, not a simulated one."""
    mount = tmp_path / "small"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.decode().strip() or proc.returncode})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder: Path) -> None:
    """Take every free byte of the filesystem `folder` is on."""
    with open(folder / "ballast", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 16))
                fh.flush()
        except OSError:
            pass


def test_a_disk_that_fills_during_the_run_ends_it_failed_with_the_reason(small_disk):
    store = RunStore(small_disk / "runs")
    run = launch(store, tiny_config(num_steps=FOREVER_STEPS))
    wait_for_step(run)
    fill(small_disk)
    assert wait_for_status(run, TERMINAL, timeout=60) == "failed"
    error = run.events().last("error")
    assert error is not None and "the disk is full" in error["message"], run.events().events[-3:]
    assert run.events().last("exit") is not None


def test_no_run_starts_on_a_full_disk(small_disk):
    fill(small_disk)
    proc = cli("run", "--detach", *TINY_FLAGS, "--runs-dir", str(small_disk / "runs"))
    assert proc.returncode == 2 and proc.stderr.strip().endswith("the disk is full"), proc.stderr
    assert not any((small_disk / "runs").glob("*/config.json"))

"""events.jsonl's readers and writer under stress: huge logs read at their ends, a full disk."""

from __future__ import annotations

import errno
import json
import os

import pytest

from tinylab.core import eventlog
from tinylab.core.eventlog import EventWriter, read_events, sample_steps
from tinylab.core.events import ErrorEvent, ExitEvent, StepEvent
from tinylab.core.safeio import RESERVE, reserve_space


def write_log(path, steps: int, pad: int = 0) -> None:
    lines = [{"event": "start", "time": 1.0, "device": "cpu", "config": {}}]
    lines += [{"event": "step", "time": 2.0, "step": i, "loss": 5.0, "step_ms": 1.0, "warmup": i < 3, "pad": "x" * pad}
              for i in range(steps)]
    lines += [{"event": "summary", "time": 3.0, "samples_per_s": 100.0, "steps": steps},
              {"event": "exit", "time": 4.0, "returncode": 0, "signal": None}]
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))


@pytest.fixture
def small_limits(monkeypatch):
    """The huge-log path at test size: logs past 64 KiB are read at a 4 KiB head and a 16 KiB tail."""
    monkeypatch.setattr(eventlog, "FULL_READ_LIMIT", 64 << 10)
    monkeypatch.setattr(eventlog, "HEAD_BYTES", 4 << 10)
    monkeypatch.setattr(eventlog, "TAIL_BYTES", 16 << 10)


def test_a_huge_log_is_read_at_its_head_and_tail(tmp_path, small_limits):
    path = tmp_path / "events.jsonl"
    write_log(path, 5000, pad=40)
    log = read_events(path)
    assert log.skipped_bytes > 0 and log.last("start") is not None and log.last("summary")["steps"] == 5000
    steps = log.of("step")
    assert steps[-1]["step"] == 4999 and len(steps) < 5000
    assert log.corrupt_lines == [] and log.corrupt_unnumbered == 0


def test_a_small_log_is_read_whole(tmp_path):
    path = tmp_path / "events.jsonl"
    write_log(path, 50)
    log = read_events(path)
    assert log.skipped_bytes == 0 and len(log.of("step")) == 50


def test_sample_steps_keeps_a_bounded_evenly_spread_sample(tmp_path):
    path = tmp_path / "events.jsonl"
    write_log(path, 10_000)
    steps = sample_steps(path, max_points=100)
    assert 90 <= len(steps) <= 102
    assert steps[0].step == 0 and steps[-1].step == 9999 and all(a.step < b.step for a, b in zip(steps, steps[1:]))


def test_links_and_fifos_are_an_empty_log_with_a_problem(tmp_path):
    link = tmp_path / "events.jsonl"
    link.symlink_to("/dev/zero")
    assert read_events(link).problem.endswith("is a symbolic link; not followed") and sample_steps(link) == []
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert "FIFO" in read_events(fifo).problem


class FullDisk:
    """os.write that fails with ENOSPC until the run folder's reserve is gone."""

    def __init__(self, run_dir, real):
        self.run_dir, self.real = run_dir, real

    def __call__(self, fd, data):
        if (self.run_dir / RESERVE).exists():
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.real(fd, data)


def test_on_a_full_disk_a_step_fails_but_the_last_words_use_the_reserve(tmp_path, monkeypatch):
    reserve_space(tmp_path)
    writer = EventWriter(tmp_path / "events.jsonl")
    writer.emit(StepEvent(step=0, loss=1.0))
    monkeypatch.setattr(os, "write", FullDisk(tmp_path, os.write))
    with pytest.raises(OSError) as info:
        writer.emit(StepEvent(step=1, loss=1.0))
    assert info.value.errno == errno.ENOSPC
    writer.emit(ErrorEvent(type="OSError", message="the disk is full", traceback=""))
    writer.emit(ExitEvent(returncode=1, signal=None))
    writer.close()
    log = read_events(tmp_path / "events.jsonl")
    assert [e["event"] for e in log.events] == ["step", "error", "exit"] and log.corrupt_lines == []


def test_last_words_end_a_fragment_a_failed_write_left(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "step", "step": 0, "loss": 1.0}\n{"event": "step", "st')
    with EventWriter(path) as writer:
        writer.emit(ExitEvent(returncode=1, signal=None))
    log = read_events(path)
    assert [e["event"] for e in log.events] == ["step", "exit"] and log.corrupt_lines == [2]

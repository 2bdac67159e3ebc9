"""The Run screen's file readers: chunked log tailing and the run feed."""

from __future__ import annotations

from pathlib import Path

from tinylab.runs.store import Run
from tinylab.tui.feed import LogTail, RunFeed, clean_line

from .fakes import KERNELS, make_run


def test_lines_split_on_any_newline_and_keep_a_partial_tail(tmp_path: Path):
    log = tmp_path / "output.log"
    log.write_bytes(b"one\r\ntwo\rthree\npart")
    tail = LogTail(log)
    assert tail.poll() == ["one", "two", "three"]
    with open(log, "ab") as fh:
        fh.write(b"ial\r")
    assert tail.poll() == []  # "\r" may be half of "\r\n"
    with open(log, "ab") as fh:
        fh.write(b"\nnext\n")
    assert tail.poll() == ["partial", "next"]


def test_a_carriage_return_only_line_longer_than_the_cap_is_flushed_and_cut(tmp_path: Path):
    log = tmp_path / "output.log"
    log.write_bytes(b"x" * 100_000)
    tail = LogTail(log, max_line=64 * 1024, line_limit=50)
    (line,) = tail.poll()
    assert line.startswith("x" * 50) and "+99,950 chars" in line


def test_escape_sequences_and_control_bytes_are_stripped():
    assert clean_line("\x1b[1;32mok\x1b[0m\x07 done\x1b]0;title\x07\tx", 100) == "ok done x"  # the tab expands to the next 4-column stop


def test_a_flood_is_skipped_to_the_last_backlog_with_one_marker(tmp_path: Path):
    log = tmp_path / "output.log"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(200_000)))
    tail = LogTail(log, backlog=10_000)
    lines = tail.poll()
    assert lines[0].startswith("… ") and "MB of earlier output skipped" in lines[0]
    assert lines[-1] == "line 199999" and len(lines) < 2000
    assert all(line.startswith("line ") for line in lines[1:])


def test_feed_reports_the_end_once_with_its_record(tmp_path: Path):
    run = Run(make_run(tmp_path, "20261126-020000-a1a1", steps=5))
    update = RunFeed(run).poll()
    assert update.ended and update.status == "finished"
    assert [s.step for s in update.steps] == [0, 1, 2, 3, 4] and update.start is not None and update.profiled
    assert update.record.summary.steps == 5
    assert update.lines[-1].startswith("  samples/s")


def test_fake_kernel_categories_match_the_categorizer():
    from tinylab.core.categories import categorize

    assert [categorize(name) for name, *_ in KERNELS] == [category for *_, category in KERNELS]


def test_feed_carries_the_counter_pass(tmp_path: Path):
    """A counter-pass profiler's `pass` events reach the Run screen, which shows "counter pass k of N"."""
    import json

    run = Run(make_run(tmp_path, "20261126-020000-b2b2", steps=3))
    with open(run.dir / "events.jsonl", "a") as fh:
        for k in (1, 2):
            fh.write(json.dumps({"event": "pass", "time": 1.0, "pass": k, "planned": 16, "tool": "rocprof-compute",
                                 "steps": 3}) + "\n")
    update = RunFeed(run).poll()
    assert update.counter_pass is not None and update.counter_pass.label == "counter pass 2 of 16"
    assert update.record.counter_pass == update.counter_pass

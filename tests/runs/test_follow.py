"""`follow` (tinylab/runs/follow.py) of a finished run: its whole output, and its final status."""

from __future__ import annotations

import io

from tinylab.runs.follow import follow


def test_follow_returns_the_final_status_of_a_finished_run(finished_pair):
    out = io.StringIO()
    assert follow(finished_pair.v1, out=out) == "finished"
    assert out.getvalue() == finished_pair.v1.output_log.read_text()


def test_libkinetos_profiler_start_and_stop_lines_are_left_out(tmp_path):
    """A profiled run's log carried libkineto's "USDT:... profiler_start" lines, in `follow`,
    `train` and the Run screen alike (output.log keeps them)."""
    import io

    from support.runs import make_run

    from tinylab.runs.follow import follow
    from tinylab.tui.feed import LogTail

    run = make_run(tmp_path, "20260101-000000-aaaa", [{"event": "exit", "time": 1.0, "returncode": 0}])
    log = ("step    1/8 | loss   6.9\n"
           "USDT:2026-11-28 03:33:08 2507:2507 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
           "step    2/8 | loss   6.8\n"
           "USDT:2026-11-28 03:33:09 2507:2507 SyncActivityProfilerHandler.cpp:59] profiler_stop\n"
           "a line that mentions USDT: and profiler_start stays\n"
           "unfinished")
    run.output_log.write_text(log)
    out = io.StringIO()
    follow(run, out, poll_s=0.01)
    assert out.getvalue() == "step    1/8 | loss   6.9\nstep    2/8 | loss   6.8\n" \
        "a line that mentions USDT: and profiler_start stays\nunfinished"
    tail = LogTail(run.output_log)
    assert tail.poll() + tail.flush() == out.getvalue().splitlines()

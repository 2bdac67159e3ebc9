"""`follow` (tinylab/runs/follow.py) of a finished run: its whole output, and its final status."""

from __future__ import annotations

import io

from tinylab.runs.follow import follow


def test_follow_returns_the_final_status_of_a_finished_run(finished_pair):
    out = io.StringIO()
    assert follow(finished_pair.v1, out=out) == "finished"
    assert out.getvalue() == finished_pair.v1.output_log.read_text()

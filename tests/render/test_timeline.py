"""`tinylab timeline`'s text (tinylab.render.timeline): 80 columns (down to 50), the shown step
marked, and the trainer's clock and the collectives said in words."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.traces import CPU_RUN, DDP2, H100, V4_GRAPH, gpu_copy, two_step_trace, write

from tinylab.analysis import timeline
from tinylab.render.timeline import LANE_ORDER, render, squeeze


def test_render_fits_80_columns(tmp_path):
    for result in (timeline.analyze(write(tmp_path, two_step_trace())), timeline.analyze(H100),
                   timeline.analyze(V4_GRAPH / "trace.json.gz"),
                   timeline.analyze(CPU_RUN / "trace.json.gz", CPU_RUN / "memory_timeline.json.gz")):
        text = render(result, "timeline of something")
        assert max(len(line) for line in text.splitlines()) <= 80, text
        assert len(text.splitlines()) <= 22
        narrow = render(result, "timeline of something", width=56)
        assert max(len(line) for line in narrow.splitlines()) <= 56, narrow
    assert squeeze("..##..++--", 5, LANE_ORDER) == ".#.+-"  # the busiest character of each pair


def test_the_text_marks_the_step_the_json_names(tmp_path):
    doc = two_step_trace()
    doc["traceEvents"] += [gpu_copy("ProfilerStep#6", 101, 95), gpu_copy("ProfilerStep#5", 9, 89)]
    result = timeline.analyze(write(tmp_path, doc))
    text = render(result, "t")
    marked = [line for line in text.splitlines() if line.startswith("*")]
    assert len(marked) == 1 and marked[0].split()[1] == str(result.shown_step)
    assert f"step {result.shown_step}: {result.diagnosis}"[:40] in text.replace("\n  ", " ")


def test_the_trainers_clock_is_said_beside_the_trace():
    result = timeline.analyze(V4_GRAPH / "trace.json.gz")
    steps = [json.loads(line) for line in (V4_GRAPH / "steps.jsonl").read_text().splitlines()]
    timed = timeline.trainer_timing(steps, result)
    text = render(dataclasses.replace(result, timed=timed), "t")
    assert f"trainer's clock: this step {timed.step_ms:.2f} ms, unprofiled {timed.unprofiled_ms:.2f} ms" in text
    assert "trainer's clock" not in render(result, "t")


@pytest.mark.parametrize("rank", [0, 1])
def test_the_collectives_of_a_rank_are_said(rank):
    result = timeline.analyze(DDP2 / f"rank{rank}" / "trace.json.gz")
    comm = result.communication
    text = render(result, "t")
    assert f"  collectives: {comm.ms:.2f} ms a step (mean of 2 steps), {comm.hidden:.0%} hidden under compute" \
        in text.splitlines()
    assert max(map(len, text.splitlines())) <= 80

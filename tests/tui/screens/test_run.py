"""The Run screen at 80x24 (tinylab/tui/screens/run.py): a run launched from the Lab watched to its
end, cancel with its confirmation, a failed or cancelled run's outcome, and a run in its counter passes."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from tinylab.runs.launcher import group_alive
from tinylab.runs.store import RunStore

from ..conftest import SIZE, TINY_FORM, V3, fill_form, make_app, screen_name, text_of, wait_for
from ..fakes import make_run

pytestmark = pytest.mark.asyncio


async def test_launch_tiny_cpu_run_from_lab_and_watch_it_finish(tmp_path: Path):
    app = make_app(tmp_path / "runs", clock=None)
    async with app.run_test(size=SIZE) as pilot:
        fill_form(pilot, TINY_FORM)
        await pilot.pause()
        assert "ready: v1" in text_of(pilot, "#check")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen", what="the Run screen")
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.status != "running", timeout=150, what="the run to end")
        assert screen.status == "finished", text_of(pilot, "#outcome")
        outcome = text_of(pilot, "#outcome")
        assert "finished" in outcome and "samples/s" in outcome
        assert len(screen.steps) == 6
        assert "step 6/6" in text_of(pilot, "#progress-text")
        log = "\n".join(str(line) for line in screen.query_one("#log").lines)
        assert "summary (medians after warm-up)" in log


async def test_cancel_asks_then_stops_the_run(tmp_path: Path):
    app = make_app(tmp_path / "runs", clock=None)
    async with app.run_test(size=SIZE) as pilot:
        fill_form(pilot, {**TINY_FORM, "num_steps": "100000"})
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen", what="the Run screen")
        screen = pilot.app.screen
        await pilot.press("c")
        await wait_for(pilot, lambda: screen_name(pilot) == "ConfirmScreen", what="the confirmation")
        await pilot.press("n")
        await pilot.pause(0.3)
        assert screen.status == "running"
        await pilot.press("c")
        await wait_for(pilot, lambda: screen_name(pilot) == "ConfirmScreen", what="the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.status == "cancelled", timeout=30, what="cancelled status")
        assert "cancelled" in text_of(pilot, "#outcome")
    run = RunStore(tmp_path / "runs").list()[0]
    assert run.status() == "cancelled"
    assert not group_alive(run.process["pgid"])


async def test_failed_run_shows_its_error(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_run(V3)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "failed", what="failed status")
        outcome = text_of(pilot, "#outcome")
        assert "FloatingPointError: loss became nan at step 3" in outcome
        assert pilot.app.screen.query_one("#run-panes").current.id == "log-pane"
        assert pilot.app.is_running


async def test_a_cancelled_run_says_so_without_the_interrupts_traceback():
    """A cancel reaches the trainer as an interrupt and leaves an error event; the run screen
    reports the cancel, not that event as if the run had crashed."""
    from tinylab.core.events import ErrorEvent
    from tinylab.runs.record import RunRecord
    from tinylab.tui.screens.run import outcome_text

    record = RunRecord("r", Path("r"), "cancelled", None, {}, None, None, None,
                       ErrorEvent("KeyboardInterrupt", "interrupted by SIGINT",
                                  "  File \"trainer.py\", line 1\nKeyboardInterrupt"), None, None, 3, None)
    assert outcome_text(record, "cancelled").plain == "■ cancelled after 3 steps"
    failed = outcome_text(dataclasses.replace(record, status="failed", error=ErrorEvent("ValueError", "bad", "boom")),
                          "failed").plain
    assert failed.startswith("✗ failed: ValueError: bad") and "boom" in failed


async def test_a_run_in_its_counter_passes_shows_the_pass_not_a_finished_run(store: Path):
    """rocprof-compute in pass 3 of 4: pass 1's 50 steps are the record, yet the run is not done.
    At 80 columns the pass label stays (the step count goes), the bar counts passes (2 of 4 done:
    50%, not 100%) and the ETA is the passes still to come (4 s each, measured from pass 2)."""
    run_id = "20261126-023000-d4d4"
    make_run(store, run_id, steps=50, status="running", alive_pid=os.getpid(), profile=False, counter_pass=(3, 4))
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        pilot.app.open_run(run_id)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "counter_pass", None), what="the pass event")
        await pilot.pause(0.1)
        text = text_of(pilot, "#progress-text")
        assert text.startswith("counter pass 3 of 4 (rocprof-compute)") and "step 50/50" not in text
        bar = pilot.app.screen.query_one("#progress")
        assert (bar.total, bar.progress) == (4, 2)
        await pilot.resize_terminal(160, 24)
        await wait_for(pilot, lambda: "ETA" in text_of(pilot, "#progress-text"), what="the ETA at 160 columns")
        assert "ETA 0:04" in text_of(pilot, "#progress-text")


async def test_took_covers_every_counter_pass(store: Path):
    """A finished 4-pass run ended when its last pass did (the exit record), not at pass 1's summary."""
    run_id = "20261126-023000-d4d4"
    run_dir = make_run(store, run_id, steps=50, profile=False, counter_pass=(4, 4))
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    launched = json.loads((run_dir / "process.json").read_text())["launched_at"]
    summary, exit_ = (next(e["time"] for e in events if e["event"] == kind) for kind in ("summary", "exit"))
    assert exit_ - summary == 13  # passes 2-4 ran after pass 1's summary
    app = make_app(store)
    async with app.run_test(size=(160, 24)) as pilot:
        pilot.app.open_run(run_id)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="finished")
        assert f"took 0:{exit_ - launched:02.0f}" in text_of(pilot, "#progress-text")


async def test_the_fault_a_step_hides_is_masked_in_the_run_header_and_the_runs_screen(store: Path):
    """performance-debugging step 1 hides its fault; the Run header and the Runs screen showed it."""
    run_id = "20261126-023000-d4d4"
    make_run(store, run_id, version="v3", profile=False, fault="detached-backward",
             label="exercise broken-backward step 1")
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        pilot.app.open_run(run_id)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="finished")
        head = text_of(pilot, "#run-head")
        assert "fault=(hidden)" in head and "detached" not in head
        await pilot.press("r")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunsScreen" and pilot.app.screen.current, what="runs")
        table = pilot.app.screen.query_one("#runs")
        cells = " ".join(str(cell) for row in range(table.row_count) for cell in table.get_row_at(row))
        assert "fault=(hidden)" in cells and "detached" not in cells + text_of(pilot, "#run-detail")


async def test_ms_per_step_is_the_summarys_statistic():
    """The Run screen said 70.5 ms/step (the last ten steps, warm-up included) beside a summary
    median of 840.9: it shows the median after warm-up, the summary's own once there is one."""
    from tinylab.core.events import StepEvent, Summary
    from tinylab.runs.record import RunRecord
    from tinylab.tui.screens.run import RunScreen

    screen = RunScreen("r")
    assert screen._ms_per_step() == (None, "")
    screen.steps = [StepEvent(0, 7.0, step_ms=5000.0, warmup=True), StepEvent(1, 6.9, step_ms=3000.0, warmup=True)]
    assert screen._ms_per_step() == (4000.0, " (warm-up)")
    screen.steps += [StepEvent(k, 6.0, step_ms=ms) for k, ms in enumerate((900.0, 300.0, 840.0, 70.0, 1700.0), 2)]
    assert screen._ms_per_step() == (840.0, "")  # not 900: the warm-up is left out
    screen.record = RunRecord("r", Path("r"), "finished", None, {}, None, None, Summary(step_ms_median=840.9), None,
                              None, None, 7, None)
    assert screen._ms_per_step() == (840.9, "")


async def test_the_header_keeps_its_status_whole_on_one_line(store: Path):
    """At 80x24 the head wrapped `●` onto one line and `finished` onto the next; it is one line at
    any width, the device's name, the long id and the end of the settings giving way at 80 (the
    tooltip has it all), all of it shown at 120."""
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_run("20261126-021000-b2b2")  # v2, profiled, its fusions on, on an H100
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="finished")
        await pilot.pause(0.1)
        head = pilot.app.screen.query_one("#run-head")
        text = text_of(pilot, "#run-head")
        assert head.size.height == 1 and len(text) <= head.content_region.width
        assert text == "1126-0210-b2b2 v2  b2 s16 h64 l2 prof=pytorch qkv+sdpa+sw…  cuda:0  ● finished"
        assert str(head.tooltip) == ("20261126-021000-b2b2 v2  b2 s16 h64 l2 prof=pytorch qkv+sdpa+swiglu  "
                                     "cuda:0 (NVIDIA H100 80GB HBM3)  ● finished")
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: "NVIDIA" in text_of(pilot, "#run-head"), what="the head redrawn at 120")
        assert text_of(pilot, "#run-head").endswith("cuda:0 (NVIDIA H100 80GB HBM3)  ● finished")
        assert head.tooltip is None


async def test_what_gives_way_in_the_header_first():
    """The device's name, then the long id, then the end of the settings (key_config puts the telling
    ones first), then the settings and the device; the version and the status last of all."""
    from tinylab.tui.screens.run import head_content

    args = ("20261126-021000-b2b2", "v4", "b8 s512 h768 l12 bf16 prof=pytorch fault=(hidden) recompute ddpx2",
            "cuda:0", "NVIDIA H100 80GB HBM3", "running")
    whole = head_content(*args, width=None).plain
    assert whole == ("20261126-021000-b2b2 v4  b8 s512 h768 l12 bf16 prof=pytorch fault=(hidden) recompute ddpx2  "
                     "cuda:0 (NVIDIA H100 80GB HBM3)  ● running")
    assert head_content(*args, width=len(whole)).plain == whole
    shown = {width: head_content(*args, width=width).plain for width in (110, 104, 78, 48, 40, 30, 8)}
    assert shown == {
        110: "20261126-021000-b2b2 v4  b8 s512 h768 l12 bf16 prof=pytorch fault=(hidden) recompute ddpx2  cuda:0  "
             "● running",
        104: "1126-0210-b2b2 v4  b8 s512 h768 l12 bf16 prof=pytorch fault=(hidden) recompute ddpx2  cuda:0  ● running",
        78: "1126-0210-b2b2 v4  b8 s512 h768 l12 bf16 prof=pytorch faul…  cuda:0  ● running",
        48: "1126-0210-b2b2 v4  b8 s512 h…  cuda:0  ● running",
        40: "1126-0210-b2b2 v4  cuda:0  ● running",
        30: "1126-0210-b2b2 v4  ● running",
        8: "v4  ● running",  # narrower than that: the CSS cuts the line at the edge
    }
    assert all(len(text) <= width for width, text in shown.items() if width > 8)


async def test_a_run_ending_under_the_learner_leaves_them_on_their_panel(store: Path, tmp_path: Path):
    """A live run that ended switched the screen from Log to Charts by itself: the panel the learner
    is on stays. A run opened after it ended still opens on the panel that tells most (Charts)."""
    run_id = "20261126-023000-d4d4"
    live = make_run(store, run_id, status="running", steps=20, alive_pid=os.getpid(), profile=False)
    ended = make_run(tmp_path / "ended", run_id, status="finished", steps=20, profile=False)
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_run(run_id)
        screen = pilot.app.screen
        await wait_for(pilot, lambda: len(getattr(screen, "steps", [])) == 10, what="the live steps")
        panes = screen.query_one("#run-panes")
        assert panes.current.id == "log-pane"
        # the run goes on and ends: its files grow to the finished run's (the same first lines and
        # events), then its process is gone
        for name in ("events.jsonl", "output.log", "process.json"):
            (live / name).write_bytes((ended / name).read_bytes())
        await wait_for(pilot, lambda: screen.status == "finished", what="the run to end")
        await wait_for(pilot, lambda: screen.query("#advice-pane"), what="the Advice panel")
        await pilot.pause(0.2)
        assert len(screen.steps) == 20 and panes.current.id == "log-pane"
        await pilot.press("escape")
        pilot.app.open_run(run_id)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="reopened")
        await pilot.pause(0.1)
        assert pilot.app.screen.query_one("#run-panes").current.id == "charts-pane"

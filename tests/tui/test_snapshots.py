"""Snapshots of every screen at 80x24, 120x40 and 200x60, over fake runs with frozen time.

Regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update`, then look at the SVGs in
__snapshots__/ before committing them.
"""

from __future__ import annotations

import os

import pytest

from .conftest import make_app, wait_for
from .fakes import make_run

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40"),
         pytest.param((200, 60), id="200x60")]
V1, V2, V3 = "20261126-020000-a1a1", "20261126-021000-b2b2", "20261126-022000-c3c3"


def rows(pilot, selector: str) -> int:
    """Rows of a table on the current screen (0 until the screen has composed it)."""
    found = pilot.app.screen.query(selector)
    return found.first().row_count if found else 0


async def settle(pilot) -> None:
    await pilot.pause(0.1)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.1)


def _advice_shown(panel) -> bool:
    """The panel's advice read, its table filled at the panel's width and laid out (rows and all)."""
    from textual.widgets import DataTable

    if not panel.display or not panel.region.area:
        return True  # a panel not on screen (behind another tab) is not in the picture
    if not panel.loaded:
        return False
    if panel.items is None:
        return True  # no advice: the head line says why
    if panel._filled_at != panel.size.width:
        return False
    table = panel.query_one(DataTable)
    return not panel.items or (table.row_count == len(panel.items) and table.size.height > 0
                               and table.virtual_size.height > table.row_count)


async def charts_drawn(pilot) -> None:
    """The charts drawn, the advice read and the step anatomy laid out at the size the screen gives them."""
    from tinylab.tui.widgets.advice import AdvicePanel
    from tinylab.tui.widgets.anatomy import AnatomyText
    from tinylab.tui.widgets.charts import SeriesChart

    await pilot.pause(0.3)
    await wait_for(pilot, lambda: all(not c.dirty for c in pilot.app.screen.query(SeriesChart) if c.display
                                      and c.region.area), what="charts drawn")
    await wait_for(pilot, lambda: all(_advice_shown(p) for p in pilot.app.screen.query(AdvicePanel)), what="advice shown")
    await wait_for(pilot, lambda: all(a.laid_out for a in pilot.app.screen.query(AnatomyText)), what="anatomy laid out")


@pytest.mark.parametrize("size", SIZES)
def test_lab(snap_compare, store, size):
    async def run_before(pilot):
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


def test_lab_monochrome(snap_compare, store, monkeypatch):
    """NO_COLOR: ticked and unticked boxes, the ready line and the marks must still read apart."""
    monkeypatch.setenv("NO_COLOR", "1")

    async def run_before(pilot):
        await settle(pilot)
        pilot.app.screen.query_one("#versions").highlighted = 1  # v2: ticked and unticked fusions
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


def test_lab_invalid_input_and_unavailable_profiler(snap_compare, store):
    async def run_before(pilot):
        await settle(pilot)
        pilot.app.screen.query_one("#num-num_heads").value = "5"
        pilot.app.screen.query_one("#profiler-ncu").focus()
        await pilot.pause(0.1)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_run_finished(snap_compare, store, size):
    async def run_before(pilot):
        pilot.app.open_run(V2)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="finished")
        await wait_for(pilot, lambda: pilot.app.screen.query("#anatomy"), what="step panel")  # profiled: a Step panel
        await charts_drawn(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


def test_run_of_two_ranks(snap_compare, store):
    """A finished DDP run of 2 ranks at 80x24: the outcome says the ranks, the slowest and the weights;
    the Ranks panel shows each rank (rank 1 marked slowest, both in sync)."""
    make_run(store, "20261126-024000-e5e5", ranks=2, step_ms=44.0)

    async def run_before(pilot):
        pilot.app.open_run("20261126-024000-e5e5")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="finished")
        await wait_for(pilot, lambda: pilot.app.screen.query("#ranks") and pilot.app.screen.query("#anatomy"),
                       what="ranks and step panels")
        await charts_drawn(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


def test_run_failed(snap_compare, store):
    async def run_before(pilot):
        pilot.app.open_run(V3)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "failed", what="failed")
        await charts_drawn(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


def test_run_live_cancel_confirm(snap_compare, store):
    make_run(store, "20261126-023000-d4d4", version="v2", status="running", steps=40, alive_pid=os.getpid())

    async def run_before(pilot):
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.press("w")
        await wait_for(pilot, lambda: len(getattr(pilot.app.screen, "steps", [])) == 20, what="live steps")
        await charts_drawn(pilot)
        await pilot.press("c")
        from tinylab.tui.screens.confirm import ConfirmScreen

        # a fixed pause raced the modal's first paint on a loaded machine
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen), what="confirm dialog")
        await pilot.pause(0.2)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


def test_run_in_a_counter_pass(snap_compare, store):
    """rocprof-compute's pass 3 of 4 at 80x24: the pass label, the passes on the bar, no "done" look."""
    make_run(store, "20261126-023000-d4d4", steps=50, status="running", alive_pid=os.getpid(), profile=False,
             counter_pass=(3, 4))

    async def run_before(pilot):
        await settle(pilot)
        pilot.app.clear_notifications()
        pilot.app.open_run("20261126-023000-d4d4")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "counter_pass", None), what="the pass event")
        await charts_drawn(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_hotspots(snap_compare, store, size):
    async def run_before(pilot):
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: rows(pilot, "#kernels") == 10, what="kernel rows")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


def test_hotspots_categories_panel(snap_compare, store):
    async def run_before(pilot):
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: rows(pilot, "#kernels") == 10, what="kernel rows")
        await pilot.press("t")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_runs_marked(snap_compare, store, size):
    async def run_before(pilot):
        await pilot.press("r")
        await wait_for(pilot, lambda: rows(pilot, "#runs") == 3, what="run rows")
        await pilot.press("down", "m", "down", "m")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


async def compared(pilot, a: str, b: str) -> None:
    """Compare open on A and B, its metrics shown and A's advice checked against B (until then the
    wide grid's Advice cell is another height)."""
    pilot.app.open_compare(a, b)
    await wait_for(pilot, lambda: rows(pilot, "#metrics") > 0, what="metrics")
    await wait_for(pilot, lambda: "Checking" not in str(pilot.app.screen.query_one("#cmp-advice").render()),
                   what="the advice checked")
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_compare(snap_compare, store, size):
    async def run_before(pilot):
        await compared(pilot, V1, V2)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_exercises(snap_compare, store, size):
    async def run_before(pilot):
        await pilot.press("x")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


def test_exercise_preview_of_the_longest_scenario(snap_compare, store):
    """The shipped Performance debugging at 80x24: its summary and all six steps under the list."""
    async def run_before(pilot):
        await pilot.press("x")
        await settle(pilot)
        options = pilot.app.screen.query_one("#scenarios")
        options.highlighted = next(i for i, s in enumerate(pilot.app.screen.scenarios)
                                   if s.id == "performance-debugging")
        await settle(pilot)

    assert snap_compare(make_app(store, exercises_root=None), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_exercise_step(snap_compare, store, size):
    async def run_before(pilot):
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_doctor(snap_compare, store, size):
    async def run_before(pilot):
        await pilot.press("d")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare, store, size):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.2)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


def test_run_step_anatomy(snap_compare, store):
    """A CPU run profiled with its memory timeline: the Step panel's host lane, phases and the
    memory-by-category chart, at 80x24 where the panel takes the screen."""
    make_run(store, "20261126-024000-e5e5", version="v1", gpu=False, step_ms=146.0)

    async def run_before(pilot):
        pilot.app.open_run("20261126-024000-e5e5")
        await wait_for(pilot, lambda: pilot.app.screen.query("#step-pane") and pilot.app.screen.query("#step-memory"),
                       what="step panel and its chart")
        pilot.app.screen.query_one("#run-panes").show("step-pane")
        chart = pilot.app.screen.query_one("#step-memory")
        await wait_for(pilot, lambda: chart.region.area and not chart.dirty, what="memory chart drawn")
        await charts_drawn(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


async def kernels_shown(pilot) -> None:
    """The Kernels view with its table, its IR stage loaded and the detail of the first kernel."""
    await pilot.press("K")
    await wait_for(pilot, lambda: rows(pilot, "#kern-table") == 5, what="kernel rows")
    await wait_for(pilot, lambda: pilot.app.screen.query_one("#kern-ir").line_count, what="the IR stage")
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_kernels(snap_compare, store, fake_kernels, size):
    """The table on gfx942 (wide: beside the sweep, over the IR), at 80x24 one panel at a time."""
    async def run_before(pilot):
        await kernels_shown(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


def test_kernels_sweep_on_h100(snap_compare, store, fake_kernels):
    """sm_90 picked, the attention forward's BLOCK_M swept: the chart and its exact values."""
    async def run_before(pilot):
        await kernels_shown(pilot)
        await pilot.press("5")
        pilot.app.screen.query_one("#kern-table").move_cursor(row=2)
        await pilot.pause()
        await pilot.press("s")
        await wait_for(pilot, lambda: "64*" in str(pilot.app.screen.query_one("#kern-points").render()), what="points")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)


def test_kernels_ir_stage(snap_compare, store, fake_kernels):
    async def run_before(pilot):
        await kernels_shown(pilot)
        await pilot.press("i")
        await wait_for(pilot, lambda: "ttgir" in pilot.app.screen.query_one("#kern-ir").lines[0], what="ttgir")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=run_before)

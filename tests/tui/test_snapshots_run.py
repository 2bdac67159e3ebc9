"""Snapshots of issue 38's Run screen and toasts: the Run head on one line (what gives way at 80
columns, never the status), and the Lab's toasts clear of its check line; with the Pilot check
that a toast never covers that line at 80x24 and 120x40.

Regenerate with `pytest tests/tui/test_snapshots_run.py --snapshot-update`, then look at the SVGs.
"""

from __future__ import annotations

import pytest

from .conftest import make_app, screen_text, wait_for
from .fakes import make_run
from .test_snapshots import charts_drawn, settle

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
#: A profiled v2 run whose head is long: bf16, its fusions, the H100's name.
LONG = "20261126-024000-e5e5"


@pytest.mark.parametrize("size", SIZES)
def test_run_finished_with_a_long_head(snap_compare, store, size):
    """At 80 the device's name, the long id and the end of the settings give way, the status stays
    on the line; at 120 the whole head shows."""
    make_run(store, LONG, version="v2", step_ms=31.0, precision="bf16")

    async def run_before(pilot):
        pilot.app.open_run(LONG)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="finished")
        await wait_for(pilot, lambda: pilot.app.screen.query("#anatomy"), what="step panel")
        await charts_drawn(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


async def show_a_toast(pilot) -> None:
    """The Lab settled, then `w` with no run running: the app's own toast says so."""
    await settle(pilot)
    pilot.app.clear_notifications()
    await pilot.press("w")
    await wait_for(pilot, lambda: pilot.app.screen.query("Toast"), what="the toast")
    await pilot.pause(0.2)


@pytest.mark.parametrize("size", SIZES)
def test_lab_with_a_toast(snap_compare, store, size):
    async def run_before(pilot):
        await show_a_toast(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES)
async def test_toasts_leave_the_labs_check_line_clear(store, size):
    """At 80x24 a toast sat on the Lab's check line (whether enter launches, or why not). Three at
    once, and the line is still clear of every one."""
    async with make_app(store).run_test(size=size, notifications=True) as pilot:
        await show_a_toast(pilot)
        for _ in range(2):
            pilot.app.notify("Another notice of a line or two, as long as the lab's usually are.")
        await wait_for(pilot, lambda: len(pilot.app.screen.query("Toast")) == 3, what="three toasts")
        await pilot.pause(0.2)
        check = pilot.app.screen.query_one("#check").region
        toasts = [toast.region for toast in pilot.app.screen.query("Toast")]
        assert all(t.area for t in toasts) and check.area
        assert not any(t.overlaps(check) for t in toasts), (check, toasts)
        line = str(pilot.app.screen.query_one("#check").render()).strip()  # and on screen: the line whole
        assert line in [shown.strip() for shown in screen_text(pilot.app.export_screenshot())]

"""Snapshots of issue 38's text cut at 80x24 and 120x40: the Advice panel (on the Hotspots screen)
with long measured values and actions, scrolled to the last item's action; the Hotspots panel strip;
Compare of two runs on a busy machine, whose notes take several lines, beside an empty Kernels box.

Regenerate with `pytest -n 0 tests/tui/test_snapshots_cutoffs.py --snapshot-update`, then read each
SVG's text (tests/tui/conftest.py's screen_text) before committing it.
"""

from __future__ import annotations

import pytest

from .conftest import make_app, wait_for
from .fakes import make_run
from .screens.test_compare import busy_pair
from .test_snapshots import SIZES, _advice_shown, charts_drawn, compared, rows, settle

CUT_SIZES = SIZES[:2]  # 80x24 and 120x40, where the text was cut
DDP = "20261126-024000-e5e5"  # two ranks: each advice item's action says why it does not apply here as is


@pytest.mark.parametrize("size", CUT_SIZES)
def test_advice_scrolled_to_the_last_action(snap_compare, store, size):
    """`a`, the last item highlighted, PageDown: the rows' measured values wrapped whole (at 120 columns
    the panel's cell leaves no room for them: the detail says them), and the last item's action."""
    make_run(store, DDP, ranks=2, step_ms=44.0)

    async def run_before(pilot):
        pilot.app.open_hotspots(DDP)
        await wait_for(pilot, lambda: rows(pilot, "#kernels") == 11, what="kernel rows")
        await wait_for(pilot, lambda: pilot.app.screen.query_one("#advice").items, what="the advice")
        await pilot.press("a", "down")
        await settle(pilot)  # the row scrolled to, then a page on
        await pilot.press("pagedown")
        await settle(pilot)
        # (not charts_drawn: wide, the step anatomy's panel waits behind Advice, never laid out)
        panel = pilot.app.screen.query_one("#advice")
        await wait_for(pilot, lambda: _advice_shown(panel), what="the advice shown")
        await settle(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize(("size", "keys"), [pytest.param((80, 24), ("pagedown",), id="80x24"),
                                            pytest.param((120, 40), (), id="120x40")])
def test_compare_on_a_busy_machine(snap_compare, store, size, keys):
    """Both runs' notes say the machine was busy: at 120x40 they read whole over a Kernels box of one
    line; at 80x24 PageDown scrolls the metrics to them."""
    a, b = busy_pair(store)

    async def run_before(pilot):
        await compared(pilot, a, b)
        await pilot.press(*keys)
        await settle(pilot)
        await charts_drawn(pilot)

    assert snap_compare(make_app(store), terminal_size=size, run_before=run_before)

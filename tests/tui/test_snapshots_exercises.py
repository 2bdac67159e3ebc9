"""Snapshots of the shipped Performance debugging's step view at 80x24 and 120x40: checks whose
descriptions wrap, revealed answers, and a diagnosis, each wrapped line under its item's text (a
check's description ran on below its `✓`, an answer's below its number).

Regenerate with `pytest -n 0 tests/tui/test_snapshots_exercises.py --snapshot-update`, then look at
the SVGs in __snapshots__/ before committing them.
"""

from __future__ import annotations

import pytest

from .conftest import make_app, wait_for
from .screens.test_exercises import passed_step_one
from .test_snapshots import settle

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
SCENARIO = "performance-debugging"


async def open_step(pilot, number: int) -> None:
    pilot.app.open_exercise(SCENARIO)
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "scenario", None), what="the step view")
    screen = pilot.app.screen
    screen.action_step(number - 1 - screen.index)
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_step_with_long_checks(snap_compare, store, size):
    """Step 2's checks: descriptions of two lines and a GPU-only reason, each under its text."""
    async def run_before(pilot):
        await open_step(pilot, 2)
        if pilot.app.screen.has_class("-narrow"):
            await pilot.press("t")  # the Checks panel
        await settle(pilot)

    assert snap_compare(make_app(store, exercises_root=None), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_step_with_revealed_answers(snap_compare, store, size):
    """Step 2's answers and explanations, wrapped under the answer's text, not under its number."""
    async def run_before(pilot):
        await open_step(pilot, 2)
        await pilot.press("a")
        await settle(pilot)

    assert snap_compare(make_app(store, exercises_root=None), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_step_with_a_diagnosis(snap_compare, store, size):
    """Step 1 passed before (its run kept) and a wrong guess named: the evidence against it."""
    passed_step_one(store)

    async def run_before(pilot):
        await open_step(pilot, 1)
        await pilot.press("d")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "DiagnoseScreen", what="the faults")
        await pilot.press("enter")  # detached-backward
        await wait_for(pilot, lambda: pilot.app.screen.diagnoses, what="the verdict")
        await settle(pilot)

    assert snap_compare(make_app(store, exercises_root=None), terminal_size=size, run_before=run_before)

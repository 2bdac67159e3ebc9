"""The Compare screen at 80x24 (tinylab/tui/screens/compare.py): two marked runs, runs of two world
sizes, and the A/B chart's fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import SIZE, V1, V2, make_app, screen_name, text_of, wait_for
from ..fakes import make_run

pytestmark = pytest.mark.asyncio


async def test_compare_two_marked_runs(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.query("#runs") and
                       pilot.app.screen.query_one("#runs").row_count == 3, what="runs")
        await pilot.press("down", "down", "m", "up", "m", "v")
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen", what="compare")
        metrics = pilot.app.screen.query_one("#metrics")
        await wait_for(pilot, lambda: metrics.row_count > 0, what="metrics")
        first = [str(c) for c in metrics.get_row_at(0)]
        assert first[0] == "samples/s" and first[3] == "1.56x" and "B better" in first[4]
        kernels = pilot.app.screen.query_one("#kernel-diff")
        assert kernels.row_count > 0
        await pilot.press("s")
        await wait_for(pilot, lambda: [str(c) for c in metrics.get_row_at(0)][3] == "0.64x", what="swap")


async def test_compare_across_world_sizes_shows_the_scaling(store: Path):
    """1 rank vs 2: each run's ranks, samples/s in all and per rank, collectives, and the efficiency;
    no scaling block for runs of one world size."""
    make_run(store, "20261126-024000-e5e5", ranks=2, step_ms=44.0)
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_compare(V1, "20261126-024000-e5e5")
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen" and pilot.app.screen.query("#metrics")
                       and pilot.app.screen.query_one("#metrics").row_count > 0, what="metrics")
        scaling = pilot.app.screen.query_one("#cmp-scaling")
        assert scaling.has_class("-shown") and scaling.display
        text = " ".join(str(scaling.render()).split())
        assert "A 1 47.6 47.6 - -" in text and "B 2 90.9 45.5 9.24 64%" in text, text
        assert "scaling efficiency 95% (B's samples/s per rank / A's); B is 1.91x as fast as A, ideally 2.00x" in text
        assert "NOT" not in text_of(pilot, "#cmp-notes")
        await pilot.press("escape")
        pilot.app.open_compare(V1, V2)
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen" and pilot.app.screen.query("#metrics")
                       and pilot.app.screen.query_one("#metrics").row_count > 0, what="metrics")
        assert not pilot.app.screen.query_one("#cmp-scaling").display  # runs of one world size


async def test_the_ab_chart_draws_compared_summary_fields():
    """The chart picks its bars by key from compare's metrics: a renamed field would vanish silently."""
    from tinylab.analysis.compare import METRICS
    from tinylab.tui.screens.compare import CHART_KEYS

    assert set(CHART_KEYS) <= {m.key for m in METRICS} and len(set(CHART_KEYS)) == len(CHART_KEYS)

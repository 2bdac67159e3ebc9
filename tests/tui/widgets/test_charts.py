"""Charts: points thinned to the width, and a chart too short to plot in says its values in words
(at 120x40 the Run screen's four charts got 4 rows each: frames with no line, ticks run together)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from tinylab.tui.widgets.charts import MIN_PLOT_ROWS, SeriesChart, thin


def test_thin_drops_unknown_points_and_keeps_the_last():
    xs, ys = thin(list(range(10)), [1, None, 3, 4, 5, 6, 7, 8, 9, 10], 4)
    assert len(xs) <= 4 and xs[-1] == 9 and ys[-1] == 10 and 1 not in xs and xs == sorted(xs)


@pytest.mark.parametrize("limit", [20, 37, 70, 140])
def test_thin_keeps_every_peak_and_trough_whatever_the_width(limit):
    """A stride dropped the peak: a memory chart titled "peak 2.81 MB" drew its line to 2.72."""
    ys = [1.0 + (k % 17) / 10 for k in range(1000)]
    ys[613], ys[291] = 9.5, -3.0
    xs, kept = thin(list(range(1000)), ys, limit)
    assert len(xs) <= limit and xs == sorted(xs) and xs[-1] == 999
    assert max(kept) == 9.5 and min(kept) == -3.0


class ChartApp(App):
    CSS = "SeriesChart { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield SeriesChart("memory MB", empty="not recorded", id="chart")


@pytest.mark.asyncio
@pytest.mark.parametrize("rows", [4, MIN_PLOT_ROWS + 4])
async def test_a_short_chart_says_its_values_and_a_tall_one_plots(rows):
    app = ChartApp()
    async with app.run_test(size=(60, rows)) as pilot:
        chart = app.query_one(SeriesChart)
        chart.set_data([1, 2, 3], {"allocated": [800.0, None, 831.0], "peak": [1490.0, 1520.0, 1547.0]})
        chart.redraw()
        await pilot.pause()
        shown = str(chart.render())
        if rows < MIN_PLOT_ROWS:
            assert shown.splitlines() == ["memory MB · step 1–3", " allocated  831  (800–831)",
                                          " peak  1,547  (1,490–1,547)"]
        else:
            assert len(shown.splitlines()) == rows and "allocated" in shown  # plotext's frame and legend
            assert any("\u2801" <= ch <= "\u28ff" for ch in shown)  # and its braille line
        chart.set_data([], {"allocated": [], "peak": []})
        chart.redraw()
        await pilot.pause()
        assert "memory MB: not recorded" in str(chart.render())

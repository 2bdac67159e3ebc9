"""Plotext charts that take data at any rate and redraw only when asked (a timer, at most a few Hz).

Colours come from textual-plotext's "auto" theme, which follows the app's Textual theme, so the
charts stay readable on light terminals.
"""

from __future__ import annotations

from typing import Sequence

from textual_plotext import PlotextPlot

Number = float | int | None


def thin(xs: Sequence[float], ys: Sequence[Number], limit: int) -> tuple[list[float], list[float]]:
    """Drop unknown points, then keep at most `limit` of them, evenly spaced, always the last."""
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
    if len(pts) > limit:
        stride = len(pts) / limit
        pts = [pts[int(i * stride)] for i in range(limit - 1)] + [pts[-1]]
    return [p[0] for p in pts], [p[1] for p in pts]


class SeriesChart(PlotextPlot):
    """One or more lines against the step number."""

    def __init__(self, title: str, *, xlabel: str = "step", ylabel: str = "", empty: str = "no data yet",
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.chart_title = title
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.empty = empty
        self.xs: list[float] = []
        self.series: dict[str, list[Number]] = {}
        self.dirty = True

    def set_data(self, xs: list[float], series: dict[str, list[Number]], empty: str | None = None) -> None:
        self.xs, self.series, self.dirty = xs, series, True
        if empty is not None:
            self.empty = empty

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_figure()
        limit = max(20, 2 * max(10, self.size.width - 10))
        drawn = False
        for label, ys in self.series.items():
            xs, vals = thin(self.xs, ys, limit)
            if vals:
                plt.plot(xs, vals, label=label if len(self.series) > 1 else None, marker="braille")
                drawn = True
        plt.title(self.chart_title if drawn else f"{self.chart_title}: {self.empty}")
        if drawn:
            plt.xlabel(self.xlabel)
            if self.ylabel:
                plt.ylabel(self.ylabel)
        self.dirty = False
        self.refresh()


class BarChart(PlotextPlot):
    """Horizontal bars, one per label."""

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.chart_title = title

    def set_bars(self, labels: list[str], values: list[float], *, empty: str = "no data") -> None:
        plt = self.plt
        plt.clear_figure()
        if labels:
            plt.bar(labels, values, orientation="horizontal", width=0.6)
            plt.title(self.chart_title)
        else:
            plt.title(f"{self.chart_title}: {empty}")
        self.refresh()

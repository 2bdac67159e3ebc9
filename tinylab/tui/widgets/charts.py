"""Plotext charts that take data at any rate and redraw only when asked (a timer, at most a few Hz).

Colours come from textual-plotext's "auto" theme, which follows the app's Textual theme, so the
charts stay readable on light terminals. A chart given too few rows to plot in says its values
in words (see SeriesChart.render).
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual_plotext import PlotextPlot

from tinylab.tui.fmt import number

Number = float | int | None

#: Fewer rows than this and plotext's title, frame, ticks and axis label leave under 3 rows for the
#: lines: at 120x40 the Run screen's four charts got 4 rows each and drew frames with no line in
#: them and tick labels run together ("82.31.0"). Such a chart says its values in words instead.
MIN_PLOT_ROWS = 8


def thin(xs: Sequence[float], ys: Sequence[Number], limit: int) -> tuple[list[float], list[float]]:
    """Drop unknown points, then keep at most `limit` of them: the lowest and the highest of each of
    limit/2 even buckets, in order, and always the last. A stride would drop peaks: a memory chart
    whose title gives its peak drew a line short of it, lower at one width than at another."""
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
    if len(pts) > limit:
        buckets = max(1, (limit - 1) // 2)
        size = len(pts) / buckets
        kept: list[int] = []
        for b in range(buckets):
            chunk = range(int(b * size), max(int(b * size) + 1, int((b + 1) * size)))
            lo, hi = min(chunk, key=lambda i: pts[i][1]), max(chunk, key=lambda i: pts[i][1])
            kept += sorted({lo, hi})
        if kept[-1] != len(pts) - 1:
            kept.append(len(pts) - 1)
        pts = [pts[i] for i in kept]
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

    def on_resize(self) -> None:
        """The points kept depend on the width (thin): a chart drawn at another width draws again."""
        self.dirty = True

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

    def render(self):
        if not self.size.area or self.size.height >= MIN_PLOT_ROWS:
            return super().render()
        return self.in_words()

    def in_words(self) -> Text:
        """The title and x range, then a line a series: its latest value and its range."""
        known = {label: vals for label, ys in self.series.items() if (vals := [y for y in ys if y is not None])}
        if not known:
            return Text(f"{self.chart_title}: {self.empty}", style="bold", no_wrap=True, overflow="ellipsis")
        out = Text(self.chart_title, style="bold", no_wrap=True, overflow="ellipsis")
        if self.xs:
            out.append(f" · {self.xlabel} {number(self.xs[0], ',.4g')}–{number(self.xs[-1], ',.4g')}")
        for label, ys in known.items():
            out.append(f"\n {label}  " if len(known) > 1 or label != self.chart_title else "\n last ")
            out.append(number(ys[-1], ",.4g"), style="bold")
            out.append(f"  ({number(min(ys), ',.4g')}–{number(max(ys), ',.4g')})")
        return out


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


class SweepChart(PlotextPlot):
    """One quantity on the left axis and one on the right over the values of a swept parameter,
    each with its own marker and a legend (the two read apart without colour)."""

    LEFT_MARKER, RIGHT_MARKER = "●", "◆"

    def set_sweep(self, labels: list[str], left: tuple[str, list[Number]], right: tuple[str, list[Number]],
                  title: str) -> None:
        """``labels`` name the x positions; ``left``/``right`` are (legend, one value a label or None)."""
        plt = self.plt
        plt.clear_figure()
        xs = list(range(1, len(labels) + 1))
        for (name, values), side, marker in ((left, "left", self.LEFT_MARKER), (right, "right", self.RIGHT_MARKER)):
            known_xs, known = thin(xs, values, len(xs))  # None (failed) dropped; a sweep's few points all kept
            if known:
                plt.plot(known_xs, known, label=name, marker=marker, yside=side)
        plt.xticks(xs, labels)
        plt.xlim(0.5, len(labels) + 0.5)
        plt.title(title)
        self.refresh()

    def clear_sweep(self, title: str) -> None:
        self.plt.clear_figure()
        self.plt.title(title)
        self.refresh()

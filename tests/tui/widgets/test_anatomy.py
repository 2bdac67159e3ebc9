"""The step anatomy is laid out for the widget's own width: no line is wrapped a second time by
the terminal (seen at 80x24 on an H100 run as "... 1433 kernels of 3" / "µs" / "median"), and a
resize lays it out again."""

from __future__ import annotations

import dataclasses

import pytest
from support.paths import FIX
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from tinylab.analysis import timeline
from tinylab.tui.widgets.anatomy import AnatomyText

from ..conftest import wait_for

V4_GRAPH = FIX / "pytorch-profiler" / "tinylab_h100_v4_graph" / "trace.json.gz"


class AnatomyApp(App):
    CSS = "#anatomy { padding: 0 1; }"

    def compose(self) -> ComposeResult:
        yield VerticalScroll(AnatomyText(id="anatomy"))


def lines_of(widget: AnatomyText) -> list[str]:
    return str(widget.render()).splitlines()


@pytest.mark.asyncio
async def test_text_fits_the_widget_and_follows_its_width():
    result = dataclasses.replace(timeline.analyze(V4_GRAPH), title="timeline of a v4 run on an H100")
    app = AnatomyApp()
    async with app.run_test(size=(80, 8)) as pilot:  # 8 rows: the text scrolls, and its scrollbar takes 2 columns
        widget = app.query_one(AnatomyText)
        widget.show(result)
        scroll = app.query_one(VerticalScroll)
        # a loaded machine takes frames: the text laid out, then the scrollbar it needs takes 2 columns
        await wait_for(pilot, lambda: widget.laid_out and scroll.show_vertical_scrollbar
                       and widget.content_region.width == 80 - 2 - 2, what="the anatomy laid out beside its scrollbar")
        width = widget.content_region.width
        shown = lines_of(widget)
        assert max(len(line) for line in shown) <= width, shown
        assert any(line.startswith("step 7: graph replay") for line in shown)
        await pilot.resize_terminal(60, 8)
        await wait_for(pilot, lambda: widget.content_region.width < width and widget.laid_out, what="laid out again")
        narrow = widget.content_region.width
        assert narrow < width and max(len(line) for line in lines_of(widget)) <= narrow
        widget.show("run 1 has no PyTorch profiler trace")
        await pilot.pause()
        assert lines_of(widget) == ["run 1 has no PyTorch profiler trace"]


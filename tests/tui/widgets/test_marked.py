"""MarkedOptionList: the highlighted option is marked `▶`, not shown by its colour alone (the Lab's
versions, the exercise list and the Diagnose picker read the same in a monochrome terminal)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets.option_list import Option

from tinylab.tui.widgets.marked import MarkedOptionList

pytestmark = pytest.mark.asyncio


class OneList(App):
    CSS = "MarkedOptionList { border: none; padding: 0; }"  # the lines are the options'

    def compose(self) -> ComposeResult:
        yield MarkedOptionList(Option("alpha"), Option("beta, long enough to wrap onto a second line here"),
                               Option("gamma"), id="list")


async def test_the_highlighted_option_carries_the_mark_and_only_its_first_line():
    app = OneList()
    async with app.run_test(size=(30, 8)) as pilot:
        options = app.query_one(MarkedOptionList)
        options.focus()
        options.highlighted = 0
        await pilot.pause()
        lines = [options.render_line(y).text for y in range(5)]
        assert lines[0].startswith("▶ alpha") and lines[1].startswith("  beta")
        await pilot.press("down")
        await pilot.pause()
        lines = [options.render_line(y).text for y in range(5)]
        marked = [line for line in lines if "▶" in line]
        assert marked == [lines[1]] and lines[1].startswith("▶ beta") and lines[2].startswith("  ")  # wrapped
        assert lines[0].startswith("  alpha") and any(line.startswith("  gamma") for line in lines)
        assert all(len(line) == 30 for line in lines)  # the mark's gutter inside the width, every line

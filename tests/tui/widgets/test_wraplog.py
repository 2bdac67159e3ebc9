"""The Run screen's log wraps what is longer than its width: no line is cut, and no horizontal
scrollbar draws a stray glyph above the footer (seen at 80x24 as a lone `▎`)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from tinylab.tui.widgets.wraplog import WrapLog

COMMAND = "$ /usr/bin/python3 -P -m tinylab.training.trainer --config /tmp/tinylab_runs/20261126-223824-8c3a/config.json"
STEP = "step    7/20 | loss   6.6900 |    27.00 ms |     74.1 samples/s"
TRACE = '    File "/work/tinylab/training/trainer.py", line 286, in _record_step'


class LogApp(App):
    def compose(self) -> ComposeResult:
        yield WrapLog(max_lines=100, id="log")


@pytest.mark.asyncio
async def test_long_lines_wrap_and_reflow_on_resize():
    app = LogApp()
    async with app.run_test(size=(54, 12)) as pilot:
        log = app.query_one(WrapLog)
        log.write_lines([COMMAND, STEP, TRACE, "short"])
        await pilot.pause()
        width = log.scrollable_content_region.width
        shown = list(log.lines)
        assert width < len(COMMAND) and all(len(line) <= width for line in shown), shown
        assert not log.show_horizontal_scrollbar
        # the step line loses its padding and fits; the command wraps, continuations indented
        step = shown.index("step 7/20 | loss 6.6900 | 27.00 ms | 74.1 samples/s")
        assert step > 1 and shown[0].startswith("$ /usr/bin/python3") and shown[1].startswith("  ")
        assert "".join(shown[:step]).replace(" ", "") == COMMAND.replace(" ", "")  # nothing lost
        assert shown[-1] == "short" and any(line.startswith('    File "') for line in shown)  # indentation kept
        log.write_lines([f"step {i}" for i in range(40)])
        await pilot.pause()
        assert log.is_vertical_scroll_end
        await pilot.resize_terminal(160, 12)
        await pilot.pause()
        assert list(log.lines)[:4] == [COMMAND, STEP, TRACE, "short"]  # wide enough: as written
        log.write_lines([COMMAND] * 20)
        await pilot.pause()
        await pilot.resize_terminal(50, 12)  # narrower: more rows than before
        await pilot.pause()
        assert log.is_vertical_scroll_end  # a log followed at its end stays there


@pytest.mark.asyncio
async def test_a_log_at_its_end_stays_there_when_it_gets_shorter_and_one_scrolled_up_stays_put():
    """The Run screen adds panels as a run ends and the log loses rows: read at its end, it must
    still show its last line (it showed its middle); scrolled up by the reader, it keeps its place."""
    app = LogApp()
    async with app.run_test(size=(60, 30)) as pilot:
        log = app.query_one(WrapLog)
        log.write_lines([f"step {i}" for i in range(40)])
        await pilot.pause()
        assert log.is_vertical_scroll_end
        await pilot.resize_terminal(60, 12)  # the same width, fewer rows
        await pilot.pause()
        assert log.is_vertical_scroll_end and log.scroll_offset.y == 40 - log.scrollable_content_region.height
        log.scroll_to(y=5, animate=False, immediate=True)
        await pilot.pause()
        await pilot.resize_terminal(60, 8)
        await pilot.pause()
        assert log.scroll_offset.y == 5  # the reader's place, not the end
        log.write_lines(["more"])
        await pilot.pause()
        assert log.scroll_offset.y == 5
        log.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        await pilot.resize_terminal(60, 20)  # taller: Textual pulls the offset back, still at its end
        await pilot.pause()
        await pilot.resize_terminal(60, 10)
        await pilot.pause()
        assert log.is_vertical_scroll_end


def test_fold_breaks_at_spaces_or_cuts_a_long_word():
    from tinylab.tui.widgets.wraplog import fold

    assert fold("aaa bbb ccc", 7) == ["aaa bbb", "  ccc"]
    assert fold("x" * 25, 10) == ["x" * 10, "  " + "x" * 8, "  " + "x" * 7]
    assert fold("    File a b", 9) == ["    File", "  a b"]  # its own indentation stays

"""The Advice panel and the try-it loop at 80x24: a finished run's advice on its Run screen (`a`),
its item launched as run B (`b`), B's Run screen, then Compare with the verdict when B ends; the
same panel on the Hotspots screen; and an item that no setting fixes launches nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.advice import A, bad_init_run
from support.runs import make_run

from .. import fakes
from ..conftest import SIZE, make_app, screen_name, screen_text, wait_for

pytestmark = pytest.mark.asyncio


def _panel_loaded(pilot) -> bool:
    panel = pilot.app.screen.query("#advice")
    return bool(panel) and panel.first().items is not None


async def test_the_try_it_loop_from_the_run_screen_to_compare(tmp_path: Path):
    bad_init_run(tmp_path / "runs")
    app = make_app(tmp_path / "runs", clock=None)
    async with app.run_test(size=SIZE) as pilot:
        app.open_run(A)
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen" and _panel_loaded(pilot), what="the advice")
        await pilot.press("a")
        screen = pilot.app.screen
        assert screen.query_one("#run-panes").current.id == "advice-pane"
        head = str(screen.query_one("#advice-head").render())
        detail = str(screen.query_one("#advice-detail").render())
        assert "1 error" in head and "b: try the highlighted item as run B" in head
        assert "bad-init" in detail and "without --fault missing-init" in detail and "performance-debugging" in detail
        assert "Try as B" in [c.title for c in app.get_system_commands(screen)]  # the palette offers it
        await pilot.press("b")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen" and pilot.app.screen.run_id != A,
                       timeout=30, what="run B's Run screen")
        b = pilot.app.screen.run_id
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen", timeout=150, what="Compare after B")
        compare = pilot.app.screen
        assert (compare.a_id, compare.b_id) == (A, b)
        await wait_for(pilot, lambda: compare.query("#cmp-advice") and "held" in str(compare.query_one("#cmp-advice")
                                                                                     .render()), what="the verdict")
        verdict = str(compare.query_one("#cmp-advice").render())
        assert "✓ held  bad-init" in verdict and "initial loss 40.0000 -> " in verdict
        # shown after the next refresh (the panes' own mount may come after a fast answer)
        await wait_for(pilot, lambda: compare.query_one("#cmp-panes").current.id == "advice-pane",
                       what="the Advice pane in front")


async def test_the_hotspots_screen_has_the_panel_and_a_finding_launches_nothing(tmp_path: Path):
    start = {"event": "start", "time": 1.0, "device": "cpu", "device_name": "x86_64", "config": {}}
    summary = {"event": "summary", "time": 2.0, "step_ms_median": 10.0, "step_ms_p10": 9.9, "step_ms_p90": 10.1,
               "initial_loss": 6.9, "params_trained": 1, "params_total": 20}  # a partly trained v1: no fault to drop
    make_run(tmp_path / "runs", A, [start, summary])
    app = make_app(tmp_path / "runs", clock=None)
    async with app.run_test(size=SIZE) as pilot:
        app.open_hotspots(A)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen" and _panel_loaded(pilot),
                       what="the advice")
        await pilot.press("a")
        screen = pilot.app.screen
        assert screen.query_one("#hot-panes").current.id == "advice-pane"
        assert [i.rule for i in screen.query_one("#advice").items] == ["untrained-parameters"]
        assert screen.check_action("try_advice", ()) is False  # a change by hand: nothing to launch
        screen.query_one("#advice").try_selected()
        await pilot.pause(0.2)
        assert screen_name(pilot) == "HotspotsScreen" and len(list((tmp_path / "runs").iterdir())) == 1


async def test_every_item_reads_in_full_at_80x24_and_pagedown_reaches_the_last_action(tmp_path: Path):
    """Issue 38: the table cut the measured value (`= 64% of th`) and the last item's action ran below
    the box, where PageDown (which paged the table's cursor) never took it. A 2-rank run's two items,
    long actions: each row's measured value wraps in its cell, and with the last item highlighted
    PageDown scrolls the panel to its action, all on screen."""
    run = "20261126-024200-e7e7"
    fakes.make_run(tmp_path / "runs", run, ranks=2, step_ms=44.0)
    app = make_app(tmp_path / "runs", clock=None)
    async with app.run_test(size=SIZE) as pilot:
        app.open_run(run)
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen" and _panel_loaded(pilot), what="the advice")
        await pilot.press("a")
        await pilot.pause(0.2)
        items = pilot.app.screen.query_one("#advice").items
        assert len(items) == 2 and {i.severity for i in items} == {"suggestion"}
        assert "Advice: 2 suggestions" in str(pilot.app.screen.query_one("#advice-head").render())  # not "2 suggestion"
        for item in items:  # each row's measured value, whole
            assert words(item.measured.text) in shown(pilot), item.rule
        await pilot.press("down")
        await pilot.pause(0.2)  # the row scrolled to, then a page on
        await pilot.press("pagedown")
        await pilot.pause(0.2)
        last = items[-1]
        on_screen = shown(pilot)
        assert f"action: {words(last.action.text)}" in on_screen and words(last.measured.text) in on_screen


def words(text: str) -> str:
    return " ".join(text.split())


def shown(pilot) -> str:
    """The screen's words, line after line, left of the scroll bar's two columns (a wrapped value reads
    as one)."""
    return words(" ".join(line.ljust(SIZE[0])[:SIZE[0] - 2] for line in screen_text(pilot.app.export_screenshot())))


async def test_advice_that_comes_as_its_screen_closes_is_no_crash():
    """The answer can come while the screen is closing (the run ended, then esc or quit): its widgets
    were marked for removal before the panel had mounted its detail, and the panel, still running,
    took the answer and found no '#advice-detail' (NoMatches ended the app; seen under load)."""
    from textual.app import App

    from tinylab.tui.widgets.advice import AdviceLoaded, AdvicePanel

    class PanelApp(App):
        def compose(self):
            yield AdvicePanel(id="advice")

    app = PanelApp()
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(AdvicePanel)
        await panel.query_one("#advice-detail").remove()  # the state that closing leaves
        panel.post_message(AdviceLoaded([], ["a note"], None))
        await pilot.pause(0.2)
        assert panel.loaded and "nothing to say about this run" in str(panel.query_one("#advice-head").render())
    # (an exception in a handler would have been raised by run_test as it closed)

"""The Compare screen at 80x24 (tinylab/tui/screens/compare.py): two marked runs, runs of two world
sizes, the A/B chart's fields, the repeat key (its launches stand-ins: support/repeat.py) and the
statistics page."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.repeat import FakeLaunches

from tinylab.tui.backend import Backend

from ..conftest import SIZE, V1, V2, make_app, screen_name, screen_text, text_of, wait_for
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
        assert first[0] == "samples/s" and first[3].startswith("1.56x [") and "not sure" in first[4]
        kernels = pilot.app.screen.query_one("#kernel-diff")
        assert kernels.row_count > 0
        await pilot.press("s")
        await wait_for(pilot, lambda: [str(c) for c in metrics.get_row_at(0)][3].startswith("0.64x ["), what="swap")


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


async def opened(pilot, a: str, b: str) -> None:
    pilot.app.open_compare(a, b)
    await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen" and pilot.app.screen.query("#metrics")
                   and pilot.app.screen.query_one("#metrics").row_count > 0, what="metrics")


async def test_r_repeats_both_interleaved_and_the_table_follows(store: Path, monkeypatch):
    """Two CPU runs of one config, B's repeats three times as fast: `r` launches them in the
    background (B first: it ran last), the line says how far it is, and the table shows the pooled
    verdict once the interval settles it."""
    a, b = "20261126-023000-d4d4", "20261126-023100-d5d5"
    for run_id in (a, b):
        make_run(store, run_id, gpu=False, profile=False, step_ms=40.0)
    from tinylab.runs.store import Run

    fake = FakeLaunches.of(Run(store / a), Run(store / b), [50.0] * 5, [150.0] * 5).patch(monkeypatch, Backend)
    async with make_app(store).run_test(size=SIZE) as pilot:
        await opened(pilot, a, b)
        metrics = pilot.app.screen.query_one("#metrics")
        assert text_of(pilot, "#cmp-repeat").startswith("r: repeat both runs, interleaved, until sure")
        await pilot.press("r")
        await wait_for(pilot, lambda: "settled" in text_of(pilot, "#cmp-repeat"), what="the repeat's end")
        line = text_of(pilot, "#cmp-repeat")
        assert line.startswith("settled: the 99% interval excludes 1: B is better"), line
        assert [side for side, _ in fake.launched][:2] == ["a", "b"]
        row = [str(c) for c in metrics.get_row_at(0)]
        assert row[0] == "samples/s" and "B better" in row[4], row
        assert pilot.app.screen.repeating is None
        pooled = len(fake.launched) // 2 + 1
        assert f"({pooled} runs of A and {pooled} of B pooled)" in line


async def test_escape_stops_a_repeat_and_stays(store: Path, monkeypatch):
    """While a repeat runs, escape (or r) stops it rather than leaving the screen."""
    import threading

    gate = threading.Event()
    a, b = "20261126-023000-d4d4", "20261126-023100-d5d5"
    for run_id in (a, b):
        make_run(store, run_id, gpu=False, profile=False, step_ms=40.0)
    from tinylab.runs.store import Run

    fake = FakeLaunches.of(Run(store / a), Run(store / b), [40.0] * 5, [40.0] * 5)
    monkeypatch.setattr(Backend, "launch", lambda _lab, cfg: gate.wait(10) and fake(cfg))
    async with make_app(store).run_test(size=SIZE) as pilot:
        await opened(pilot, a, b)
        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.repeating is not None, what="the repeat")
        await pilot.press("escape")
        assert screen_name(pilot) == "CompareScreen" and text_of(pilot, "#cmp-repeat").startswith("stopping")
        gate.set()
        await wait_for(pilot, lambda: text_of(pilot, "#cmp-repeat").startswith("stopped after"), what="stopped")
        assert pilot.app.screen.repeating is None and len(fake.launched) <= 1
        await pilot.press("escape")
        assert screen_name(pilot) != "CompareScreen"


async def test_question_mark_opens_the_statistics_page(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        await opened(pilot, V1, V2)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: screen_name(pilot) == "DocScreen", what="the page")
        page = pilot.app.screen.query_one("#doc-text")
        await wait_for(pilot, lambda: "How sure is a comparison?" in page.source, what="its text")
        assert pilot.app.screen.query_one("#doc").border_title == "docs/statistics.md (esc closes)"
        await pilot.press("escape")
        assert screen_name(pilot) == "CompareScreen"


async def test_a_setting_one_run_lacks_reads_as_a_dash_not_none(store: Path):
    """`differs: fault missing-init→None` printed Python's None (issue 38): every view says "-"."""
    faulty = "20261126-023000-d4d4"
    make_run(store, faulty, version="v1", fault="missing-init")
    async with make_app(store).run_test(size=SIZE) as pilot:
        await opened(pilot, V1, faulty)
        await wait_for(pilot, lambda: "differs:" in text_of(pilot, "#cmp-head"), what="the differences")
        head = text_of(pilot, "#cmp-head")
        assert "fault -→missing-init" in head and "None" not in head


#: Two CPU runs, not profiled, whose load sampler found the machine busy (other processes wanted
#: 1.8 cores, none spare): Compare says so in a note a side, and has no kernel diff.
BUSY_A, BUSY_B = "20261126-023000-d4d4", "20261126-023100-d5d5"


def busy_pair(store: Path) -> tuple[str, str]:
    """BUSY_A and BUSY_B written in `store`, their summaries with the load a busy machine leaves."""
    import json

    for run_id, step_ms in ((BUSY_A, 40.0), (BUSY_B, 30.0)):
        run_dir = make_run(store, run_id, gpu=False, profile=False, step_ms=step_ms)
        events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        for event in events:
            if event["event"] == "summary":
                event.update(others_cpu_cores=1.8, spare_cpu_cores=0.0)
        (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return BUSY_A, BUSY_B


def shown_in(pilot, selector: str) -> str:
    """The words on screen in the widget's columns, row after row (a wrapped note reads as one)."""
    region = pilot.app.screen.query_one(selector).region
    lines = screen_text(pilot.app.export_screenshot())
    return " ".join(" ".join(line.ljust(region.right)[region.x:region.right] for line in lines).split())


def whole_on_screen(pilot, selector: str) -> bool:
    """No row of the widget is scrolled or clipped out of sight."""
    geometry = pilot.app.screen.find_widget(pilot.app.screen.query_one(selector))
    return geometry.visible_region == geometry.region


def notes_of(pilot) -> list[str]:
    return [" ".join(line.lstrip("• ").split()) for line in text_of(pilot, "#cmp-notes").splitlines()]


async def test_busy_notes_read_in_full_beside_an_empty_kernels_box_at_120x40(store: Path):
    """Issue 38: at 120x40 the busy-machine notes were cut mid-sentence while an empty Kernels box took
    16 rows (and the Advice pane had no row at all). The box is as high as its one line saying why it
    is empty, the notes wrap on screen in full, and A's advice checked against B shows."""
    a, b = busy_pair(store)
    async with make_app(store).run_test(size=(120, 40)) as pilot:
        await opened(pilot, a, b)
        await wait_for(pilot, lambda: "busy during B" in text_of(pilot, "#cmp-notes")
                       and "Checking" not in text_of(pilot, "#cmp-advice"), what="the notes and the advice")
        await pilot.pause(0.2)
        notes = notes_of(pilot)
        assert len(notes) == 3 and notes[0].startswith("the machine was busy during A: other processes used 1.8")
        shown = shown_in(pilot, "#cmp-notes")
        assert whole_on_screen(pilot, "#cmp-notes") and all(f"• {note}" in shown for note in notes), shown
        region = pilot.app.screen.query_one("#cmp-notes").content_region
        rows = [line.ljust(region.right)[region.x:region.right] for line in screen_text(pilot.app.export_screenshot())]
        first = next(i for i, row in enumerate(rows) if row.startswith("• the machine was busy during A"))
        last = next(i for i, row in enumerate(rows) if "(docs/statistics.md)" in row)
        rows = rows[first:last + 1]
        assert len(rows) > len(notes) and all(row.startswith(("• ", "  ")) for row in rows), rows  # hanging
        assert pilot.app.screen.query_one("#kernels-pane").region.height == 3  # its border and one line
        assert "No kernel diff: both runs need a kernel table" in shown_in(pilot, "#kernels-pane")
        assert whole_on_screen(pilot, "#cmp-advice") and "no advice item of A applies to B" in shown_in(
            pilot, "#advice-pane")


async def test_r_goes_as_far_as_the_note_asks(store: Path):
    """The note said `--repeat 9` beside "r: … (at most 6 a side)": r stopped short of what it
    was told would settle it. Its budget is the note's, the runs given included."""
    a, b = busy_pair(store)
    async with make_app(store).run_test(size=SIZE) as pilot:
        await opened(pilot, a, b)
        await wait_for(pilot, lambda: "`--repeat" in text_of(pilot, "#cmp-notes"), what="the notes")
        repeats = int(text_of(pilot, "#cmp-notes").split("`--repeat ")[1].split("`")[0])
        assert repeats + 1 > 6 and pilot.app.screen.budget == repeats + 1
        assert f"until sure (at most {repeats + 1} a side)" in text_of(pilot, "#cmp-repeat")


async def test_pagedown_in_the_metrics_reaches_their_last_note_at_80x24(store: Path):
    """At 80x24 the table leaves the notes a line or two: PageDown in it (and an arrow past its last
    row) scrolls the metrics to the last note's end; PageUp back to the table's head."""
    a, b = busy_pair(store)
    async with make_app(store).run_test(size=SIZE) as pilot:
        await opened(pilot, a, b)
        await wait_for(pilot, lambda: "busy during B" in text_of(pilot, "#cmp-notes"), what="the notes")
        assert pilot.app.focused.id == "metrics"
        last = notes_of(pilot)[-1]
        assert f"• {last}" not in shown_in(pilot, "#metrics-pane")
        await pilot.press("pagedown")
        await pilot.pause(0.2)
        assert f"• {last}" in shown_in(pilot, "#metrics-pane")
        await pilot.press("pageup")
        await pilot.pause(0.2)
        assert "metric A B B/A [interval] samples/s" in shown_in(pilot, "#metrics-pane")
        for _ in range(20):  # the arrows: down the rows, then on past the last one
            await pilot.press("down")
        await pilot.pause(0.2)
        assert f"• {last}" in shown_in(pilot, "#metrics-pane")

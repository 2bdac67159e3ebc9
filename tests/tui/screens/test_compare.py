"""The Compare screen at 80x24 (tinylab/tui/screens/compare.py): two marked runs, runs of two world
sizes, the A/B chart's fields, the repeat key (its launches stand-ins: support/repeat.py) and the
statistics page."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.repeat import FakeLaunches

from tinylab.tui.backend import Backend

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

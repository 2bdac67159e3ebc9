"""The Hotspots screen (tinylab/tui/screens/hotspots.py): sort, filter, category and artifacts at
80x24, one rank at a time, the roofline and timeline panels, and the Artifacts panel's "how to
open it" hint, by file name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinylab.core.errors import UserError
from tinylab.tui.screens.hotspots import open_hint

from ..conftest import SIZE, V1, make_app, screen_name, screen_text, text_of, wait_for
from ..fakes import make_run


@pytest.mark.asyncio
async def test_hotspots_sort_filter_category_and_artifacts(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.query("#runs") and
                       pilot.app.screen.query_one("#runs").row_count == 3, what="runs")
        await pilot.press("down", "down")  # the oldest: v1
        await pilot.press("k")
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        screen = pilot.app.screen
        table = screen.query_one("#kernels")
        await wait_for(pilot, lambda: table.row_count == 10, what="kernel rows")
        assert "ampere_sgemm_128x64_tn" in text_of(pilot, "#kernel-name")
        await pilot.press("down")
        assert "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_16x3_nt_align4>(Params)" in text_of(
            pilot, "#kernel-name")
        await pilot.press("s")  # total -> share
        await pilot.press("s")  # share -> calls
        await wait_for(pilot, lambda: screen.sort_key == "calls" and screen.shown[0]["calls"] == 960,
                       what="sorted by calls")
        await pilot.press("S")
        await wait_for(pilot, lambda: screen.shown[0]["calls"] == 24, what="reverse sort")
        await pilot.press("slash")
        await pilot.press(*"gemm")
        await wait_for(pilot, lambda: table.row_count == 2, what="name filter")
        await pilot.press("enter")
        for _ in screen.summary.categories:
            await pilot.press("c")
            await pilot.pause(0.05)
            if screen.category == "attention":
                break
        pilot.app.screen.query_one("#hot-filter").value = ""
        await wait_for(pilot, lambda: table.row_count == 1 and screen.shown[0]["category"] == "attention",
                       what="category filter")
        await pilot.press("t", "t")
        assert screen.query_one("#hot-panes").current.id == "artifacts-pane"
        artifacts = text_of(pilot, "#artifacts")
        assert "trace.json.gz" in artifacts and "ui.perfetto.dev" in artifacts


@pytest.mark.asyncio
async def test_hotspots_of_a_run_of_two_ranks_shows_one_rank_at_a_time(store: Path):
    """Rank 0's table with a note, never the ranks merged; R shows rank 1's (the straggler's: 1.3x the
    time), then rank 0's again; a one-process run has no R."""
    make_run(store, "20261126-024000-e5e5", ranks=2)
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots("20261126-024000-e5e5")
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.query("#kernels") and screen.query_one("#kernels").row_count == 11,
                       what="rank 0's rows")
        head = text_of(pilot, "#hot-head")
        assert "rank 0 of 2 (R: next)" in head and "communication 8%" in head, head
        assert "kernel time: rank 1 +30% over rank 0" in head
        await wait_for(pilot, lambda: "rank 0 of 2" in text_of(pilot, "#hot-timeline"), what="rank 0's timeline")
        total = screen.summary.total_ns
        assert screen.shown[0]["total_ns"] == 41_200_000 and total == 99_650_000  # rank 0's own, not a sum
        assert any(cmd.title == "Next rank" for cmd in pilot.app.get_system_commands(screen))
        await pilot.press("R")
        await wait_for(pilot, lambda: screen.summary.ranks.rank == 1, what="rank 1")
        await wait_for(pilot, lambda: screen.shown[0]["total_ns"] == pytest.approx(1.3 * 41_200_000), what="rows")
        assert "rank 1 of 2" in text_of(pilot, "#hot-head")
        assert "rank 1 of 2" in text_of(pilot, "#hot-timeline")  # the step anatomy follows the rank
        await pilot.press("R")
        await wait_for(pilot, lambda: screen.summary.ranks.rank == 0, what="rank 0 again")
        await pilot.press("escape")
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen" and pilot.app.screen.summary
                       and pilot.app.screen.tables is not None, what="a one-process run")
        assert "rank" not in text_of(pilot, "#hot-head")
        assert not any(cmd.title == "Next rank" for cmd in pilot.app.get_system_commands(pilot.app.screen))


@pytest.mark.asyncio
async def test_the_panel_strip_fits_80_columns(store: Path):
    """Issue 38: at 80 columns the strip ended `Advice    t:` (six panels and the hint were 91
    columns): it names every panel and its key in full."""
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen" and pilot.app.screen.query(".pane-strip")
                       and "Advice" in text_of(pilot, ".pane-strip"), what="the strip")
        strip = text_of(pilot, ".pane-strip")
        assert len(strip) <= SIZE[0] and strip.endswith("t: next panel"), strip
        line = next(line for line in screen_text(pilot.app.export_screenshot()) if line.startswith(" Kernels  │"))
        assert line == strip.rstrip() and [p.title for p in pilot.app.screen.query_one("#hot-panes").panes] == [
            "Kernels", "Shares", "Files", "Roofline", "Step", "Advice"]


@pytest.mark.asyncio
async def test_hotspots_roofline_panel(store: Path):
    """Without ceilings the panel says how to get them; with ceilings of the run's card it draws.
    (Its waits are 30 s: under load they timed out at 10, while the test passed alone.)"""
    import json

    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", timeout=30, what="hotspots")
        await wait_for(pilot, lambda: pilot.app.screen.query("#roofline"), timeout=30, what="roofline pane")
        await wait_for(pilot, lambda: "No ceilings measured" in text_of(pilot, "#roofline"), timeout=30, what="hint")
        assert f"tinylab roofline {V1}" in text_of(pilot, "#roofline")
    ceilings = {"copy_gbps": 3000.0, "gemm_tflops": {"fp32": {"large": 50.0}, "bf16": {"large": 700.0}}}
    (store / "ceilings-NVIDIA_H100_80GB_HBM3.json").write_text(json.dumps(ceilings))
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", timeout=30, what="hotspots")
        await wait_for(pilot, lambda: pilot.app.screen.query("#roofline"), timeout=30, what="roofline pane")
        await wait_for(pilot, lambda: "ridge at" in text_of(pilot, "#roofline"), timeout=30, what="roofline")
        assert "training step" in text_of(pilot, "#roofline")
        await pilot.press("t", "t", "t")
        assert pilot.app.screen.query_one("#hot-panes").current.id == "roofline-pane"


@pytest.mark.asyncio
async def test_hotspots_timeline_panel_takes_its_turn_on_a_wide_screen(store: Path):
    """At 120 columns artifacts, roofline and timeline share the grid's last cell; t cycles them."""
    async with make_app(store).run_test(size=(120, 40)) as pilot:
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        await wait_for(pilot, lambda: pilot.app.screen.query("#hot-timeline"), what="timeline pane")
        await wait_for(pilot, lambda: "launch-bound" in text_of(pilot, "#hot-timeline"), what="timeline text")
        screen = pilot.app.screen
        assert screen.query_one("#artifacts-pane").display and not screen.query_one("#timeline-pane").display
        await pilot.press("t", "t")
        assert screen.query_one("#timeline-pane").display and not screen.query_one("#artifacts-pane").display
        assert "GPU |" in text_of(pilot, "#hot-timeline")


@pytest.mark.asyncio
async def test_hotspots_says_what_it_is_reading(store: Path):
    """The table comes first; the worker that reads the trace for the step anatomy says how far it
    has come on a line of its own, which goes once the anatomy is shown."""
    from tinylab.tui.screens.hotspots import Reading

    app = make_app(store)
    heard = []
    timeline = app.backend.timeline

    def listened(*args, progress=None, **kwargs):
        return timeline(*args, progress=lambda *said: (heard.append(said), progress(*said)), **kwargs)

    app.backend.timeline = listened

    def no_advice(run_id):  # the Advice panel's worker would read the trace too, and may come first:
        raise UserError("not in this test")  # the anatomy's read would then find it read (no progress)

    app.backend.advise = no_advice
    async with app.run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        await wait_for(pilot, lambda: pilot.app.screen.query("#hot-timeline"), what="timeline pane")
        await wait_for(pilot, lambda: "launch-bound" in text_of(pilot, "#hot-timeline"), what="timeline text")
        screen = pilot.app.screen
        assert heard and heard[-1][0] == "reading trace.json.gz" and heard[-1][1] == heard[-1][2]
        assert not screen.query_one("#hot-reading").display
        screen.post_message(Reading("reading trace.json.gz for the step anatomy: 45% of 20.9 MB"))
        await wait_for(pilot, lambda: screen.query_one("#hot-reading").display, what="the reading line")
        assert "45% of 20.9 MB" in text_of(pilot, "#hot-reading")


@pytest.mark.parametrize(("path", "says", "never"), [
    ("profiles/pytorch/memory_timeline.json.gz", "tinylab timeline RUN", "ui.perfetto.dev"),  # no trace
    ("profiles/pytorch/trace.json.gz", "ui.perfetto.dev", "timeline RUN"),
    ("profiles/nsys/report.nsys-rep", "nsys-ui", "perfetto"),
])
def test_each_artifact_gets_a_way_to_open_it_that_works(path, says, never):
    what, commands = open_hint(path)
    hint = " ".join([what, *commands])
    assert says in hint and never not in hint


@pytest.mark.asyncio
async def test_artifact_commands_are_never_wrapped_and_y_copies_them(store: Path):
    """At 80 columns an artifact's command was broken at its spaces, then folded mid-path at the
    panel's edge (copied over SSH, a broken command): each path and command is one line, whole,
    which the panel scrolls sideways to show, and `y` copies the commands, one a line; RUN is the
    run's own id."""
    run_id = "20261126-023000-d4d4"
    store = store.parent / ("a-long-folder-name-" * 3) / "runs"  # paths wider than any panel at 80 columns
    make_run(store, run_id, gpu=False)  # a CPU run: its memory timeline says `tinylab timeline RUN`
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots(run_id)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen" and pilot.app.screen.query("#artifacts")
                       and "kernels.csv" in text_of(pilot, "#artifacts"), what="the artifacts")
        screen = pilot.app.screen
        screen.query_one("#hot-panes").show("artifacts-pane")
        await pilot.pause()
        lines = text_of(pilot, "#artifacts").splitlines()
        commands = [line.strip()[2:] for line in lines if line.lstrip().startswith("$ ")]
        csv = str(store / run_id / "profiles/pytorch/kernels.csv")
        assert f"tinylab hotspots {csv}" in commands and "tinylab timeline 1126-0230-d4d4" in commands
        scroll = screen.query_one("#artifacts-scroll")
        inside = scroll.scrollable_content_region.width - 2  # within the gutter, less the text's padding
        assert all(len(line) <= inside for line in lines if not line.lstrip().startswith(("$ ", "a-long", "/"))), lines
        longest = max(len(line) for line in lines)
        assert longest > scroll.content_region.width and screen.query_one("#artifacts").size.width >= longest
        assert scroll.max_scroll_x > 0  # the rest of the line is a scroll away, not on the next row
        assert "tab, then ← → scrolls" in lines[-1]  # as the panel says: a key scrolls it
        scroll.focus()
        await pilot.press("right", "right")
        await pilot.pause()
        assert scroll.scroll_x > 0
        await pilot.press("y")
        await pilot.pause()
        assert pilot.app.clipboard == "\n".join(commands) + "\n"
        assert any("Copied" in n.message for n in pilot.app._notifications), "no word that it copied"

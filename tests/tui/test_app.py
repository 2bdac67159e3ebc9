"""The lab app as a whole (tinylab/tui/app.py), at 80x24 unless said: section keys, the command palette,
keys with nothing to act on, every screen on a big terminal, and a corrupt run folder or a run's
text that looks like markup never breaking it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinylab.runs.store import mark_run

from .conftest import SIZE, V1, make_app, screen_name, text_of, wait_for
from .fakes import make_run

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("key, root, sub", [("r", "RunsScreen", "RunScreen"), ("x", "ExercisesScreen", "StepScreen")])
async def test_a_section_key_shows_the_section_not_its_last_sub_screen(store: Path, key, root, sub):
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press(key)
        await wait_for(pilot, lambda: screen_name(pilot) == root, what=root)
        await wait_for(pilot, lambda: pilot.app.screen.query_one("#runs" if key == "r" else "#scenarios")
                       .row_count if key == "r" else pilot.app.screen.scenarios, what="its list")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(pilot) == sub, what=sub)
        await pilot.press("l")
        await wait_for(pilot, lambda: screen_name(pilot) == "LabScreen", what="the Lab")
        await pilot.press(key)
        await wait_for(pilot, lambda: screen_name(pilot) == root, what=f"{root} again, not {sub}")


async def test_keys_with_nothing_to_act_on_say_why(tmp_path: Path, store: Path):
    async with make_app(tmp_path / "empty").run_test(size=SIZE) as pilot:
        await pilot.press("w")
        await pilot.pause()
        assert any("No run is running" in str(n.message) for n in pilot.app._notifications)
    make_run(store, "20261126-024000-e5e5", version="v1", profile=False)
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunsScreen" and pilot.app.screen.query_one("#runs").row_count,
                       what="the runs")
        await pilot.press("m", "v")
        await pilot.pause()
        assert any("Mark 1 more run" in str(n.message) for n in pilot.app._notifications)
        await pilot.press("k")  # the newest run, highlighted first, was not profiled
        await pilot.pause()
        assert any("was not profiled" in str(n.message) for n in pilot.app._notifications)


async def test_the_palette_has_watch_live_and_one_quit(store: Path):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        titles = [c.title for c in app.get_system_commands(pilot.app.screen)]
        assert titles.count("Quit") == 1 and "Watch live" in titles


async def test_palette_reaches_every_bound_action(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        titles = {c.title for c in pilot.app.get_system_commands(pilot.app.screen)}
        assert {"Launch", "Runs", "Exercises", "Doctor", "Help", "Quit"} <= titles
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        titles = {c.title for c in pilot.app.get_system_commands(pilot.app.screen)}
        assert {"Filter", "Category", "Sort", "Top N", "Back"} <= titles
        await pilot.press("colon")
        await wait_for(pilot, lambda: screen_name(pilot) == "CommandPalette", what="the palette")


async def test_every_screen_opens_at_200x60(store: Path):
    """The snapshots cover 80x24 and 120x40; this walks the sections on a big terminal."""
    async with make_app(store).run_test(size=(200, 60)) as pilot:
        for key, name in (("r", "RunsScreen"), ("x", "ExercisesScreen"), ("d", "DoctorScreen"),
                          ("question_mark", "HelpScreen"), ("escape", "DoctorScreen"), ("l", "LabScreen")):
            await pilot.press(key)
            await wait_for(pilot, lambda: screen_name(pilot) == name, what=name)
        assert pilot.app.screen.has_class("-wide")
        assert pilot.app.screen.query_one("#recent").display


async def test_corrupt_run_folder_does_not_break_the_lab(store: Path):
    bad = store / "20261126-024000-e5e5"
    bad.mkdir()
    mark_run(bad)
    (bad / "config.json").write_text("{not json", encoding="utf-8")
    (bad / "events.jsonl").write_text('{"event": "start"}\n{broken\n', encoding="utf-8")
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.query("#runs") and
                       pilot.app.screen.query_one("#runs").row_count == 4, what="runs")
        await pilot.press("enter")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "running") != "running",
                       what="the corrupt run's status")
        assert pilot.app.screen.status == "lost"
        await pilot.press("k")
        await pilot.pause(0.5)
        assert pilot.app.is_running


# ------------------------------------------------------------------------------ a run's text is never markup
MARKUP_LABEL, BOLD_LABEL = "[/]", "[bold]x"
ODD_KERNEL = "[/]kern[bold]el<[i]>"
ODD_SHORT = "[/]kern[bold]el"  # what short names keep of it (templates fold to <…>)


def _cell_text(cell) -> str:
    """A DataTable cell as the table draws it (a str cell would be parsed as markup here)."""
    from textual.widgets._data_table import default_cell_formatter

    return default_cell_formatter(cell).plain


def _odd_store(root: Path) -> dict[str, str]:
    """Runs whose labels, error and kernel names look like markup (`tinylab run --label '[/]'` is accepted)."""
    from .fakes import KERNELS, write_kernels

    ids = {"closing": "20261126-030000-d1d1", "bold": "20261126-031000-d2d2", "failed": "20261126-032000-d3d3"}
    make_run(root, ids["closing"], label=MARKUP_LABEL)
    make_run(root, ids["bold"], version="v2", label=BOLD_LABEL, kernel_scale=0.5)
    make_run(root, ids["failed"], status="failed", profile=False, label="[/bold]")
    for run_id in (ids["closing"], ids["bold"]):
        write_kernels(root / run_id / "profiles/pytorch/kernels.csv", [(ODD_KERNEL, 500, 90_000_000, "gemm"), *KERNELS])
    events = root / ids["failed"] / "events.jsonl"
    events.write_text(events.read_text().replace("loss became nan at step 3", "[/bold] boom [red]"))
    return ids


async def test_labels_errors_and_kernel_names_that_look_like_markup_show_literally(tmp_path: Path, monkeypatch):
    """A label `[/]` raised a MarkupError when the Lab's recent-runs table drew it (one record could
    take the lab down); `[bold]x` lost its brackets."""
    monkeypatch.chdir(tmp_path)
    ids = _odd_store(Path("runs"))
    async with make_app(Path("runs")).run_test(size=(120, 40)) as pilot:
        recent = pilot.app.screen.query_one("#recent")
        await wait_for(pilot, lambda: recent.row_count == 3, what="the recent runs")
        configs = [_cell_text(recent.get_row_at(i)[-1]) for i in range(recent.row_count)]
        assert any(c.endswith(" [[/]]") for c in configs) and any(c.endswith(" [[bold]x]") for c in configs), configs
        assert any(c.endswith(" [[/bold]]") for c in configs), configs

        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.query("#runs") and
                       pilot.app.screen.query_one("#runs").row_count == 3, what="runs")
        await pilot.press("down")  # newest first: the failed run, then the `[bold]x` one
        await wait_for(pilot, lambda: "label: [bold]x" in text_of(pilot, "#run-detail"), what="the label")
        await pilot.press("up")
        await wait_for(pilot, lambda: "[/bold] boom [red]" in text_of(pilot, "#run-detail"), what="the error")
        await pilot.press("down", "m", "down", "m")
        assert text_of(pilot, "#marks") == f"A = {ids['bold']}   B = {ids['closing']}   v compares"
        await pilot.press("v")
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen", what="compare")
        kernels = pilot.app.screen.query_one("#kernel-diff")
        await wait_for(pilot, lambda: kernels.row_count > 0, what="the kernel diff")
        names = [_cell_text(kernels.get_row_at(i)[-1]) for i in range(kernels.row_count)]
        assert any(n.startswith(ODD_SHORT) for n in names), names

        pilot.app.open_run(ids["failed"])
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "failed", what="failed status")
        assert "FloatingPointError: [/bold] boom [red]" in text_of(pilot, "#outcome")

        pilot.app.open_hotspots(ids["closing"])
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen" and pilot.app.screen.query("#kernels"),
                       what="hotspots")
        table = pilot.app.screen.query_one("#kernels")
        await wait_for(pilot, lambda: table.row_count > 0, what="kernel rows")
        assert ODD_KERNEL in text_of(pilot, "#kernel-name")
        assert _cell_text(table.get_row_at(0)[-1]).startswith(ODD_SHORT)

        pilot.app.notify(f"run {ids['closing']} [{MARKUP_LABEL}] {BOLD_LABEL}")
        await pilot.pause(0.2)
        assert pilot.app.is_running


async def test_a_store_others_may_write_into_is_a_warning_in_the_lab(store: Path):
    store.chmod(0o777)
    try:
        async with make_app(store).run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: any("writable by its group and everyone" in str(n.message)
                                              for n in pilot.app._notifications), what="the warning")
    finally:
        store.chmod(0o755)

"""Keys and focus that do what they say (issue: the first hour of a newcomer), at 80x24."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Select

from tinylab.tui.widgets.form import Option

from .conftest import make_app, wait_for
from .fakes import make_run
from .test_flows import SIZE, TINY_FORM, V1, fill_form, screen_name, text_of

pytestmark = pytest.mark.asyncio


async def test_enter_on_the_device_list_opens_it_and_launches_nothing(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        device = pilot.app.screen.query_one("#device", Select)
        device.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert device.expanded and screen_name(pilot) == "LabScreen"
        await pilot.press("escape")


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


async def test_checkboxes_read_without_colour(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        box = pilot.app.screen.query_one("#toggle-qkv_fusion", Option)
        assert str(box.render()).startswith("[ ]")
        pilot.app.screen.query_one("#versions").highlighted = 1  # v2: its fusions default to on
        await pilot.pause()
        assert str(box.render()).startswith("[x]")


async def test_without_a_gpu_the_form_starts_from_the_cpu_preset_and_says_so(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = pilot.app.screen
        assert screen.query_one("#size", Select).value == "cpu"
        assert screen.query_one("#num-hidden_dim").value == "128" and screen.query_one("#num-batch_size").value == "4"
        screen.query_one("#size", Select).focus()
        await pilot.press("enter", "up", "enter")  # open the list, pick the entry above cpu (workshop)
        await pilot.pause()
        assert screen.query_one("#num-hidden_dim").value == "512"
        screen.query_one("#num-hidden_dim").value = "96"
        await pilot.pause()
        assert screen.query_one("#size", Select).value == "custom"


async def test_the_form_refuses_what_the_trainer_would(tmp_path: Path):
    """v2 with a CUDA graph on a CPU machine: refused in the form, by the trainer's own rule."""
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        screen.query_one("#versions").highlighted = 1
        await pilot.pause()
        fill_form(pilot, TINY_FORM)
        screen.query_one("#toggle-cuda_graph", Option).value = True
        await pilot.pause()
        assert "--cuda-graph needs a GPU" in text_of(pilot, "#check")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert screen_name(pilot) == "LabScreen" and not list((tmp_path / "runs").glob("*"))


async def test_a_versions_figure_comes_only_from_clean_runs_at_the_forms_sizes(store: Path):
    """The store's v1 run is profiled: it is not the figure of v1; a clean run at other sizes neither."""
    make_run(store, "20261126-025000-f6f6", version="v1", step_ms=10.0, profile=False)  # TINY sizes, clean
    async with make_app(store).run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.records, what="the history")
        screen = pilot.app.screen
        fill_form(pilot, TINY_FORM)  # the tiny sizes of the fake runs
        await pilot.pause()
        assert screen.last_runs["v1"].id == "20261126-025000-f6f6" and V1 not in {r.id for r in screen.last_runs.values()}
        screen.query_one("#num-hidden_dim").value = "128"
        await pilot.pause()
        assert "v1" not in screen.last_runs


async def test_enter_before_the_machine_is_known_launches_with_its_preset(tmp_path: Path, monkeypatch):
    """The form shows the workshop's GPU sizes until the doctor answers; on a CPU those train for a
    quarter of an hour, so an early enter waits for the machine and launches the cpu preset."""
    import threading

    from tinylab.tui.backend import Backend

    from .fakes import fake_doctor

    answered = threading.Event()

    def slow_doctor(self, stop=lambda: False):
        while not answered.wait(0.05):
            if stop():
                raise RuntimeError("stopped")
        self.doctor_result = fake_doctor()
        return self.doctor_result

    monkeypatch.setattr(Backend, "doctor", slow_doctor)
    async with make_app(tmp_path / "runs", doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        launched = []
        screen.launch = launched.append
        await pilot.press("enter")
        await pilot.pause()
        assert not launched and "checking the machine first" in text_of(pilot, "#hint")
        answered.set()
        await wait_for(pilot, lambda: launched, what="the launch once the machine is known")
        assert launched[0].hidden_dim == 128 and launched[0].batch_size == 4


async def test_p_and_f_reach_the_profilers_and_fusions(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        assert pilot.app.focused.id == "profiler-pytorch"  # the fake doctor's only available profiler
        await pilot.press("space")
        assert pilot.app.focused.value and "prof=pytorch" in text_of(pilot, "#check")
        await pilot.press("escape", "f")
        assert pilot.app.focused.id == "versions"
        assert "v1 has no fusion toggles" in text_of(pilot, "#hint")
        pilot.app.screen.query_one("#versions").highlighted = 1
        await pilot.pause()
        await pilot.press("f")
        assert pilot.app.focused.id == "toggle-qkv_fusion"

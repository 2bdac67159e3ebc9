"""The Lab's first seconds and its focus (issue 38, items 1 and 4): enter pressed before the doctor
and the history have answered is taken and launches what the form shows; the newest run fills the
form only while the learner has not touched it; back from another screen, focus is on the versions
list, where letters are keys, not in a form field."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tinylab.tui.backend import Backend

from ..conftest import SIZE, make_app, screen_name, text_of, wait_for
from ..fakes import fake_doctor, make_run

pytestmark = pytest.mark.asyncio


@pytest.fixture
def gates(monkeypatch: pytest.MonkeyPatch):
    """The doctor and the run store answer only when the test opens their gate (a busy machine:
    the doctor took 4-18 s, a big store seconds); both open when the test ends."""
    doctor, history = threading.Event(), threading.Event()
    read = Backend.records

    def slow_doctor(self, stop=lambda: False):
        while not doctor.wait(0.05):
            if stop():
                raise RuntimeError("stopped")
        self.doctor_result = fake_doctor()
        return self.doctor_result

    def slow_records(self, *args, **kwargs):
        assert history.wait(20), "the test never opened the history gate"
        return read(self, *args, **kwargs)

    monkeypatch.setattr(Backend, "doctor", slow_doctor)
    monkeypatch.setattr(Backend, "records", slow_records)
    monkeypatch.setenv("TINYLAB_GPU_VENDORS", "")  # no GPU device node: the cpu preset from the first frame
    yield doctor, history
    doctor.set()
    history.set()


def newest_plain_v2(runs: Path) -> None:
    make_run(runs, "20261126-010000-a1a1", version="v2", gpu=False, profile=False, batch_size=8, steps=50)


async def test_enter_at_once_launches_the_form_on_screen(tmp_path: Path, gates):
    """Enter as the Lab appears: the check line says the run waits for the machine check (it said
    "enter launches" and nothing happened for seconds); the newest run (v2) arriving meanwhile does
    not switch the form, and the run launched is the v1 that was on screen."""
    doctor, history = gates
    runs = tmp_path / "runs"
    newest_plain_v2(runs)
    async with make_app(runs, doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        launched = []
        screen.launch = launched.append
        await pilot.pause()
        assert "(profilers not checked yet) · enter launches" in text_of(pilot, "#check")
        await pilot.press("enter")
        await pilot.pause()
        assert not launched and text_of(pilot, "#check").startswith("… launching v1 ")
        assert "when the machine check ends · esc cancels" in text_of(pilot, "#check")
        history.set()
        await wait_for(pilot, lambda: screen.prefilled, what="the history")
        assert screen.version == "v1" and screen.query_one("#num-batch_size").value == "4"  # the cpu preset
        doctor.set()
        await wait_for(pilot, lambda: launched, what="the launch once the machine is checked")
        assert launched[0].version == "v1" and launched[0].batch_size == 4 and len(launched) == 1


async def test_esc_cancels_a_waiting_launch(tmp_path: Path, gates):
    doctor, history = gates
    history.set()
    async with make_app(tmp_path / "runs", doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        launched = []
        screen.launch = launched.append
        await pilot.press("enter")
        await pilot.pause()
        assert text_of(pilot, "#check").startswith("… launching")
        await pilot.press("escape")
        await pilot.pause()
        assert text_of(pilot, "#check").startswith("✓ ready")
        doctor.set()
        await wait_for(pilot, lambda: pilot.app.doctor_report is not None, what="the doctor")
        await pilot.pause()
        assert not launched and screen_name(pilot) == "LabScreen"


async def test_the_newest_run_does_not_replace_what_the_learner_typed(tmp_path: Path, gates):
    _, history = gates
    runs = tmp_path / "runs"
    newest_plain_v2(runs)
    async with make_app(runs, doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        field = screen.query_one("#num-num_steps")
        field.focus()
        await pilot.press("backspace", "backspace", "7")
        await pilot.pause()
        typed = field.value
        history.set()
        await wait_for(pilot, lambda: screen.prefilled, what="the history")
        await pilot.pause()
        assert field.value == typed and screen.version == "v1"
        assert screen.query_one("#num-batch_size").value == "4"  # not the newest run's 8


async def test_an_untouched_form_still_starts_from_the_newest_run(tmp_path: Path, gates):
    _, history = gates
    runs = tmp_path / "runs"
    newest_plain_v2(runs)
    async with make_app(runs, doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await pilot.pause()
        history.set()
        await wait_for(pilot, lambda: screen.prefilled, what="the history")
        assert screen.version == "v2" and screen.query_one("#num-batch_size").value == "8"


async def test_back_from_another_screen_focus_is_on_the_versions(tmp_path: Path):
    """After p (a profiler box), x then l came back with focus in the form: down moved inside it
    instead of to v2. Back from another section, focus is on the versions; a modal (help) over
    the Lab leaves it where it was."""
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        assert pilot.app.focused.id == "profiler-pytorch"
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: screen_name(pilot) == "HelpScreen", what="help")
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_name(pilot) == "LabScreen", what="the Lab")
        assert pilot.app.focused.id == "profiler-pytorch"
        await pilot.press("x")
        await wait_for(pilot, lambda: screen_name(pilot) == "ExercisesScreen", what="the Exercises")
        await pilot.press("l")
        await wait_for(pilot, lambda: screen_name(pilot) == "LabScreen", what="the Lab")
        await pilot.pause()
        assert pilot.app.focused.id == "versions"
        await pilot.press("down")
        await pilot.pause()
        assert pilot.app.screen.version == "v2"
        assert "picks a version" in text_of(pilot, "#hint")
        shown = {key for key, active in pilot.app.screen.active_bindings.items() if active.binding.show}
        assert {"enter", "r", "x", "K", "d"} <= shown  # the footer's key hints

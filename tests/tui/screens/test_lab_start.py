"""The Lab's first seconds and its focus (issue 38, items 1 and 4): enter pressed before the doctor
and the history have answered launches what the form shows, at once when the run needs nothing of
the doctor's report, else when it comes; the newest run fills the form only while the learner has
not touched it (a key, a field); back from another screen, focus is on the versions
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


def run_screen_up(pilot) -> bool:
    """The Run screen is shown and has read its run (a test that ends while the screen still
    mounts makes Textual's header raise on the way out)."""
    screen = pilot.app.screen
    return screen_name(pilot) == "RunScreen" and getattr(screen, "record", None) is not None


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list:
    """The engine's launcher, answered with a finished fake run of the config it was given (no
    trainer starts); the list holds the configs launched."""
    from tinylab.runs import launcher

    configs = []

    def launch(store, cfg):
        configs.append(cfg)
        run_id = f"20261126-0300{len(configs):02d}-f7f7"
        make_run(store.root, run_id, version=cfg.version, gpu=False, profile=False, batch_size=cfg.batch_size)
        return store.resolve(run_id)

    monkeypatch.setattr(launcher, "launch", launch)
    return configs


async def test_enter_at_once_launches_a_plain_run_without_the_doctor(tmp_path: Path, gates, launches):
    """Enter as the Lab appears, on a CPU-only host: the run starts at once, the doctor child still
    probing (it did nothing for 4-18 s, the check line saying "enter launches", while Backend.launch
    waited for a report a run without a profiler needs nothing of). The newest run (v2) arriving
    afterwards does not switch the form: the run launched is the v1 that was on screen."""
    doctor, history = gates
    runs = tmp_path / "runs"
    newest_plain_v2(runs)
    async with make_app(runs, doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await pilot.pause()
        check = text_of(pilot, "#check")
        assert check.endswith("· enter launches") and "not checked" not in check
        await pilot.press("enter")
        await wait_for(pilot, lambda: run_screen_up(pilot), what="the Run screen, the doctor unanswered")
        assert not doctor.is_set() and pilot.app.doctor_report is None
        assert [(c.version, c.batch_size, c.profilers) for c in launches] == [("v1", 4, [])]  # the cpu preset
        history.set()
        await wait_for(pilot, lambda: screen.prefilled, what="the history")
        assert screen.version == "v1" and screen.query_one("#num-batch_size").value == "4"


async def test_a_profiled_run_waits_for_the_profiler_check_and_says_so(tmp_path: Path, gates, launches):
    """A ticked profiler needs the doctor's report (is the tool here?): enter is taken, the check
    line says "checking profilers…", and the run launches, profiled, when the report comes."""
    doctor, history = gates
    history.set()
    async with make_app(tmp_path / "runs", doctor=None).run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p", "space")
        await pilot.pause()
        assert "enter checks profilers, then launches" in text_of(pilot, "#check")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert not launches and screen_name(pilot) == "LabScreen"
        assert text_of(pilot, "#check").startswith("… checking profilers… then launching v1 ")
        doctor.set()
        await wait_for(pilot, lambda: run_screen_up(pilot), what="the launch once profilers are checked")
        assert [c.profilers for c in launches] == [["pytorch"]]


async def test_esc_cancels_a_waiting_launch(tmp_path: Path, gates):
    doctor, history = gates
    history.set()
    async with make_app(tmp_path / "runs", doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        launched = []
        screen.launch = launched.append
        await pilot.pause()
        await pilot.press("p", "space", "enter")
        await pilot.pause()
        assert text_of(pilot, "#check").startswith("… checking profilers…")
        await pilot.press("escape")
        await pilot.pause()
        assert text_of(pilot, "#check").startswith("✓ ready")
        doctor.set()
        await wait_for(pilot, lambda: pilot.app.doctor_report is not None, what="the doctor")
        await pilot.pause()
        assert not launched and screen_name(pilot) == "LabScreen"


async def test_a_key_pressed_before_the_history_keeps_the_form(tmp_path: Path, gates):
    """Any key is the learner's hands on the Lab: home on v1 (which moves nothing) and the newest run
    arriving after it left the form as it was, not switched to v2 under them."""
    _, history = gates
    runs = tmp_path / "runs"
    newest_plain_v2(runs)
    async with make_app(runs, doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await pilot.pause()
        await pilot.press("home")
        history.set()
        await wait_for(pilot, lambda: screen.prefilled, what="the history")
        await pilot.pause()
        assert screen.version == "v1" and screen.query_one("#num-batch_size").value == "4"


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

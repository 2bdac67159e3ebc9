"""The Exercises screens (tinylab/tui/screens/exercises.py): the list's preview of every step at
80x24, and a step stepped through with its live checks, or over its recorded output when its tool
is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import SIZE, V1, V2, make_app, screen_name, text_of, wait_for

pytestmark = pytest.mark.asyncio


async def test_step_through_an_exercise_with_live_checks(store: Path, progress_file: Path):
    """The step's run is launched through the backend; here it "launches" a finished run (the Lab
    test covers a real launch), so the live checks can be seen to pass."""
    app = make_app(store)
    launched = []

    def attempt(number: int) -> dict:
        return json.loads(progress_file.read_text())["scenarios"]["fusion-basics"]["steps"].get(str(number), {})

    def recorded(number: int) -> tuple:
        got = attempt(number)
        return [c["status"] for c in got["checks"].values()], got["run_ids"]

    def launch(cfg):
        launched.append(cfg)
        return app.backend.run({"v1": V1, "v2": V2}[cfg.version])

    app.backend.launch = launch
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await wait_for(pilot, lambda: pilot.app.screen.query("#scenarios") and
                       pilot.app.screen.query_one("#scenarios").option_count == 2, what="scenarios")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(pilot) == "StepScreen" and pilot.app.screen.scenario,
                       what="the step view")
        screen = pilot.app.screen
        assert "step 2/2: Fused" in text_of(pilot, "#step-head")  # step 1 is done: it opens at step 2
        assert "GPU only: tiny CPU shapes" in text_of(pilot, "#checks")
        await pilot.press("p")
        assert "step 1/2: Baseline" in text_of(pilot, "#step-head")
        await pilot.press("i")
        assert "Press enter to launch." in text_of(pilot, "#hint-new")
        await pilot.press("a")
        assert "The backward pass" in text_of(pilot, "#questions")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "run" in screen.step_runs.get(1, {}), what="the step's run")
        assert launched[0].version == "v1" and launched[0].device == "cpu" and launched[0].hidden_dim == 64
        await wait_for(pilot, lambda: "all checks passed" in text_of(pilot, "#checks"), what="the checks to pass")
        assert "✓ every parameter tensor trains  = 20" in text_of(pilot, "#checks")
        await wait_for(pilot, lambda: "run_ids" in attempt(1), what="recorded progress")
        assert recorded(1) == (["pass", "pass"], [V1])
        await pilot.press("n", "enter")  # step 2 compares: its baseline runs first, then the step's run
        await wait_for(pilot, lambda: "run" in screen.step_runs.get(2, {}), what="step 2's runs")
        assert [c.version for c in launched[1:]] == ["v1", "v2"]
        assert screen.step_runs[2] == {"baseline": V1, "run": V2}
        await wait_for(pilot, lambda: "run_ids" in attempt(2), what="step 2's progress")
        assert recorded(2) == (["pass", "skip"], [V1, V2])


async def test_a_step_whose_tool_is_missing_reads_its_recorded_output(store: Path, monkeypatch):
    """rocm-tools on a machine without the AMD tools: the step view says what to do without them,
    running the step starts no run and its recorded checks pass over the shipped output."""
    from tinylab.exercises import default_root
    from tinylab.profilers import base

    monkeypatch.setattr(base, "gpu_vendors", lambda: set())
    app = make_app(store, exercises_root=default_root())
    app.backend.launch = lambda cfg: pytest.fail("no run may start without the step's tool")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_step(pilot, app, "rocm-tools")
        assert "recorded output:" in text_of(pilot, "#hints") and "on an NVIDIA GPU:" in text_of(pilot, "#hints")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "checks ran and passed (over the recorded output)" in text_of(pilot, "#checks"),
                       what="the recorded checks")
        assert "all checks passed" not in text_of(pilot, "#checks")  # the run checks were skipped: it says so
        assert "no run: its tool is not here" in text_of(pilot, "#step-run") and screen.step_runs[1] == {}


async def open_step(pilot, app, scenario_id: str):
    from tinylab.tui.screens.exercises import StepScreen

    app.push_screen(StepScreen(scenario_id))
    await wait_for(pilot, lambda: screen_name(pilot) == "StepScreen" and pilot.app.screen.scenario, what="the step view")
    return pilot.app.screen


async def test_the_exercise_preview_lists_every_step_at_80x24(store: Path):
    """The shipped scenarios at 80x24: the preview under the list shows the summary and every step
    (Performance debugging's 6th step was cut off), and the list keeps the selection in view."""
    async with make_app(store, exercises_root=None).run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await wait_for(pilot, lambda: screen_name(pilot) == "ExercisesScreen" and pilot.app.screen.scenarios,
                       what="the scenarios")
        screen = pilot.app.screen
        options, about = screen.query_one("#scenarios"), screen.query_one("#scenario-about")
        assert len(screen.scenarios) >= 12 and max(len(s.steps) for s in screen.scenarios) == 6
        for index, scenario in enumerate(screen.scenarios):
            options.highlighted = index
            await pilot.pause(0.2)
            shown = about.render().wrap(about.content_region.width)
            assert len(shown) <= about.content_region.height, scenario.id
            assert str(shown[-1]).strip().endswith(scenario.steps[-1].title), scenario.id
            top = options.scroll_offset.y
            assert top <= index < top + options.content_region.height, scenario.id


async def test_a_step_that_only_compiles_says_so_and_starts_no_run(store: Path, monkeypatch):
    """v4-fusion's last step reads kernels compiled on this machine: enter compiles them (faked
    here), no run starts, and the step says it was compiled rather than warning about a note."""
    from support.anatomy import fake_compiles

    from tinylab.exercises import default_root
    from tinylab.tui.screens.exercises import COMPILED

    compiles = fake_compiles(monkeypatch)
    app = make_app(store, exercises_root=default_root())
    app.backend.launch = lambda cfg: pytest.fail("a step that only compiles may start no run")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_step(pilot, app, "v4-fusion")
        notes = []
        monkeypatch.setattr(screen, "notify", lambda message, **kw: notes.append(message))
        screen.action_step(len(screen.scenario.steps) - 1 - screen.index)
        assert screen.step.compile_only
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.step_results.get(screen.step.number, ([], ""))[1] == COMPILED,
                       what="the compiled checks")
        await pilot.pause(0.1)
        assert f"no run: {COMPILED}" in text_of(pilot, "#step-run") and screen.step_runs[screen.step.number] == {}
        assert compiles and notes == []


async def test_hints_and_answers_come_into_view_at_80x24(store: Path, progress_file: Path):
    """In a step at 80x24, `i` and `a` changed nothing visible (only the scrollbar moved) and
    End/PageDown did nothing until tab; the answers also unmask what the step hides."""
    from tinylab.exercises import default_root

    app = make_app(store, exercises_root=default_root())
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_step(pilot, app, "performance-debugging")
        box = screen.query_one("#checks-box")
        # the header cut the title at 80 columns ("five injected faults in the …"): the step's head has it
        assert screen.sub_title == "Exercise performance-debugging" and screen.scenario.title in text_of(pilot, "#step-head")

        def in_view(selector: str) -> bool:
            top = screen.query_one(selector).virtual_region.y
            return box.scroll_offset.y <= top < box.scroll_offset.y + box.scrollable_content_region.height

        for shown in range(1, 5):
            await pilot.press("i")
            await wait_for(pilot, lambda: in_view("#hint-new"), what=f"hint {shown} in view")
            assert screen.step.hints[shown - 1][:30] in text_of(pilot, "#hint-new")
        assert "missing-init" in text_of(pilot, "#hint-new")  # the last hint names the fault
        await pilot.press("a")
        await wait_for(pilot, lambda: in_view("#questions") and "→ " in text_of(pilot, "#questions"),
                       what="the answers in view")
        before = box.scroll_offset.y
        await pilot.press("end")
        await wait_for(pilot, lambda: box.scroll_offset.y > before, what="End to scroll the panel")
        await wait_for(pilot, lambda: (json.loads(progress_file.read_text())["scenarios"]["performance-debugging"]
                                       ["steps"]["1"].get("answers_at")), what="the reveal recorded")

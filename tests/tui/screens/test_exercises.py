"""The Exercises screens (tinylab/tui/screens/exercises.py): the list's preview of every step at
80x24, and a step stepped through with its live checks, or over its recorded output when its tool
is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import SIZE, V1, V2, V3, make_app, screen_name, screen_text, text_of, wait_for

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
        # at 80 columns the Checks are a panel away: the status line says it passed, in a mark too
        assert text_of(pilot, "#step-run").startswith("finished · ✓ passed · run ")
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


# ------------------------------------------------------------------------- a fault stays hidden
STEP_RUN = "20261126-023000-d4d4"


def passed_step_one(store: Path) -> None:
    """performance-debugging step 1 run and passed (its checks confirm the symptom), its fault not
    yet named: a fake v3 run with the fault, recorded as the attempt that passed the step."""
    from tinylab import exercises as ex

    from ..fakes import make_run

    make_run(store, STEP_RUN, version="v3", profile=False, fault="missing-init",
             label="exercise performance-debugging step 1")
    ex.record_progress("performance-debugging", 1, [ex.CheckResult(
        "loss-starts-too-high", "initial_loss > 3 * ln(vocab_size)", "the first loss is more than 3x ln(vocab)",
        "pass", 62.5, "initial_loss=62.5, vocab_size=1000")], [STEP_RUN])


def table_text(pilot, selector: str) -> str:
    table = pilot.app.screen.query_one(selector)
    return " ".join(str(cell) for row in range(table.row_count) for cell in table.get_row_at(row))


async def test_a_passed_step_hides_its_fault_on_every_screen_until_it_is_named(store: Path):
    """The step passed the moment its run ended, and passing unmasked the fault: the Lab's Recent
    runs at 120 columns, the Runs screen, the Run header and Compare's `differs:` line showed
    fault=missing-init. Each masks it until the learner names it."""
    from tinylab.exercises import default_root

    passed_step_one(store)
    app = make_app(store, exercises_root=default_root())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: STEP_RUN[-4:] in table_text(pilot, "#recent"), what="the Lab's recent runs")

        seen = {"recent runs": table_text(pilot, "#recent")}
        await pilot.press("r")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunsScreen" and pilot.app.screen.current, what="runs")
        seen["runs"] = table_text(pilot, "#runs")
        pilot.app.screen.query_one("#runs").move_cursor(row=0)  # the newest: the step's run
        await pilot.pause(0.1)
        seen["run detail"] = text_of(pilot, "#run-detail")
        pilot.app.open_run(STEP_RUN)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="the run")
        seen["run header"] = text_of(pilot, "#run-head")
        pilot.app.open_compare(V1, STEP_RUN)
        await wait_for(pilot, lambda: pilot.app.screen.query("#cmp-head") and "differs:" in text_of(pilot, "#cmp-head"),
                       what="the comparison")
        seen["compare"] = text_of(pilot, "#cmp-head")
        differs = next(line for line in seen["compare"].splitlines() if line.startswith("differs:"))
        assert "fault" in differs, differs
        for view, text in seen.items():
            assert "missing-init" not in text and "(hidden)" in text, (view, text)
        # named in the step view: every screen shows it from then on
        app.backend.diagnose("performance-debugging", 1, "missing-init")
        await app.action_section("runs")  # `r` on Compare repeats the pair
        await wait_for(pilot, lambda: screen_name(pilot) == "RunsScreen" and "missing-init" in table_text(pilot, "#runs"),
                       what="the fault in the Runs screen")
        pilot.app.open_run(STEP_RUN)
        await wait_for(pilot, lambda: pilot.app.screen.query("#run-head") and getattr(pilot.app.screen, "status", "")
                       == "finished", what="the run")
        assert "fault=missing-init" in text_of(pilot, "#run-head")


async def test_d_names_the_fault_a_wrong_pick_is_answered_by_the_evidence(store: Path, progress_file: Path):
    """`d` in a step that hides a fault picks one of its suspects (a key and a palette entry); a
    wrong pick says what the step's run contradicts, the right one unmasks the fault and records it."""
    from tinylab.exercises import default_root

    passed_step_one(store)
    app = make_app(store, exercises_root=default_root())
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_step(pilot, app, "performance-debugging")
        await pilot.press("p")  # step 1 passed: the screen opened at step 2
        assert screen.step.number == 1 and "passed before · run" in text_of(pilot, "#step-run")
        assert "Diagnosis (d names the fault)" in text_of(pilot, "#diagnosis")
        binding = next(b for b in type(screen).BINDINGS if b.action == "diagnose")
        assert binding.key == "d" and binding.description == "Diagnose" and binding.tooltip
        palette = {c.title: c for c in app.get_system_commands(screen)}
        assert "Diagnose" in palette and "key: d." in palette["Diagnose"].help
        await pilot.press("d")
        await wait_for(pilot, lambda: screen_name(pilot) == "DiagnoseScreen", what="the faults to pick from")
        faults = pilot.app.screen.query_one("#faults")
        assert [faults.get_option_at_index(i).id for i in range(faults.option_count)] == [
            "detached-backward", "missing-init", "naive-triton-swiglu", "non-contiguous", "unsynced-timing"]
        await pilot.press("enter")  # the first: detached-backward
        await wait_for(pilot, lambda: "✗ not detached-backward" in text_of(pilot, "#diagnosis"), what="the verdict")
        diagnosis = " ".join(text_of(pilot, "#diagnosis").split())
        assert "the evidence contradicts it" in diagnosis
        assert ("detached-backward would show: some parameter tensors never changed during training; this run has "
                "params_trained=20, params_total=20") in diagnosis
        steps = lambda: json.loads(progress_file.read_text())["scenarios"]["performance-debugging"]["steps"]  # noqa: E731
        assert "found_at" not in steps()["1"]
        await pilot.press("escape")  # the panel has focus after the verdict; escape leaves the step view
        await open_step(pilot, app, "performance-debugging")
        screen = pilot.app.screen
        await pilot.press("p", "d")
        await wait_for(pilot, lambda: screen_name(pilot) == "DiagnoseScreen", what="the faults again")
        await pilot.press("down", "enter")  # missing-init
        await wait_for(pilot, lambda: "✓ missing-init" in text_of(pilot, "#diagnosis"), what="the right verdict")
        assert steps()["1"]["found_at"] and app.backend.record(STEP_RUN).settings.fault == "missing-init"
        await pilot.press("d")  # found: `d` says so (a disabled key would fall through to the Doctor)
        await pilot.pause(0.2)
        assert screen_name(pilot) == "StepScreen"
        await pilot.press("n", "n", "n", "n", "n")  # the fixed model hides nothing: `d` is the Doctor again
        assert screen.step.number == 6 and "Diagnose" not in {c.title for c in app.get_system_commands(screen)}
        assert str(screen.query_one("#diagnosis").render()) == ""


async def test_a_passed_step_keeps_its_runs_and_their_checks(store: Path, progress_file: Path):
    """Reopening a passed step showed `no run for this step yet`, its checks unevaluated (`·`) and
    `o` did nothing: it keeps the runs that passed it (through a failed retry too), its checks as
    evaluated on them, and `o` opens its run."""
    from tinylab import exercises as ex

    from tinylab.tui.screens.exercises import GONE

    passed = [ex.CheckResult("finished", "steps == num_steps", "the run finishes", "pass", 20, "steps=20, num_steps=20"),
              ex.CheckResult("faster", "x", "v2 is faster than v1", "skip", None, "GPU only: tiny CPU shapes")]
    ex.record_progress("fusion-basics", 2, passed, [V1, V2])
    ex.record_progress("fusion-basics", 2, [ex.CheckResult("finished", "e", "d", "fail", 3, "")], [V1, V3])
    ex.record_progress("fusion-basics", 1, passed[:1], ["20261126-000000-dead"])  # deleted since
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_step(pilot, app, "fusion-basics")
        assert screen.step.number == 1  # every step passed: the first
        # its run deleted: the checks as they were, and the line says why there is no run
        assert text_of(pilot, "#step-run") == f"no run: {GONE}" and "✓ the run finishes" in text_of(pilot, "#checks")
        await pilot.press("n")
        assert text_of(pilot, "#step-run") == "passed before · run 1126-0210-b2b2 · baseline 1126-0200-a1a1"
        # at 80 columns the status first, and the run ids that fit whole (the baseline's does not)
        shown = next(line for line in screen_text(app.export_screenshot()) if "▶ Run this step" in line)
        assert shown.endswith("(enter)   passed before · run 1126-0210-b2b2"), shown
        checks = text_of(pilot, "#checks")
        assert "✓ the run finishes  = 20" in checks and "– v2 is faster than v1" in checks and "·" not in checks
        assert "checks ran and passed" in checks
        await pilot.press("o")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen", what="the kept run")
        assert pilot.app.screen.run_id == V2
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_name(pilot) == "StepScreen", what="back in the step")

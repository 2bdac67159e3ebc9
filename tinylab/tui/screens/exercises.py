"""Exercises: the guided scenarios, then one step at a time with its run, live checks, hints and questions.

Scenarios, step configs and checks come from tinylab.exercises (shared with `tinylab exercises`);
this screen launches the step's preset run through the same launcher as the Lab and re-evaluates
the step's checks while that run goes.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Footer, Header, Markdown, OptionList, Static
from textual.widgets.option_list import Option

from tinylab.runs.store import TERMINAL
from tinylab.tui.screens.base import BaseScreen, background
from tinylab.tui.widgets.panes import Pane, Panes

CHECK_MARK = {"pass": "✓", "fail": "✗", "skip": "–"}
RECHECK_S = 1.5


class ExercisesScreen(BaseScreen):
    TITLE = "Exercises"
    BINDINGS = [Binding("enter", "start", "Start", priority=True,
                        tooltip="open the selected scenario at its first step")]

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield OptionList(id="scenarios")
        yield Static(id="scenario-about")
        yield Footer()

    def on_mount(self) -> None:
        self.scenarios: list[Any] = []
        self.load()

    @background("scenarios")
    def load(self) -> None:
        scenarios = self.backend.scenarios()
        self.app.call_from_thread(self._show, scenarios)

    def on_worker_state_changed(self, event) -> None:
        error = getattr(event.worker, "error", None)
        if error is not None and event.worker.group == "scenarios":
            self.query_one("#scenario-about", Static).update(Text(str(error), style="bold"))

    def _show(self, scenarios: list[Any]) -> None:
        self.scenarios = scenarios
        options = self.query_one("#scenarios", OptionList)
        options.clear_options()
        for s in scenarios:
            row = Text()
            row.append(s.title, style="bold")
            row.append(f"  {s.level} · {s.minutes} min · {len(s.steps)} steps", style="dim")
            options.add_option(Option(row, id=s.id))
        if scenarios:
            options.highlighted = 0
        else:
            self.query_one("#scenario-about", Static).update("No scenarios found.")

    @on(OptionList.OptionHighlighted, "#scenarios")
    def _about(self, event: OptionList.OptionHighlighted) -> None:
        scenario = next((s for s in self.scenarios if s.id == event.option.id), None)
        if scenario is not None:
            text = Text(scenario.summary)
            text.append("\n" + "  ".join(f"{st.number}. {st.title}" for st in scenario.steps), style="dim")
            self.query_one("#scenario-about", Static).update(text)

    def action_start(self) -> None:
        options = self.query_one("#scenarios", OptionList)
        if options.highlighted is not None and self.scenarios:
            self.app.open_exercise(self.scenarios[options.highlighted].id)  # type: ignore[attr-defined]


class StepScreen(BaseScreen):
    TITLE = "Exercise"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("enter", "launch", "Launch step", tooltip="launch this step's preset run"),
        Binding("o", "open_run", "Open run", tooltip="the live view of this step's run"),
        Binding("n", "step(1)", "Next step"),
        Binding("p", "step(-1)", "Prev step"),
        Binding("i", "hint", "Hint", tooltip="reveal the next hint"),
        Binding("a", "answers", "Answers", tooltip="reveal the answers to the step's questions"),
        Binding("t", "next_pane", "Next panel"),
    ]

    def __init__(self, scenario_id: str) -> None:
        super().__init__()
        self.scenario_id = scenario_id
        self.scenario: Any = None
        self.index = 0
        self.hints_shown = 0
        self.answers_shown = False
        self.step_runs: dict[int, str] = {}
        self.results: list[Any] = []
        self.run_status = ""

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield Static(id="step-head")
        with Horizontal(id="step-actions"):
            yield Button("▶ Launch step run (enter)", id="launch-step", compact=True, variant="primary")
            yield Static(id="step-run")
        with Panes(id="step-panes"):
            yield Pane(VerticalScroll(Markdown(id="step-text")), title="Step", id="text-pane")
            yield Pane(VerticalScroll(Static(id="checks"), Static(id="hints"), Static(id="questions")),
                       title="Checks", id="checks-pane")
        yield Footer()

    def on_mount(self) -> None:
        self.load()
        self.set_interval(RECHECK_S, self.recheck)

    @background("scenario")
    def load(self) -> None:
        scenario = self.backend.scenario(self.scenario_id)
        self.app.call_from_thread(self._loaded, scenario)

    def _loaded(self, scenario: Any) -> None:
        self.scenario = scenario
        self.sub_title = scenario.title
        self._show_step()

    @property
    def step(self) -> Any:
        return self.scenario.steps[self.index] if self.scenario and self.scenario.steps else None

    def _show_step(self) -> None:
        step = self.step
        if step is None:
            return
        head = Text()
        head.append(f"{self.scenario.title}", style="bold")
        head.append(f"  step {self.index + 1}/{len(self.scenario.steps)}: ")
        head.append(step.title, style="bold")
        self.query_one("#step-head", Static).update(head)
        self.query_one("#step-text", Markdown).update(step.text)
        self.hints_shown, self.answers_shown, self.results = 0, False, []
        self.run_status = ""
        self.query_one("#launch-step", Button).display = bool(step.preset or step.cpu_preset)
        self._show_checks()
        self._show_extras()
        self._show_run()
        self.recheck()

    def _show_run(self) -> None:
        run_id = self.step_runs.get(self.step.number) if self.step else None
        text = Text(f"run {run_id} {self.run_status}" if run_id else "no run for this step yet",
                    style="" if run_id else "dim")
        self.query_one("#step-run", Static).update(text)

    def _show_checks(self) -> None:
        step = self.step
        text = Text()
        text.append("Checks\n", style="bold")
        results = {r.name: r for r in self.results}
        for check in step.checks:
            name = getattr(check, "name", str(check))
            result = results.get(name)
            mark = CHECK_MARK.get(result.status, "?") if result else "·"
            text.append(f" {mark} ", style="bold")
            text.append(f"{getattr(check, 'description', '') or name}")
            if result is not None and result.value is not None:
                text.append(f"  ({result.value})", style="dim")
            if result is not None and result.detail:
                text.append(f"  {result.detail}", style="dim")
            text.append("\n")
        if not step.checks:
            text.append(" (this step has no automatic checks)\n", style="dim")
        if self.passed:
            text.append(" all checks pass: n goes to the next step\n", style="bold")
        self.query_one("#checks", Static).update(text)

    def _show_extras(self) -> None:
        step = self.step
        hints = Text()
        if step.hints:
            hints.append(f"\nHints ({self.hints_shown}/{len(step.hints)}, i reveals one)\n", style="bold")
            for hint in step.hints[: self.hints_shown]:
                hints.append(f" • {hint}\n")
        self.query_one("#hints", Static).update(hints)
        questions = Text()
        if step.questions:
            questions.append("\nQuestions (a reveals the answers)\n", style="bold")
            for i, q in enumerate(step.questions, 1):
                questions.append(f" {i}. {q.prompt}\n")
                if self.answers_shown:
                    questions.append(f"    → {q.answer}\n", style="bold")
                    if q.explanation:
                        questions.append(f"    {q.explanation}\n", style="dim")
        self.query_one("#questions", Static).update(questions)

    # ------------------------------------------------------------ live checks
    @background("checks")
    def recheck(self) -> None:
        step = self.step
        run_id = self.step_runs.get(step.number) if step else None
        if run_id is None:
            return
        exercises = self.backend.exercises()
        run = self.backend.run(run_id)
        baseline_id = self.step_runs.get(step.baseline) if isinstance(step.baseline, int) else None
        baseline = self.backend.run(baseline_id) if baseline_id else None
        report = self.app.doctor_report or {}  # type: ignore[attr-defined]
        results = exercises.evaluate_checks(step, run, baseline, bool(report.get("gpu")))
        status = run.status()
        self.app.call_from_thread(self._checked, step.number, results, status)

    def _checked(self, number: int, results: list[Any], status: str) -> None:
        if self.step is None or self.step.number != number:
            return
        self.results, self.run_status = results, status
        self._show_checks()
        self._show_run()
        if self.passed:
            self.record(number)

    @property
    def passed(self) -> bool:
        """The step's run has ended, no check failed and at least one passed (others may not apply here)."""
        return (self.run_status in TERMINAL and any(r.status == "pass" for r in self.results)
                and all(r.status != "fail" for r in self.results))

    @background("progress")
    def record(self, number: int) -> None:
        self.backend.exercises().record_progress(self.scenario_id, number, self.step_runs.get(number))

    # ---------------------------------------------------------------- actions
    @on(Button.Pressed, "#launch-step")
    def action_launch(self) -> None:
        if self.step is not None:
            self.launch(self.step)

    @background("launch")
    def launch(self, step: Any) -> None:
        from tinylab.commands._common import require_device

        report = self.app.doctor_report or {}  # type: ignore[attr-defined]
        device = "cuda" if report.get("gpu") else "cpu"
        cfg = self.backend.exercises().step_config(step, device, {})
        require_device(cfg)
        run = self.backend.launch(cfg)
        self.app.call_from_thread(self._launched, step.number, run.id)

    def _launched(self, number: int, run_id: str) -> None:
        self.step_runs[number] = run_id
        self.run_status = "running"
        self._show_run()
        self.notify(f"Step {number}: launched {run_id}; o opens its live view")

    def action_open_run(self) -> None:
        run_id = self.step_runs.get(self.step.number) if self.step else None
        if run_id:
            self.app.open_run(run_id)  # type: ignore[attr-defined]

    def action_step(self, delta: int) -> None:
        if self.scenario is None:
            return
        self.index = max(0, min(len(self.scenario.steps) - 1, self.index + delta))
        self._show_step()

    def action_hint(self) -> None:
        if self.step and self.hints_shown < len(self.step.hints):
            self.hints_shown += 1
            self._show_extras()
            self.query_one("#step-panes", Panes).show("checks-pane")

    def action_answers(self) -> None:
        if self.step and self.step.questions:
            self.answers_shown = True
            self._show_extras()
            self.query_one("#step-panes", Panes).show("checks-pane")

    def action_next_pane(self) -> None:
        self.query_one("#step-panes", Panes).show_next()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        step = self.step
        if action == "launch":
            return bool(step and (step.preset or step.cpu_preset))
        if action == "open_run":
            return bool(step and step.number in self.step_runs) or None
        if action == "step":
            if self.scenario is None:
                return None
            target = self.index + int(parameters[0])  # type: ignore[call-overload]
            return 0 <= target < len(self.scenario.steps) or None
        if action == "hint":
            return bool(step and self.hints_shown < len(step.hints)) or None
        if action == "answers":
            return bool(step and step.questions and not self.answers_shown) or None
        if action == "next_pane":
            return self.screen.has_class("-narrow")
        return True

"""Exercises: the guided scenarios, then one step at a time with its run, live checks, hints and questions.

Scenarios, step configs, checks and progress come from tinylab.exercises, and a step's runs go
the way `tinylab exercises check` sends them: its baseline run first (when the step compares
two), then its own run, both through the launcher into the run store. The checks are evaluated
again while the step's run goes, and the attempt is recorded in the progress file when it ends.
"""

from __future__ import annotations

import time
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Footer, Header, Markdown, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from tinylab.errors import UserError
from tinylab.runs.store import TERMINAL
from tinylab.tui.fmt import short_id
from tinylab.tui.screens.base import BaseScreen, background
from tinylab.tui.widgets.panes import Pane, Panes

CHECK_MARK = {"pass": "✓", "fail": "✗", "skip": "–"}
RECHECK_S = 1.5
POLL_S = 0.5


class ExercisesScreen(BaseScreen):
    TITLE = "Exercises"
    BINDINGS = [Binding("enter", "start", "Start", priority=True,
                        tooltip="open the selected scenario at its first step not yet done")]

    def __init__(self) -> None:
        super().__init__()
        self.scenarios: list[Any] = []
        self.progress: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield OptionList(id="scenarios")
        yield Static(id="scenario-about")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.load()

    def on_screen_resume(self) -> None:
        if self.is_mounted and self.scenarios:
            self.load()

    @background("scenarios")
    def load(self) -> None:
        try:
            api = self.backend.exercises()
            scenarios, progress = api.load_scenarios(), api.load_progress()
        except Exception as exc:  # a broken scenario file is shown here, where the learner looks
            self.app.call_from_thread(self.query_one("#scenario-about", Static).update,
                                      Text(f"Could not load the exercises: {exc}", style="bold"))
            return
        done = {s.id: api.steps_done(progress, s) for s in scenarios}
        self.app.call_from_thread(self._show, scenarios, progress, done)

    def _show(self, scenarios: list[Any], progress: dict[str, Any], done: dict[str, int]) -> None:
        self.scenarios, self.progress = scenarios, progress
        options = self.query_one("#scenarios", OptionList)
        highlighted = options.highlighted
        options.clear_options()
        for s in scenarios:
            row = Table.grid(expand=True, padding=(0, 1))
            row.add_column(width=3, style="bold" if done[s.id] == len(s.steps) else "dim")
            row.add_column(ratio=1, no_wrap=True, overflow="ellipsis", style="bold")
            row.add_column(justify="right", no_wrap=True, style="dim")
            row.add_row(f"{done[s.id]}/{len(s.steps)}", s.title, f"{s.level} · {s.minutes} min")
            options.add_option(Option(row, id=s.id))
        if scenarios:
            options.highlighted = highlighted if highlighted is not None and highlighted < len(scenarios) else 0
        else:
            self.query_one("#scenario-about", Static).update("No scenarios found.")

    @on(OptionList.OptionHighlighted, "#scenarios")
    def _about(self, event: OptionList.OptionHighlighted) -> None:
        scenario = next((s for s in self.scenarios if s.id == event.option.id), None)
        if scenario is not None:
            steps = self.progress.get("scenarios", {}).get(scenario.id, {}).get("steps", {})
            text = Text(" ".join(scenario.summary.split()))
            for st in scenario.steps:
                state = steps.get(str(st.number)) or {}
                mark = "✓" if state.get("passed_at") else ("·" if state else " ")
                text.append(f"\n {mark} {st.number}. {st.title}", style="" if state else "dim")
            self.query_one("#scenario-about", Static).update(text)

    def action_start(self) -> None:
        options = self.query_one("#scenarios", OptionList)
        if options.highlighted is not None and self.scenarios:
            self.app.open_exercise(self.scenarios[options.highlighted].id)  # type: ignore[attr-defined]


class StepScreen(BaseScreen):
    TITLE = "Exercise"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("enter", "launch", "Launch step", tooltip="run the step's preset (its baseline first, if any)"),
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
        #: step number -> {"baseline": run id, "run": run id}, as far as launched
        self.step_runs: dict[int, dict[str, str]] = {}
        self.results: list[Any] = []
        self.run_status = ""
        #: (step number, run id) -> (results, status) of a run that has ended: evaluated once, recorded once
        self.finals: dict[tuple[int, str], tuple[list[Any], str]] = {}

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield Static(id="step-head")
        with Horizontal(id="step-actions"):
            yield Button("▶ Run this step (enter)", id="launch-step", compact=True, variant="primary")
            yield Static(id="step-run")
        with Panes(id="step-panes"):
            yield Pane(VerticalScroll(Markdown(id="step-text")), title="Step", id="text-pane")
            yield Pane(VerticalScroll(Static(id="checks"), Static(id="hints"), Static(id="questions")),
                       title="Checks", id="checks-pane")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.load()
        self.set_interval(RECHECK_S, self.recheck)

    @background("scenario")
    def load(self) -> None:
        api = self.backend.exercises()
        scenario = self.backend.scenario(self.scenario_id)
        progress = api.load_progress().get("scenarios", {}).get(scenario.id, {}).get("steps", {})
        first_open = next((i for i, st in enumerate(scenario.steps)
                           if not (progress.get(str(st.number)) or {}).get("passed_at")), 0)
        self.app.call_from_thread(self._loaded, scenario, first_open)

    def _loaded(self, scenario: Any, index: int) -> None:
        self.scenario, self.index = scenario, index
        self.sub_title = scenario.title
        self._show_step()

    @property
    def step(self) -> Any:
        return self.scenario.steps[self.index] if self.scenario and self.scenario.steps else None

    @property
    def on_gpu(self) -> bool:
        return bool((self.app.doctor_report or {}).get("gpu"))  # type: ignore[attr-defined]

    def _show_step(self) -> None:
        step = self.step
        if step is None:
            return
        head = Text()
        head.append(f"{self.scenario.title}", style="bold")
        head.append(f"  step {self.index + 1}/{len(self.scenario.steps)}: ")
        head.append(step.title, style="bold")
        if step.baseline is not None:
            head.append("  (compares against a baseline run)", style="dim")
        self.query_one("#step-head", Static).update(head)
        self.query_one("#step-text", Markdown).update(step.text)
        self.hints_shown, self.answers_shown, self.results = 0, False, []
        self.run_status = ""
        self._show_checks()
        self._show_extras()
        self._show_run()
        self.refresh_bindings()
        self.recheck()

    def _show_run(self) -> None:
        runs = self.step_runs.get(self.step.number, {}) if self.step else {}
        if not runs:
            text = Text("no run for this step yet", style="dim")
        else:
            text = Text(" ".join(f"{role} {short_id(run_id)}" for role, run_id in runs.items()))
            text.append(f"  {self.run_status}", style="bold")
        self.query_one("#step-run", Static).update(text)

    def _show_checks(self) -> None:
        api_format = getattr(self.backend.exercises(), "format_value", str)
        step = self.step
        text = Text()
        text.append("Checks\n", style="bold")
        results = {r.name: r for r in self.results}
        for check in step.checks:
            result = results.get(check.name)
            gpu_only = check.needs_gpu and not self.on_gpu
            mark = CHECK_MARK.get(result.status, "?") if result else ("–" if gpu_only else "·")
            text.append(f" {mark} ", style="bold")
            text.append(check.description)
            if result is not None and result.value is not None:
                text.append(f"  = {api_format(result.value)}", style="bold")
            if result is not None and result.detail:
                text.append(f"\n     {result.detail}", style="dim")
            elif gpu_only:
                text.append(f"\n     GPU only: {check.gpu_reason or 'needs a GPU'}", style="dim")
            text.append("\n")
        if not step.checks:
            text.append(" (this step has no automatic checks)\n", style="dim")
        verdict = self._verdict()
        if verdict:
            text.append(f"\n {verdict}\n", style="bold")
        self.query_one("#checks", Static).update(text)

    def _verdict(self) -> str:
        if not self.results or self.run_status not in TERMINAL:
            return ""
        if self.backend.exercises().step_passed(self.results):
            return "all checks passed: n goes to the next step"
        ran = [r for r in self.results if r.status != "skip"]
        if not ran:
            return "no check could run here"
        failed = sum(r.status == "fail" for r in ran)
        return f"{failed} of {len(ran)} checks failed: read the hints (i)"

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
        runs = self.step_runs.get(step.number, {}) if step else {}
        if "run" not in runs:
            return
        key = (step.number, runs["run"])
        if key not in self.finals:
            api = self.backend.exercises()
            run = self.backend.run(runs["run"])
            baseline = self.backend.run(runs["baseline"]) if "baseline" in runs else None
            status = run.status()
            results = api.evaluate_checks(step, run, baseline, self.on_gpu)
            if status in TERMINAL:
                api.record_progress(self.scenario_id, step.number, results, list(runs.values()))
                self.finals[key] = (results, status)
        else:
            results, status = self.finals[key]
        self.app.call_from_thread(self._checked, step.number, results, status)

    def _checked(self, number: int, results: list[Any], status: str) -> None:
        if self.step is None or self.step.number != number:
            return
        self.results, self.run_status = results, status
        self._show_checks()
        self._show_run()

    # ---------------------------------------------------------------- actions
    @on(Button.Pressed, "#launch-step")
    def action_launch(self) -> None:
        step = self.step
        if step is None:
            return
        if not self.on_gpu and step.checks and all(c.needs_gpu for c in step.checks):
            self.notify("Every check of this step needs a GPU: nothing to run on this machine.", severity="warning")
            return
        self.launch(step)

    @background("launch")
    def launch(self, step: Any) -> None:
        """Baseline first and to its end (two runs at once would skew each other's timings), then the run."""
        from tinylab.commands._common import require_device

        api = self.backend.exercises()
        device = "cuda" if self.on_gpu else "cpu"
        cfg = api.step_config(step, device, {})
        base_cfg = api.baseline_config(step, device, {})
        require_device(cfg)
        worker = get_current_worker()
        self.step_runs[step.number] = {}
        if base_cfg is not None:
            baseline = self.backend.launch(base_cfg)
            self.step_runs[step.number]["baseline"] = baseline.id
            self.app.call_from_thread(self._launched, step.number, "baseline")
            while not worker.is_cancelled and baseline.status() not in TERMINAL:
                time.sleep(POLL_S)
            status = baseline.status()
            if status != "finished":
                raise UserError(f"the baseline run {baseline.id} {status}; this step's checks need it")
        if not worker.is_cancelled:
            run = self.backend.launch(cfg)
            self.step_runs[step.number]["run"] = run.id
            self.app.call_from_thread(self._launched, step.number, "run")

    def _launched(self, number: int, role: str) -> None:
        self.run_status = "running"
        self._show_run()
        self.refresh_bindings()
        run_id = self.step_runs[number][role]
        self.notify(f"Step {number}: {role} {run_id} started; o opens its live view")

    def action_open_run(self) -> None:
        runs = self.step_runs.get(self.step.number, {}) if self.step else {}
        run_id = runs.get("run") or runs.get("baseline")
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
            self.refresh_bindings()

    def action_answers(self) -> None:
        if self.step and self.step.questions:
            self.answers_shown = True
            self._show_extras()
            self.query_one("#step-panes", Panes).show("checks-pane")
            self.refresh_bindings()

    def action_next_pane(self) -> None:
        self.query_one("#step-panes", Panes).show_next()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        step = self.step
        if action == "launch":
            return step is not None
        if action == "open_run":
            return bool(step and self.step_runs.get(step.number)) or None
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

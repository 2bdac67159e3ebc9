"""Exercises: the guided scenarios, then one step at a time with its run, live checks, hints and questions.

A step runs through the same code as `tinylab exercises check` (tinylab.service.exercise): its
baseline run first (when the step compares two), then its own run, the checks evaluated while it
goes and the attempt recorded when it ends. The worker posts each progress event as a message;
the handlers here keep the screen's state. A step tried before shows the runs it keeps (the latest
that passed it) and its checks as they were evaluated on them; a step that hides a fault takes a
diagnosis (`d`), which names it.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Footer, Header, Markdown, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from tinylab.core.errors import UserError
from tinylab.runs.record import short_id
from tinylab.service import exercise
from tinylab.service.runs import TERMINAL
from tinylab.tui.screens.base import HOME, BaseScreen, background
from tinylab.tui.widgets.hanging import Fitting, Hanging
from tinylab.tui.widgets.marked import MarkedOptionList
from tinylab.tui.widgets.panes import Pane, Panes

CHECK_MARK = {"pass": "✓", "fail": "✗", "skip": "–"}
#: The scenario list keeps at least this many rows, however long the preview under it.
MIN_LIST_ROWS = 4


class ScenariosLoaded(Message):
    def __init__(self, scenarios: list[exercise.Scenario], progress: dict[str, Any], error: str | None = None) -> None:
        super().__init__()
        self.scenarios, self.progress, self.error = scenarios, progress, error


class StepLoaded(Message):
    """The scenario, the step to open, what each step tried before keeps (number -> its runs by role
    still in the store, its checks as evaluated on them, the status they show under), and the
    faults to pick from of each step that still hides one."""

    def __init__(self, scenario: exercise.Scenario, index: int,
                 kept: dict[int, tuple[dict[str, str], list[exercise.CheckResult], str]],
                 hiding: dict[int, tuple[str, ...]]) -> None:
        super().__init__()
        self.scenario, self.index, self.kept, self.hiding = scenario, index, kept, hiding


class Diagnosed(Message):
    def __init__(self, number: int, diagnosis: exercise.Diagnosis) -> None:
        super().__init__()
        self.number, self.diagnosis = number, diagnosis


class StepRunnerEnded(Message):
    """The step's worker has stopped (done, stopped, or failed): another step may be launched."""

    def __init__(self, number: int) -> None:
        super().__init__()
        self.number = number


#: The status of a step that started no run because its tool is missing: it read its recorded output.
RECORDED = "read the recorded output"
#: The status of a step that runs nothing: its checks read kernels compiled on this machine.
COMPILING, COMPILED = "compiling the step's kernels…", "compiled on this machine"
#: The status of the runs a step keeps from an earlier attempt (tinylab.exercises.progress.kept_attempt),
#: and of an attempt whose runs are no longer in the store (its checks as they were evaluated stay).
PASSED_BEFORE, TRIED_BEFORE, GONE = "passed before", "tried before", "its runs are no longer in the store"
#: The statuses whose checks are final: the verdict is shown under them.
SETTLED = (*TERMINAL, RECORDED, COMPILED, PASSED_BEFORE, TRIED_BEFORE, GONE)


class StepProgressed(Message):
    """One progress event of a step's runs (tinylab.service.exercise), for step `number`."""

    def __init__(self, number: int, event: exercise.StepProgress) -> None:
        super().__init__()
        self.number, self.event = number, event


class ExercisesScreen(BaseScreen):
    TITLE = "Exercises"
    BINDINGS = [Binding("enter", "start", "Start", priority=True,
                        tooltip="open the selected scenario at its first step not yet done"), HOME]

    def __init__(self) -> None:
        super().__init__()
        self.scenarios: list[Any] = []
        self.progress: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield MarkedOptionList(id="scenarios")
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
            scenarios, progress = self.backend.scenarios(), self.backend.progress()
        except Exception as exc:  # a broken scenario file is shown here, where the learner looks
            self.post_message(ScenariosLoaded([], {}, str(exc)))
            return
        self.post_message(ScenariosLoaded(scenarios, progress))

    @on(ScenariosLoaded)
    def _show(self, message: ScenariosLoaded) -> None:
        if message.error is not None:
            self.query_one("#scenario-about", Static).update(
                Text(f"Could not load the exercises: {message.error}", style="bold"))
            return
        scenarios, progress = message.scenarios, message.progress
        self.scenarios, self.progress = scenarios, progress
        options = self.query_one("#scenarios", OptionList)
        highlighted = options.highlighted
        options.clear_options()
        for s in scenarios:
            done = exercise.steps_done(progress, s)
            row = Table.grid(expand=True, padding=(0, 1))
            row.add_column(width=3, style="bold" if done == len(s.steps) else "dim")
            row.add_column(ratio=1, no_wrap=True, overflow="ellipsis", style="bold")
            row.add_column(justify="right", no_wrap=True, style="dim")
            row.add_row(f"{done}/{len(s.steps)}", s.title, f"{s.level} · {s.minutes} min")
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
            self.call_after_refresh(self._fit_preview)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_preview)

    def _fit_preview(self) -> None:
        """The list leaves the preview the rows its summary and every step take (at 80x24 a long
        summary and six steps need 10 or more); the list scrolls in the rest."""
        options, about = self.query_one("#scenarios", OptionList), self.query_one("#scenario-about", Static)
        width = about.content_region.width
        if not width:
            return
        rows = options.outer_size.height + about.outer_size.height
        needed = len(about.render().wrap(width)) + about.styles.gutter.height
        options.styles.max_height = max(MIN_LIST_ROWS, rows - needed)
        self.call_after_refresh(options.scroll_to_highlight)  # a shorter list keeps its selection in view

    def action_start(self) -> None:
        options = self.query_one("#scenarios", OptionList)
        if options.highlighted is not None and self.scenarios:
            self.app.open_exercise(self.scenarios[options.highlighted].id)  # type: ignore[attr-defined]


class StepScreen(BaseScreen):
    TITLE = "Exercise"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        # the button says "enter"; in the footer it would push `?` off an 80-column line
        Binding("enter", "launch", "Launch step", show=False, tooltip="run the step's preset (its baseline first, if any)"),
        Binding("o", "open_run", "Run", tooltip="open the live view of this step's run"),
        Binding("n", "step(1)", "Next", tooltip="the next step"),
        Binding("p", "step(-1)", "Prev", tooltip="the previous step"),
        Binding("i", "hint", "Hint", tooltip="reveal the next hint"),
        Binding("a", "answers", "Answers", tooltip="reveal the answers to the step's questions"),
        # over the app's `d` (Doctor) on a step that hides a fault, and only there (check_action)
        Binding("d", "diagnose", "Diagnose", tooltip="name the fault this step hides, from the faults it could be"),
        # the tab strip says "t: next panel"; in the footer it would push `?` off an 80-column line
        Binding("t", "next_pane", "Panel", show=False, tooltip="the next panel (narrow terminals show one at a time)"),
        # the panel in view scrolls from any focus (the focused button would otherwise take them)
        Binding("pagedown", "scroll('page_down')", "Page down", show=False),
        Binding("pageup", "scroll('page_up')", "Page up", show=False),
        Binding("end", "scroll('scroll_end')", "End", show=False),
        Binding("home", "scroll('scroll_home')", "Home", show=False),
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
        #: step number -> (check results, status of its run): the latest the step's worker posted
        self.step_results: dict[int, tuple[list[exercise.CheckResult], str]] = {}
        #: the step whose runs are going (one at a time: two runs at once skew each other's timings)
        self.running_step: int | None = None
        #: step number -> the faults to pick from, for each step whose fault is still hidden
        self.hiding: dict[int, tuple[str, ...]] = {}
        #: step number -> the learner's latest diagnosis of it
        self.diagnoses: dict[int, exercise.Diagnosis] = {}

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield Static(id="step-head")
        with Horizontal(id="step-actions"):
            yield Button("▶ Run this step (enter)", id="launch-step", compact=True, variant="primary")
            yield Static(id="step-run")
        with Panes(id="step-panes"):
            yield Pane(VerticalScroll(Markdown(id="step-text"), id="text-box"), title="Step", id="text-pane")
            yield Pane(VerticalScroll(Static(id="checks"), Static(id="diagnosis"), Static(id="hints"),
                                      Static(id="hint-new"), Static(id="questions"), id="checks-box"),
                       title="Checks", id="checks-pane")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.load()

    @background("scenario")
    def load(self) -> None:
        scenario = self.backend.scenario(self.scenario_id)
        progress = self.backend.progress()
        steps = progress.get("scenarios", {}).get(scenario.id, {}).get("steps", {})
        first_open = next((i for i, st in enumerate(scenario.steps)
                           if not (steps.get(str(st.number)) or {}).get("passed_at")), 0)
        kept = {}
        for st in scenario.steps:
            attempt = exercise.kept_attempt(progress, scenario.id, st.number)
            if attempt is None:
                continue
            runs = {role: run_id for role, run_id in attempt.runs(st).items() if self._exists(run_id)}
            if runs:
                status = PASSED_BEFORE if attempt.passed else TRIED_BEFORE
            else:  # no run: deleted since, or none was made (compiled kernels, a recorded output)
                status = GONE if attempt.run_ids else COMPILED if st.compile_only else RECORDED
            kept[st.number] = (runs, attempt.results(st), status)
        hiding = {st.number: exercise.suspects(st) for st in scenario.steps
                  if exercise.hidden_fault(st) and exercise.hidden_fields(progress, scenario, st.number)}
        self.post_message(StepLoaded(scenario, first_open, kept, hiding))

    def _exists(self, run_id: str) -> bool:
        """Whether a kept run is still in the store (`o` on a deleted one would open nothing)."""
        try:
            self.backend.run(run_id)
        except UserError:
            return False
        return True

    @on(StepLoaded)
    def _loaded(self, message: StepLoaded) -> None:
        self.scenario, self.index, self.hiding = message.scenario, message.index, message.hiding
        for number, (runs, results, status) in message.kept.items():
            self.step_runs[number], self.step_results[number] = runs, (results, status)
        self.sub_title = f"Exercise {message.scenario.id}"  # the title, in full, heads the step (80 columns cut it here)
        self._show_step()

    @property
    def step(self) -> exercise.Step | None:
        return self.scenario.steps[self.index] if self.scenario and self.scenario.steps else None

    @property
    def results(self) -> list[exercise.CheckResult]:
        return self.step_results.get(self.step.number, ([], ""))[0] if self.step else []

    @property
    def run_status(self) -> str:
        return self.step_results.get(self.step.number, ([], ""))[1] if self.step else ""

    @property
    def on_gpu(self) -> bool:
        report = self.app.doctor_report  # type: ignore[attr-defined]
        return report is not None and report.gpu is not None

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
        self.hints_shown, self.answers_shown = 0, False
        self._show_checks()
        self._show_diagnosis()
        self._show_extras()
        self._show_run()
        self.refresh_bindings()

    def _show_run(self) -> None:
        runs = self.step_runs.get(self.step.number, {}) if self.step else {}
        if not runs:
            if self.run_status == RECORDED:
                text = Fitting(Text("no run: its tool is not here", style="dim"),
                               Text(f", so the checks {RECORDED}", style="dim"))
            elif self.run_status in (COMPILING, COMPILED, GONE):
                text = Fitting(Text.assemble("no run: ", (self.run_status, "bold")))
            else:
                text = Fitting(Text("no run for this step yet", style="dim"))
        else:  # the status first, then whether it passed (at 80 columns the Checks are a panel away),
            # then the run ids that fit whole (`o` opens the run)
            judged = []
            if self.results and self.run_status in TERMINAL:
                judged = [" · ✓ passed" if exercise.step_passed(self.results) else " · ✗ not passed"]
            text = Fitting(Text(self.run_status, style="bold"), *judged,
                           *(f" · {role} {short_id(runs[role])}" for role in ("run", "baseline") if role in runs))
        self.query_one("#step-run", Static).update(text)

    def _show_checks(self) -> None:
        step = self.step
        text = Hanging().add(Text("Checks", style="bold"))
        results = {r.name: r for r in self.results}
        for check in step.checks:
            result = results.get(check.name)
            gpu_only = check.needs_gpu and not self.on_gpu
            mark = CHECK_MARK.get(result.status, "?") if result else ("–" if gpu_only else "·")
            body = Text(check.description)
            if result is not None and result.value is not None:
                body.append(f"  = {exercise.format_value(result.value)}", style="bold")
            text.add(Text(f" {mark} ", style="bold"), body)
            if result is not None and result.detail:
                text.add("     ", Text(result.detail, style="dim"))
            elif gpu_only:
                text.add("     ", Text(f"GPU only: {check.gpu_reason or 'needs a GPU'}", style="dim"))
        if not step.checks:
            text.add(" ", Text("(this step has no automatic checks)", style="dim"))
        verdict = self._verdict()
        if verdict:
            text.add("").add(" ", Text(verdict, style="bold"))
        self.query_one("#checks", Static).update(text)

    def _verdict(self) -> str:
        if not self.results or self.run_status not in SETTLED:
            return ""
        verdict = exercise.verdict(self.results)
        if exercise.step_passed(self.results):
            return f"{verdict}: n goes to the next step"
        return verdict + (": read the hints (i)" if any(r.status == "fail" for r in self.results) else "")

    def _show_diagnosis(self) -> None:
        """What the step hides and how to name it, the learner's latest diagnosis of it, or (found
        or revealed) the fault; nothing for a step that hides none."""
        step = self.step
        text = Hanging()
        found = self.diagnoses.get(step.number)
        if found is not None:
            lines = found.lines()
            text.add("").add(Text("Diagnosis" + ("" if found.right else " (d tries again)"), style="bold"))
            mark, verdict = lines[0].split(" ", 1)  # "✗ not …": the verdict wraps under its text, as a check's does
            text.add(Text(f" {mark} ", style="bold"), Text(verdict, style="bold"))
            for line in lines[1:]:
                text.add("   ", line)
        elif step.number in self.hiding:
            text.add("").add(Text("Diagnosis (d names the fault)", style="bold"))
            text.add(" ", Text("The run's fault shows as (hidden) until you name it or reveal the answers.",
                               style="dim"))
        elif exercise.hidden_fault(step):
            text.add("").add(Text("Diagnosis", style="bold")).add(" ", f"The fault is {exercise.hidden_fault(step)}.")
        self.query_one("#diagnosis", Static).update(text)

    def _show_extras(self) -> None:
        step = self.step
        hints = Hanging()
        if step.recorded or step.nvidia:
            hints.add("").add(Text(f"Without {step.tool or 'its tool'} here", style="bold"))
            if step.recorded:
                hints.add(" ", f"recorded output: {step.recorded.about}")
                hints.add("   ", f"tinylab hotspots {step.recorded.path}")
            if step.nvidia:
                hints.add(" ", f"on an NVIDIA GPU: {step.nvidia}")
        newest = Hanging()  # its own widget: what a reveal scrolls to; the two read as one text
        if step.hints:
            hints.add("").add(Text(f"Hints ({self.hints_shown}/{len(step.hints)}, i reveals one)", style="bold"))
            for i, hint in enumerate(step.hints[: self.hints_shown], 1):
                (newest if i == self.hints_shown else hints).add(" • ", hint)
        self.query_one("#hints", Static).update(hints)
        self.query_one("#hint-new", Static).update(newest)
        questions = Hanging()
        if step.questions:
            questions.add("").add(Text("Questions (a reveals the answers)", style="bold"))
            for i, q in enumerate(step.questions, 1):
                questions.add(f" {i}. ", q.prompt)
                if self.answers_shown:
                    questions.add("    → ", Text(q.answer, style="bold"))
                    if q.explanation:
                        questions.add("      ", Text(q.explanation, style="dim"))
        self.query_one("#questions", Static).update(questions)

    # ---------------------------------------------------------------- actions
    @on(Button.Pressed, "#launch-step")
    def action_launch(self) -> None:
        step = self.step
        if step is None:
            return
        if self.running_step is not None:
            self.notify(f"Step {self.running_step}'s runs are still going: one step at a time, so that "
                        "their timings do not skew each other.", severity="warning")
            return
        if not self.backend.machine.has_gpu and step.checks and all(c.needs_gpu for c in step.checks):
            self.notify("Every check of this step needs a GPU: nothing to run on this machine.", severity="warning")
            return
        self.running_step = step.number
        self.step_runs[step.number] = {}
        if step.compile_only:
            self.step_results[step.number] = ([], COMPILING)
            self._show_run()
        self.launch(step.number)

    @background("launch")
    def launch(self, number: int) -> None:
        """The step's runs through tinylab.service.exercise, each progress event posted as a message."""
        worker = get_current_worker()
        try:
            plan = self.backend.plan_step(self.scenario_id, number)
            for event in self.backend.run_step(plan, poll_s=self.backend.poll_s, stop=lambda: worker.is_cancelled):
                self.post_message(StepProgressed(number, event))
        finally:
            self.post_message(StepRunnerEnded(number))

    @on(StepRunnerEnded)
    def _runner_ended(self, message: StepRunnerEnded) -> None:
        if self.running_step == message.number:
            self.running_step = None

    @on(StepProgressed)
    def _progressed(self, message: StepProgressed) -> None:
        number, event = message.number, message.event
        results, status = self.step_results.get(number, ([], ""))
        if isinstance(event, exercise.RunStarted):
            self.step_runs.setdefault(number, {})[event.role] = event.run_id
            status = "running"
            self.notify(f"Step {number}: {event.role} {event.run_id} started; o opens its live view")
        elif isinstance(event, exercise.RunEnded):
            status = event.status
        elif isinstance(event, exercise.Checked):
            results, status = event.results, event.status
        elif isinstance(event, exercise.StepDone):
            results = event.results
            if status == COMPILING:  # set at launch for a step that only compiles
                status = COMPILED
            status = status or (RECORDED if not event.run_ids else status)
            if event.note and status != COMPILED:
                self.notify(event.note, severity="warning")
        self.step_results[number] = (results, status)
        if self.step is not None and self.step.number == number:
            self._show_checks()
            self._show_run()
            self.refresh_bindings()

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
            self._bring_into_view("#hint-new")
            self.refresh_bindings()

    def action_answers(self) -> None:
        if self.step and self.step.questions:
            self.answers_shown = True
            self.hiding.pop(self.step.number, None)  # the answers name the fault: nothing left to find
            self._show_diagnosis()
            self._show_extras()
            self._bring_into_view("#questions")
            self.reveal(self.step.number)
            self.refresh_bindings()

    @background("reveal")
    def reveal(self, number: int) -> None:
        """Recorded in the progress file: what the step hides of its run shows from now on."""
        self.backend.reveal_answers(self.scenario_id, number)

    def action_diagnose(self) -> None:
        step = self.step
        if step is None:
            return
        if step.number not in self.hiding:  # named or revealed: a disabled key would open the Doctor instead
            self.notify(f"Step {step.number}'s fault is {exercise.hidden_fault(step)}: it shows wherever its run is shown.")
            return
        from tinylab.tui.screens.diagnose import DiagnoseScreen

        number = step.number
        self.app.push_screen(DiagnoseScreen(number, self.hiding[number]),
                             lambda guess: self.diagnose(number, guess) if guess else None)

    @background("diagnose")
    def diagnose(self, number: int, guess: str) -> None:
        """Judged on the step's kept runs (tinylab.service.exercise.diagnose); the right one is recorded."""
        self.post_message(Diagnosed(number, self.backend.diagnose(self.scenario_id, number, guess)))

    @on(Diagnosed)
    def _diagnosed(self, message: Diagnosed) -> None:
        number, found = message.number, message.diagnosis
        self.diagnoses[number] = found
        if found.right:
            self.hiding.pop(number, None)
        # the verdict is the Diagnosis section, brought into view (no toast over the panel that says it)
        if self.step is not None and self.step.number == number:
            self._show_diagnosis()
            self._bring_into_view("#diagnosis")
            self.refresh_bindings()

    def _bring_into_view(self, selector: str) -> None:
        """What `i` or `a` revealed, at the top of the Checks panel once laid out (at 80x24 it came
        below the panel's end, and only the scrollbar moved); the panel takes the scroll keys."""
        self.query_one("#step-panes", Panes).show("checks-pane")
        box = self.query_one("#checks-box", VerticalScroll)
        box.focus()
        self.call_after_refresh(lambda: box.scroll_to_widget(self.query_one(selector), animate=False, top=True))

    def action_scroll(self, how: str) -> None:
        """Page down, page up, end, home: in the panel on show (the Checks panel on a wide terminal)."""
        panes = self.query_one("#step-panes", Panes)
        wide = not self.screen.has_class("-narrow")
        pane = panes.query_one("#checks-pane", Pane) if wide else panes.current
        if pane is not None:
            getattr(pane.query_one(VerticalScroll), f"action_{how}")()

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
        if action == "diagnose":  # only on a step that hides a fault (elsewhere `d` is the Doctor)
            return bool(step and exercise.hidden_fault(step))
        if action == "next_pane":
            return self.screen.has_class("-narrow")
        return True

"""Lab (home): pick a version, set the config, toggles and profilers, and launch with one key.

The form builds a RunConfig and checks it on every change with the lab's pre-launch check (the
one the CLI and the trainer use: config, device, memory, profilers; answered from the doctor
report): the flags its one-line message names are the fields flagged red, so the form never
re-implements a rule and can never launch a run the trainer would refuse. The form starts from
the newest plain run the learner launched (not an exercise's, not profiled, no fault), else from
the machine's preset (`cpu` without a GPU); toggles a version does not support, and profilers
`doctor` finds missing, stay focusable so that focusing one says why it is off.

The form never changes under the learner's hands. The newest run is read after the first frame
(a big store takes seconds), so it fills the form only while the learner has not touched it: once
a key was pressed here or focus entered the form, what is on screen stays. The sizes a form shows
before the machine is known (a GPU's device node, the doctor not answered yet) are placeholders:
the machine's preset replaces them unless the learner typed numbers. Enter launches what is on
screen at once when its check needs nothing of the doctor's report (a plain run on a CPU-only
host: the report takes 4-18 s on a busy machine); a run with a profiler, or on a GPU host, is
taken, not dropped: the check line says "checking profilers…" (esc cancels), and the form as it
is then launches when the check ends.

Each version's figure is its newest clean run (no profiler, no fault, a machine its load sampler
did not find busy) at the form's sizes and precision, labelled with them: a profiled or
fault-injected run measures something else, and a run on a busy machine measures the contention.
A version whose every clean run there was busy has no figure, and says so; a figure from a run
that sampled no load (an older run, telemetry off) says its contention was not measured.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Header, Label, OptionList, Select, Static
from textual.widgets.option_list import Option as ListOption

from tinylab.config import (
    DEVICES,
    ENGINES,
    PRECISIONS,
    PROFILERS,
    TOGGLE_HELP,
    TOGGLES,
    VERSIONS,
    ConfigError,
    RunConfig,
)
from tinylab.config.build import PRESETS, from_choices, matching_preset, preset_for
from tinylab.core.errors import UserError
from tinylab.runs.record import RunRecord, key_config, short_id
from tinylab.service import profilers
from tinylab.service.doctor import DoctorReport
from tinylab.tui.fmt import plain, safe
from tinylab.tui.screens.base import BaseScreen, background
from tinylab.tui.screens.lab_fields import NUMBER_HELP, NUMBERS, TOGGLE_LABELS, engine_help, flags_in, profiler_rows
from tinylab.tui.textual_private import SelectOverlay
from tinylab.tui.widgets.form import NumberInput, Option
from tinylab.tui.widgets.marked import MarkedOptionList
from tinylab.tui.widgets.runtable import RunTable

#: Runs listed under the form on a wide terminal.
RECENT = 20
#: How often the recent runs' ages are redrawn.
AGE_TICK_S = 15.0
#: The size select's value when the numbers match no preset.
CUSTOM = "custom"
#: The engine select's value for a run of one process.
ONE_PROCESS = "one process"


class HistoryLoaded(Message):
    def __init__(self, records: list[RunRecord]) -> None:
        super().__init__()
        self.records = records


class Launched(Message):
    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id


class LabScreen(BaseScreen):
    TITLE = "Lab"
    AUTO_FOCUS = "#versions"
    BINDINGS = [
        Binding("enter", "launch", "Launch", priority=True, tooltip="validate the form and start the run"),
        Binding("escape", "leave_field", "Leave field", show=False,
                tooltip="from a form field back to the versions, where letters are keys again"),
        # the app's own keys, shown here (the home screen's footer has room for them)
        Binding("r", "app.section('runs')", "Runs"),
        Binding("x", "app.section('exercises')", "Exercises"),
        Binding("K", "app.section('kernels')", "Kernels"),
        Binding("d", "app.section('doctor')", "Doctor"),
        Binding("w", "app.watch_live", "Watch live", show=False),  # the live line says "w watches it"
        Binding("q", "app.quit", "Quit"),
        Binding("f", "jump('toggle')", "Fusions", show=False, tooltip="the version's first fusion toggle"),
        Binding("p", "jump('profiler')", "Profilers", show=False, tooltip="the first available profiler"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.version = RunConfig().version  # the baseline, first in the list
        self.records: list[RunRecord] = []
        self.last_runs: dict[str, RunRecord] = {}
        self.busy_runs: dict[str, RunRecord] = {}  # a version's newest run at these sizes, kept out: busy
        self.prefilled = False  # the first history load has been shown
        self.touched = False  # a key was pressed here or focus entered the form
        self.sized = False  # the sizes came from history, the machine's preset or the learner
        self._launch_pending = False  # enter came, and the run's check waits for the doctor
        self._refocus = False  # left for another screen (not a modal over this one)
        self._shown_precision: str | None = None

    # ----------------------------------------------------------------- layout
    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        with VerticalScroll(id="lab-body"):
            with Vertical(id="versions-box") as box:
                box.border_title = "Versions"
                box.border_subtitle = "clean runs at these sizes"
                yield MarkedOptionList(*[ListOption(self._version_row(v), id=v) for v in VERSIONS], id="versions")
                yield Static(id="version-about")
            with Vertical(id="form-box") as box:
                box.border_title = "Config"
                with Horizontal(classes="form-row"):
                    yield Label("train", classes="row-label")
                    for name in ("batch_size", "seq_len", "num_steps", "warmup_steps"):
                        yield from self._number(name)
                with Horizontal(classes="form-row"):
                    yield Label("model", classes="row-label")
                    for name in ("hidden_dim", "num_layers", "num_heads", "num_kv_heads"):
                        yield from self._number(name)
                with Horizontal(classes="form-row"):
                    yield Label("run", classes="row-label")
                    yield Label("size", classes="field-label")
                    yield Select([(p, p) for p in (*PRESETS, CUSTOM)], value="workshop", allow_blank=False,
                                 compact=True, id="size")
                    yield Label("precision", classes="field-label")
                    yield Select([(p, p) for p in PRECISIONS], value="fp32", allow_blank=False, compact=True,
                                 id="precision")
                    yield Label("device", classes="field-label")
                    yield Select([(d, d) for d in DEVICES], value="auto", allow_blank=False, compact=True,
                                 id="device")
                with Horizontal(classes="form-row"):
                    yield Label("scale", classes="row-label")
                    yield from self._number("nproc_per_node")
                    yield Label("engine", classes="field-label")
                    yield Select([(ONE_PROCESS, ONE_PROCESS), *((e, e) for e in ENGINES)], value=ONE_PROCESS,
                                 allow_blank=False, compact=True, id="engine")
                with Horizontal(classes="form-row"):
                    yield Label("fusions", classes="row-label")
                    for name, label in TOGGLE_LABELS.items():
                        yield Option(label, name=name, help=f"{label}: {TOGGLE_HELP[name]}", id=f"toggle-{name}")
                for i, names in enumerate(profiler_rows()):
                    with Horizontal(classes="form-row"):
                        yield Label("" if i else "profile", classes="row-label")
                        for name in names:
                            yield Option(name, name=name, help=f"{name}: checking availability…",
                                         id=f"profiler-{name}")
            yield Static(id="hint")
            yield Static(id="check")
            yield Static(id="live")
            recent = RunTable(id="recent")
            recent.can_focus = False
            recent.border_title = "Recent runs (r: all runs, mark, compare)"
            yield recent
        yield Footer(compact=True)

    def _number(self, name: str):
        yield Label(NUMBERS[name], classes="field-label")
        yield NumberInput(getattr(RunConfig(), name), field=name, id=f"num-{name}", classes="number")

    def on_mount(self) -> None:
        self.query_one("#versions", OptionList).highlighted = 0
        self._apply_version(RunConfig().version, reset=True)
        if self.backend.knows_device:  # no GPU here: the cpu preset from the first frame, not after the doctor
            self._apply_preset(preset_for(self.backend.machine.device_type("auto")))
        self.watch(self.app, "doctor_report", self._apply_doctor)
        self.watch(self.app, "doctor_error", self._apply_doctor_error)
        self.watch(self.app, "live_runs", self._show_live)
        self.call_after_refresh(self.load_history)
        self.set_interval(AGE_TICK_S, self._tick_ages)

    def on_screen_suspend(self) -> None:
        """Another section or a pushed screen (not a modal such as help): back here, focus starts
        again on the versions, where letters are keys, instead of a form field that keeps them."""
        self._refocus = not isinstance(self.app.screen, ModalScreen)

    def on_screen_resume(self) -> None:
        if self.is_mounted:
            if self._refocus:
                self.query_one("#versions", OptionList).focus()
            self.load_history()

    # ------------------------------------------------------------- run store
    @background("history")
    def load_history(self) -> None:
        self.post_message(HistoryLoaded(self.backend.records()))

    @on(HistoryLoaded)
    def _show_history(self, message: HistoryLoaded) -> None:
        records = message.records
        self.records = records
        self.query_one("#recent", RunTable).show(records[-RECENT:], {}, self.backend.clock())
        start_from = next((r.settings for r in reversed(records) if not r.from_exercise and r.settings
                           and not r.settings.profilers and not r.settings.fault), None)
        if start_from and not self.prefilled and not self.touched:
            self._prefill(start_from)
        self.prefilled = True
        self._show_versions()

    def _tick_ages(self) -> None:
        """Ages ("3m") move on without rereading the store."""
        if self.records:
            self.query_one("#recent", RunTable).show(self.records[-RECENT:], {}, self.backend.clock())

    def _show_versions(self) -> None:
        """Each version's newest clean run at the form's sizes (see the module docstring)."""
        sizes = self._sizes()
        self.last_runs, self.busy_runs = {}, {}
        for record in self.records:
            cfg = record.settings
            clean = record.status == "finished" and cfg is not None and not cfg.profilers and not cfg.fault \
                and not cfg.parallel  # one process: the figure a version's row compares
            if clean and record.version in VERSIONS and sizes is not None and all(getattr(cfg, k) == v for k, v in sizes.items()):
                (self.busy_runs if record.busy else self.last_runs)[record.version] = record
        versions = self.query_one("#versions", OptionList)
        for v in VERSIONS:
            versions.replace_option_prompt(v, self._version_row(v))
        self._describe_version()

    def _sizes(self) -> dict[str, Any] | None:
        """The form's sizes and precision (None while a number field is not a number)."""
        try:
            sizes = {k: int(self.query_one(f"#num-{k}", NumberInput).value) for k in PRESETS["workshop"]}
        except ValueError:
            return None
        return {**sizes, "precision": self.query_one("#precision", Select).value}

    def _prefill(self, previous: RunConfig) -> None:
        """Start from the newest plain run's config (not an exercise's, not profiled, no fault): the
        next run is usually that one with one change; an exercise's tiny sizes and profilers are not."""
        for name in NUMBERS:
            self.query_one(f"#num-{name}", NumberInput).value = str(getattr(previous, name))
        self.sized = True
        self.query_one("#precision", Select).value = previous.precision
        self.query_one("#device", Select).value = previous.device if previous.device in DEVICES else "auto"
        self.query_one("#engine", Select).value = previous.parallel or ONE_PROCESS
        self._fit_device()
        if previous.version in VERSIONS:
            self.query_one("#versions", OptionList).highlighted = list(VERSIONS).index(previous.version)
            self._apply_version(previous.version, reset=True)
            for name in TOGGLES:
                if previous.version in TOGGLES[name]:
                    self.query_one(f"#toggle-{name}", Option).value = bool(getattr(previous, name))
        self._validate()

    def _version_row(self, version: str) -> Table:
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(width=2, style="bold")
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        grid.add_column(justify="right", no_wrap=True)
        record = self.last_runs.get(version)
        sps = record.summary.samples_per_s if record and record.summary else None
        speed = (Text(f"{sps:,.1f} samples/s on {record.device}") if record and sps
                 else Text("no quiet run at these sizes", style="dim") if version in self.busy_runs
                 else Text("no clean run at these sizes", style="dim"))
        grid.add_row(version, VERSIONS[version], speed)
        return grid

    def _describe_version(self) -> None:
        record = self.last_runs.get(self.version)
        busy = self.busy_runs.get(self.version)
        text = Text(VERSIONS[self.version])  # a line at most under it (80x24)
        if record is None and busy:  # the Run and Runs screens say why it was busy
            text.append("\n" + safe(f"no quiet run: every clean run of {self.version} at these sizes was on a busy "
                                    f"machine (newest {short_id(busy.id)})"), style="dim")
        elif record:
            measured = record.summary is not None and record.summary.others_cpu_cores is not None
            quiet = "a quiet machine" if measured else "contention not measured"
            text.append("\n" + safe(f"figure from {short_id(record.id)}  {record.key_config} (no profiler, no fault, "
                                    f"{quiet})"), style="dim")
        self.query_one("#version-about", Static).update(text)

    # --------------------------------------------------------------- doctor
    def _apply_doctor(self, report: DoctorReport | None) -> None:
        if report is None:
            return
        if not self.sized:  # placeholders (no earlier run, no typed numbers): the machine's own preset
            self._apply_preset(preset_for(self.backend.machine.device_type("auto")))
        self._fit_device()
        for name in profilers.names():
            box = self.query_one(f"#profiler-{name}", Option)
            entry = report.profilers.get(name)
            if entry is None:
                box.help = f"{name}: doctor does not know this profiler"
                box.set_unavailable(None)
            elif entry.available:
                version = f" {entry.version}" if entry.version else ""
                box.help = f"{name}{version}: available ({entry.kind or ''})"
                box.set_unavailable(None)
            else:
                box.set_unavailable(f"{name} is unavailable: {entry.reason or 'not found'}."
                                    f" Fix: {entry.fix or 'see the Doctor screen (d)'}")
        self._validate()
        self._launch_if_pending()

    def _apply_doctor_error(self, error: str | None) -> None:
        if error is None:
            return
        for name in profilers.names():
            self.query_one(f"#profiler-{name}", Option).help = f"{name}: availability unknown ({error})"
        self._launch_if_pending()

    def _launch_if_pending(self) -> None:
        if self._launch_pending:
            self._launch_pending = False
            self._launch_form()

    def _show_live(self, live: list[RunRecord]) -> None:
        widget = self.query_one("#live", Static)
        if not live:
            widget.update("")
            return
        newest = live[-1]
        step = newest.last_step.step if newest.last_step else None
        total = newest.settings.num_steps if newest.settings else "?"
        progress = f" step {step + 1}/{total}" if step is not None else ""
        more = f" (+{len(live) - 1} more)" if len(live) > 1 else ""
        widget.update(Text.assemble(("● ", "bold"), safe(f"running: {newest.id} {newest.version}{progress}{more}"),
                                    ("  w watches it", "dim")))

    # ------------------------------------------------------------------ form
    @on(OptionList.OptionHighlighted, "#versions")
    def _version_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and event.option.id != self.version:  # code moves it only to self.version
            self.touched = True
            self._apply_version(event.option.id, reset=True)

    def _apply_version(self, version: str, *, reset: bool) -> None:
        self.version = version
        self.query_one("#form-box").border_title = f"{version} config"
        for name, supported in TOGGLES.items():
            box = self.query_one(f"#toggle-{name}", Option)
            if version in supported:
                box.set_unavailable(None)
                if reset:
                    box.value = self._toggle_default(name)
            else:
                box.set_unavailable(f"{TOGGLE_LABELS[name]} ({TOGGLE_HELP[name]}) is a toggle of "
                                    f"{', '.join(supported)}, not {version}")
        self._describe_version()
        self._validate()

    def _fit_device(self) -> None:
        """A form started from a GPU run, on a machine the doctor found without one: device auto."""
        device = self.query_one("#device", Select)
        if self.backend.knows_machine and str(device.value).startswith("cuda") and not self.backend.machine.has_gpu:
            device.value = "auto"
            self._hint("device set to auto: the run the form started from used a GPU, and none is visible here")

    def _apply_preset(self, preset: str) -> None:
        for name, value in PRESETS[preset].items():
            self.query_one(f"#num-{name}", NumberInput).value = str(value)
        self.sized = True
        self._show_size(preset)

    def _show_size(self, value: str) -> None:
        size = self.query_one("#size", Select)
        if size.value != value:
            size.value = value

    @on(Select.Changed, "#size")
    def _size_changed(self, event: Select.Changed) -> None:
        """The learner picked a size: its numbers. Changes made by code (the select's own first value,
        the form following the numbers) arrive here later too, and are not followed."""
        if event.select.has_focus_within and event.value in PRESETS:
            self._apply_preset(str(event.value))

    def config(self) -> RunConfig:
        """The form as a RunConfig; raises ConfigError naming the first bad field."""
        values: dict[str, Any] = {"version": self.version}
        for name in NUMBERS:
            raw = self.query_one(f"#num-{name}", NumberInput).value.strip()
            try:
                values[name] = int(raw)
            except ValueError:
                raise ConfigError(f"--{name.replace('_', '-')} must be an integer, got {raw!r}") from None
        values["precision"] = self.query_one("#precision", Select).value
        values["device"] = self.query_one("#device", Select).value
        engine = self.query_one("#engine", Select).value
        if engine != ONE_PROCESS:  # one process, or ranks above 1 under ddp (from_choices)
            values["parallel"] = engine
        for name, supported in TOGGLES.items():
            box = self.query_one(f"#toggle-{name}", Option)
            # the version's default stays None, so the engine resolves it (e.g. graphs off on a CPU)
            if self.version in supported and box.value != self._toggle_default(name, values["precision"]):
                values[name] = box.value
        values["profilers"] = [n for n in PROFILERS if self.query_one(f"#profiler-{n}", Option).value]
        return self.backend.check(from_choices(values), final=False)

    def _validate(self) -> RunConfig | None:
        check = self.query_one("#check", Static)
        for widget in self.query(".number"):
            widget.remove_class("-invalid")
        try:
            cfg = self.config()
        except UserError as exc:  # ConfigError, or a profiler of the newest run that is not here
            for name in flags_in(str(exc)):
                for widget in self.query(f"#num-{name}"):
                    widget.add_class("-invalid")
            check.update(Text.assemble(("✗ ", "bold"), str(exc)))
            check.set_class(True, "-error")
            return None
        check.set_class(False, "-error")
        waits = self.backend.waits_for_doctor(cfg) and self.app.doctor_error is None
        checking = "profilers" if self.backend.knows_device else "the machine"
        if self._launch_pending:
            check.update(Text.assemble(("… ", "bold"), f"checking {checking}…", " then launching ",
                                       f"{cfg.version} {key_config(cfg.resolved())}", (" · esc cancels", "dim")))
            return cfg
        pending = f" · enter checks {checking}, then launches" if waits else " · enter launches"
        check.update(Text.assemble(("✓ ", "bold"), f"ready: {cfg.version} {key_config(cfg.resolved())}",
                                   (pending, "dim")))
        return cfg

    def _toggle_default(self, name: str, precision: str | None = None) -> bool:
        """The engine's default for this toggle (some depend on precision, e.g. v4's attention)."""
        precision = precision or self.query_one("#precision", Select).value
        return RunConfig(version=self.version, precision=precision).toggle(name)

    @on(Select.Changed, "#precision")
    def _precision_changed(self, event: Select.Changed) -> None:
        """Toggles left at their default follow it when the precision changes the default."""
        old = self._shown_precision
        self._shown_precision = event.value
        if old is None or old == event.value:
            return
        for name, supported in TOGGLES.items():
            box = self.query_one(f"#toggle-{name}", Option)
            if self.version in supported and box.value == self._toggle_default(name, old):
                box.value = self._toggle_default(name, event.value)

    @on(NumberInput.Changed)
    @on(Select.Changed)
    @on(Option.Changed)
    def _form_changed(self, event: Message) -> None:
        if isinstance(event, NumberInput.Changed) and event.input.has_focus:
            self.sized = True  # the learner's numbers: the machine's preset no longer replaces them
        self._validate()
        self._show_size(matching_preset(self._sizes() or {}) or CUSTOM)
        if self.records:
            self._show_versions()

    @on(NumberInput.Submitted)
    def _submitted(self) -> None:
        self.action_launch()

    @on(NumberInput.Refused)
    def _refused(self, event: NumberInput.Refused) -> None:
        self._hint(f"{NUMBERS[event.field.field]} takes digits only ({event.character!r} was not typed); "
                   "esc leaves the field", warn=True)

    def action_jump(self, kind: str) -> None:
        """Straight to a row of the form (the profilers are 18 tabs from the version list)."""
        boxes = [box for box in self.query(Option) if str(box.id).startswith(f"{kind}-") and box.why_not is None]
        if not boxes:
            self._hint(f"{self.version} has no fusion toggles" if kind == "toggle" else
                       "no profiler is available here; the Doctor screen (d) says how to get one", warn=True)
            return
        boxes[0].focus()

    def action_leave_field(self) -> None:
        if self._launch_pending:
            self._launch_pending = False
            self._validate()
            self._hint("launch cancelled; enter launches the form")
        if isinstance(self.focused, (NumberInput, Option)):
            self.query_one("#versions", OptionList).focus()

    @on(Option.Focused)
    def _option_focused(self, event: Option.Focused) -> None:
        self._hint(event.option.why_not or event.option.help, warn=event.option.why_not is not None)

    def on_key(self, event: events.Key) -> None:
        """Any key the learner presses here (an arrow at the end of the list, a section key): the
        newest run arriving after it no longer fills the form (a field's own keys never get here,
        but focusing the field touched the form already)."""
        self.touched = True

    def on_descendant_focus(self, event) -> None:
        widget = event.widget
        if widget.id != "versions":  # into the form: history no longer fills it in
            self.touched = True
        if isinstance(widget, NumberInput):
            self._hint(f"{NUMBERS[widget.field]}: {NUMBER_HELP[widget.field]}")
        elif widget.id == "versions":
            self._hint("↑/↓ picks a version; f fusions, p profilers, tab the rest; enter launches")
        elif isinstance(widget, Select) and widget.id == "engine":
            self._hint(engine_help(widget.value))
        elif isinstance(widget, Select):
            self._hint("space opens the list")

    @on(Select.Changed, "#engine")
    def _engine_changed(self, event: Select.Changed) -> None:
        self._hint(engine_help(event.value))

    def _hint(self, text: str, *, warn: bool = False) -> None:
        hint = self.query_one("#hint", Static)
        hint.update(plain(text))  # quotes tools' reasons and typed characters: never markup
        hint.set_class(warn, "-warn")

    # ---------------------------------------------------------------- launch
    def action_launch(self) -> None:
        if isinstance(self.focused, (Select, SelectOverlay)):
            raise SkipAction()  # enter opens (or picks from) the list, as everywhere else
        self.touched = True  # what is on screen is what launches
        self._launch_form()

    def _launch_form(self) -> None:
        """The form's run at once, or a bell and the first bad field. A run whose check needs the
        doctor's report (a profiler; a GPU host: Backend.waits_for_doctor) is kept meanwhile, the
        check line saying what it waits for, and launches when the report (or its failure) comes."""
        self._launch_pending = False
        cfg = self._validate()
        if cfg is None:
            bad = next(iter(self.query(".number.-invalid")), None)
            if bad is not None:
                bad.focus()
            self.app.bell()
            return
        if self.backend.waits_for_doctor(cfg) and self.app.doctor_error is None:
            self._launch_pending = True
            self._validate()  # the check line: what the run waits for
            if not self.sized:  # a GPU's sizes, which a CPU trains for a quarter of an hour
                self._hint("checking the machine first: the run starts with its size preset in a moment")
            return
        self.launch(cfg)

    @background("launch")
    def launch(self, cfg: RunConfig) -> None:
        self.post_message(Launched(self.backend.launch(cfg).id))

    @on(Launched)
    def _launched(self, message: Launched) -> None:
        self.app.scan_live_runs(announce=False)  # type: ignore[attr-defined]
        self.app.open_run(message.run_id)  # type: ignore[attr-defined]


"""The Textual lab: one app factory for `tinylab` and the tests.

The app is a view over tinylab's engine (Backend): it launches, tails and analyses runs only
through the same functions the CLI uses. Five sections are Textual modes (each keeps its own
screen stack): Lab, Runs, Exercises, Kernels, Doctor; Run, Hotspots, Compare and exercise steps
are pushed on top (and Kernels, for one kernel, from Hotspots). Screens other than the Lab are imported when first opened, so the first paint pays for
neither pandas nor plotext (and nothing here imports torch).
"""

from __future__ import annotations

import time
import traceback
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from tinylab.core.errors import UserError
from tinylab.runs.record import RunRecord
from tinylab.service.doctor import DoctorReport
from tinylab.tui.backend import Backend
from tinylab.tui.fmt import safe
from tinylab.tui.screens.base import background


class LiveRunsScanned(Message):
    def __init__(self, live: list[RunRecord], announce: bool, store_note: str | None = None) -> None:
        super().__init__()
        self.live, self.announce, self.store_note = live, announce, store_note


class DoctorCollected(Message):
    def __init__(self, report: DoctorReport | None, error: str | None) -> None:
        super().__init__()
        self.report, self.error = report, error


def _lab() -> Screen:
    from tinylab.tui.screens.lab import LabScreen

    return LabScreen()


def _runs() -> Screen:
    from tinylab.tui.screens.runs import RunsScreen

    return RunsScreen()


def _exercises() -> Screen:
    from tinylab.tui.screens.exercises import ExercisesScreen

    return ExercisesScreen()


def _kernels() -> Screen:
    from tinylab.tui.screens.kernels import KernelsScreen

    return KernelsScreen()


def _doctor() -> Screen:
    from tinylab.tui.screens.doctor import DoctorScreen

    return DoctorScreen()


#: The doctor child imports torch; started this long after the first frame so it does not compete with it.
DOCTOR_DELAY_S = 1.0
#: How often the live runs are re-read while there are any (the Lab shows their progress).
LIVE_RESCAN_S = 5.0


class TinyLabApp(App):
    TITLE = "tinylab"
    CSS_PATH = "app.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    MODES = {"lab": _lab, "runs": _runs, "exercises": _exercises, "kernels": _kernels, "doctor": _doctor}
    DEFAULT_MODE = "lab"
    COMMAND_PALETTE_BINDING = "colon"
    #: Work on every screen. An 80-column footer holds a screen's own keys and `?` (help lists
    #: them all, and the Lab's footer shows these too: SECTION_KEYS).
    BINDINGS = [
        Binding("l", "section('lab')", "Lab", show=False, tooltip="the versions and the config form"),
        Binding("r", "section('runs')", "Runs", show=False, tooltip="the run store; mark two runs to compare"),
        Binding("x", "section('exercises')", "Exercises", show=False, tooltip="guided scenarios"),
        Binding("K", "section('kernels')", "Kernels", show=False, tooltip="the Triton kernels compiled for AMD and "
                "NVIDIA GPUs, no GPU needed: registers, LDS, occupancy, IR"),
        Binding("d", "section('doctor')", "Doctor", show=False, tooltip="environment and profiler availability"),
        Binding("w", "watch_live", "Watch live", show=False, tooltip="reattach to the newest running run"),
        Binding("question_mark,h", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit", show=False, tooltip="quit the lab; runs keep going"),
    ]

    #: The doctor report once collected (None until then); the Lab and Doctor screens watch it.
    doctor_report: var[DoctorReport | None] = var(None)
    doctor_error: var[str | None] = var(None)
    #: records of the runs that were running when last scanned.
    live_runs: var[list[RunRecord]] = var(list)

    def __init__(self, backend: Backend, *, animate: bool = True) -> None:
        super().__init__()
        self.backend = backend
        if not animate:
            self.animation_level = "none"

    # ------------------------------------------------------------------ start-up
    def on_mount(self) -> None:
        # after the first frame: on a 2-core machine these would otherwise delay it
        self.call_after_refresh(self.scan_live_runs)
        self.set_interval(LIVE_RESCAN_S, self._rescan_live)
        if self.backend.doctor_result is not None:
            self.doctor_report = self.backend.doctor_result
        else:
            self.set_timer(DOCTOR_DELAY_S, self.collect_doctor)

    def on_unmount(self) -> None:
        self.backend.close()

    @background("live-scan")
    def scan_live_runs(self, announce: bool = True) -> None:
        note = self.backend.store.exposure_note() if announce else None  # others may write into the store
        live = [record for record in self.backend.records() if record.status == "running"]
        self.post_message(LiveRunsScanned(live, announce, note))

    def _rescan_live(self) -> None:
        if self.live_runs:
            self.scan_live_runs(announce=False)

    @on(LiveRunsScanned)
    def _set_live(self, message: LiveRunsScanned) -> None:
        live = message.live
        self.live_runs = live
        if message.store_note:
            self.notify(message.store_note, title="Run store", severity="warning", timeout=15)
        if message.announce and live:
            newest = live[-1]
            more = f" (and {len(live) - 1} more: r lists them)" if len(live) > 1 else ""
            self.notify(f"{newest.id} ({newest.version}) is still running{more}. Press w to watch it.",
                        title="Live runs")

    @background("doctor")
    def collect_doctor(self) -> None:
        worker = get_current_worker()
        try:
            report = self.backend.doctor(lambda: worker.is_cancelled)
        except Exception as exc:  # a broken probe must not take the lab down; the screens say why
            if not worker.is_cancelled:
                self.post_message(DoctorCollected(None, _describe(exc)))
            return
        self.post_message(DoctorCollected(report, None))

    @on(DoctorCollected)
    def _doctor_collected(self, message: DoctorCollected) -> None:
        if message.report is not None:
            self.doctor_report = message.report
        else:
            self.doctor_error = message.error

    # -------------------------------------------------------------- navigation
    async def action_section(self, mode: str) -> None:
        """A section key always shows the section itself: its root screen, never the sub-screen
        (an old Run view, the last Compare) that was left on top of it."""
        if self.current_mode != mode:
            await self.switch_mode(mode)
        while len(self.screen_stack) > 1:
            await self.pop_screen()

    def action_watch_live(self) -> None:
        if self.live_runs:
            self.open_run(self.live_runs[-1].id)
        else:
            self.notify("No run is running. Launch one from the Lab (l, then enter).")

    def action_help(self) -> None:
        from tinylab.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def open_run(self, run_id: str, compare_to: str | None = None) -> None:
        """The Run view of `run_id`; with `compare_to` (run A of the try-it loop), Compare A/B opens
        when the run ends."""
        from tinylab.tui.screens.run import RunScreen

        self.push_screen(RunScreen(run_id, compare_to))

    def open_hotspots(self, run_id: str) -> None:
        from tinylab.tui.screens.hotspots import HotspotsScreen

        self.push_screen(HotspotsScreen(run_id))

    def open_kernels(self, config: Any = None, kernel: str | None = None, source: str = "") -> None:
        """The Kernels view on top of the current screen: `config`'s model (a RunConfig), with the
        kernel a profiler calls `kernel` selected."""
        from tinylab.tui.screens.kernels import KernelsScreen

        self.push_screen(KernelsScreen(config, kernel, source))

    def open_compare(self, a_id: str, b_id: str) -> None:
        from tinylab.tui.screens.compare import CompareScreen

        self.push_screen(CompareScreen(a_id, b_id))

    def open_exercise(self, scenario_id: str) -> None:
        from tinylab.tui.screens.exercises import StepScreen

        self.push_screen(StepScreen(scenario_id))

    # ------------------------------------------------------------------ errors
    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = False) -> None:
        """Every notification of the lab (a screen's notify lands here too) as literal text: they
        carry run ids, labels, error messages and paths, which are never markup (a `[/]` in one
        would raise a MarkupError). Line breaks stay; other control characters show as '?'."""
        message = "\n".join(safe(line) for line in str(message).split("\n"))
        super().notify(message, title=safe(title), severity=severity, timeout=timeout, markup=False)

    def report_error(self, error: BaseException | str, *, title: str = "Error") -> None:
        """The one place failures become visible: a notification, and the traceback in the log."""
        if isinstance(error, BaseException) and not isinstance(error, UserError):
            self.log.error("".join(traceback.format_exception(error)))
        self.notify(_describe(error), title=title, severity="error", timeout=10)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.report_error(event.worker.error)

    # --------------------------------------------------------- command palette
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every key-bound action of the app and of the current screen, plus Textual's own (less
        the ones this list already has under the same title, such as Quit)."""
        seen: set[str] = set()
        titles: set[str] = set()
        for node, binding in [(screen, b) for b in _bindings(screen)] + [(self, b) for b in _bindings(self)]:
            if not binding.description or binding.action in seen or binding.description.lower() in titles:
                continue
            if node.check_action(*_split_action(binding.action)) is False:
                continue
            seen.add(binding.action)
            titles.add(binding.description.lower())
            key = binding.key_display or binding.key.split(",")[0]
            yield SystemCommand(binding.description, f"key: {key}. {binding.tooltip}".strip(),
                                partial(self.run_action, binding.action, node))
        yield from (c for c in super().get_system_commands(screen) if c.title.lower() not in titles)


def _bindings(node: Any) -> list[Binding]:
    return [b for b in getattr(type(node), "BINDINGS", []) if isinstance(b, Binding)]


def _split_action(action: str) -> tuple[str, tuple[object, ...]]:
    from textual.actions import parse

    _, name, params = parse(action)
    return name, params


def _describe(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    if isinstance(error, UserError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def create_app(
    runs_dir: str | Path | None = None,
    *,
    clock: Callable[[], float] | None = None,
    doctor: DoctorReport | None = None,
    exercises_root: Path | None = None,
    poll_s: float = 0.3,
    animate: bool = True,
) -> TinyLabApp:
    """The app for a run store; tests pass a frozen clock, a fake doctor report and their scenarios."""
    backend = Backend(runs_dir, clock=clock or time.time, doctor_result=doctor, exercises_root=exercises_root,
                      poll_s=poll_s)
    return TinyLabApp(backend, animate=animate)


def run_app(runs_dir: str | Path | None = None) -> int:
    app = create_app(runs_dir)
    app.run()
    live = [record.id for record in app.backend.records() if record.status == "running"]
    if live:
        print(f"tinylab: {len(live)} run(s) still running ({', '.join(live)}); "
              "`tinylab` reattaches, `tinylab runs` lists them")
    return app.return_code or 0

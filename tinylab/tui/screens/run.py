"""Run: the live log, progress with ETA, and charts of one run; its summary or error at the end,
and, for a run profiled with the PyTorch profiler, the anatomy of a measured step (GPU busy/idle
lane, phases, diagnosis: Lab.timeline) with its memory by category over the step.

A thread worker polls the run's files (tinylab/tui/feed.py) and posts what is new; this screen
only appends to the log in batches and stores points, and a timer redraws the visible charts a
few times a second. Leaving the screen stops the polling, never the run: the run is a detached
process that the lab only reads.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, ProgressBar, Static
from textual.worker import get_current_worker

from tinylab.config import ConfigError, RunConfig
from tinylab.core.errors import UserError
from tinylab.core.events import PassEvent, StartEvent, StepEvent, TelemetryEvent
from tinylab.runs.record import RunRecord, key_config, short_id
from tinylab.service.results import Timeline
from tinylab.service.runs import LIVE
from tinylab.tui.feed import FeedUpdate, RunFeed
from tinylab.tui.fmt import duration, number, plain, safe
from tinylab.tui.screens.base import BaseScreen, Cancelled, background
from tinylab.tui.widgets.advice import AdvicePanel
from tinylab.tui.widgets.anatomy import AnatomyText
from tinylab.tui.widgets.charts import SeriesChart
from tinylab.tui.widgets.panes import Pane, Panes
from tinylab.tui.widgets.wraplog import WrapLog

LOG_LINES = 5000
#: The fewest cells of the settings the head shows cut (with its …) rather than none.
MIN_CUT = 8


class Fed(Message):
    def __init__(self, update: FeedUpdate) -> None:
        super().__init__()
        self.update = update


class StepLoaded(Message):
    """A profiled run's step anatomy (Lab.timeline), or why it failed."""

    def __init__(self, result: Timeline | None, error: str | None) -> None:
        super().__init__()
        self.result, self.error = result, error


class RunHead(Static):
    """The run's id, version, key settings and device, then its status, on one line at any width.

    Wrapped at 80 columns the head put the status dot on one line and its word on the next; so
    what does not fit gives way (the device's name, then the long id for the short one, then the
    end of the settings, then the settings and the device), never the status. The widget knows its
    width only once laid out, so it draws again whenever that changes; the whole head is its tooltip.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.parts: tuple[str, str, str, str, str | None, str] | None = None
        self._drawn: tuple | None = None

    def show(self, run_id: str, version: str, config: str, device: str, name: str | None, status: str) -> None:
        self.parts = (run_id, version, config, device, name, status)
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self.parts is None:
            return
        width = self.content_region.width or self.app.size.width - 2  # not laid out yet: the screen's
        if (self.parts, width) == self._drawn:  # a changed Static re-lays out the screen: skip no-ops
            return
        self._drawn = (self.parts, width)
        content = head_content(*self.parts, width=width)
        whole = head_content(*self.parts, width=None)
        self.update(content, layout=False)  # one line whatever the text: the height never changes
        self.tooltip = None if content.plain == whole.plain else whole


def head_content(run_id: str, version: str, config: str, device: str, name: str | None, status: str,
                 width: int | None) -> Content:
    """The Run head for `width` cells (None: whole): the first of ever shorter forms that fits."""
    run_id, version, config, device = safe(run_id), safe(version), safe(config), safe(device)
    named = f"{device} ({safe(name)})" if name else device
    state = f"● {safe(status)}"

    def assemble(id_: str, cfg: str, dev: str) -> Content:
        parts = [(f"{id_} ", "bold")] if id_ else []
        parts += [version, *(f"  {p}" for p in (cfg, dev) if p), "  ", (state, status_style(status))]
        return Content.assemble(*parts)

    short = short_id(run_id)
    forms = [(run_id, config, named), (run_id, config, device), (short, config, device)]
    if width is not None:  # the settings cut at their end: key_config puts the telling ones first
        room = width - assemble(short, "", device).cell_length - 2
        if MIN_CUT <= room < cell_len(config):  # a shorter stump reads as noise: then none
            cut = Text(config)
            cut.truncate(room, overflow="ellipsis")
            forms.append((short, cut.plain, device))
    forms += [(short, "", device), (short, "", ""), ("", "", "")]
    for form in forms:
        content = assemble(*form)
        if width is None or content.cell_length <= width:
            return content
    return content  # narrower than its version and status: the line is cut at the edge (CSS)


class RunScreen(BaseScreen):
    TITLE = "Run"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("c", "cancel_run", "Cancel", tooltip="asks first; the run gets SIGINT, SIGTERM, SIGKILL"),
        Binding("t", "next_pane", "Next panel"),
        Binding("g", "next_chart", "Chart", tooltip="the next chart (narrow terminals show one at a time)"),
        Binding("k", "hotspots", "Hotspots", tooltip="kernel table of this run's profile"),
        Binding("a", "advice", "Advice", tooltip="what to try next, from this run's own numbers (tinylab advise)"),
        Binding("b", "try_advice", "Try as B", tooltip="launch the highlighted advice item's action as run B "
                "against this run; Compare opens when B ends"),
    ]

    def __init__(self, run_id: str, compare_to: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.compare_to = compare_to  # run A, when this run was launched to try A's advice
        self.status = "running"
        self.record: RunRecord | None = None
        self.start: StartEvent | None = None
        self.steps: list[StepEvent] = []
        self.telemetry: list[TelemetryEvent] = []
        self.ended_at: float | None = None
        self.has_profile = False
        self.counter_pass: PassEvent | None = None
        self.pass_started: dict[int, float] = {}  # counter pass -> when it started
        self.chart_index = 0
        self.fed = False  # a feed update came: a run that had ended when opened picks its panel once

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield RunHead(id="run-head")
        with Horizontal(id="progress-row"):
            yield ProgressBar(total=1, show_eta=False, id="progress")
            yield Static(id="progress-text")
        yield Static(id="outcome")
        with Panes(id="run-panes"):
            yield Pane(WrapLog(max_lines=LOG_LINES, highlight=False, id="log"), title="Log", id="log-pane")
            with Pane(title="Charts", id="charts-pane"):
                with Container(id="charts"):
                    yield SeriesChart("samples/s", id="chart-speed")
                    yield SeriesChart("memory MB", empty="no device memory on a CPU run", id="chart-memory")
                    yield SeriesChart("loss", id="chart-loss")
                    yield SeriesChart("GPU telemetry", xlabel="seconds", empty="none recorded",
                                      id="chart-telemetry")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.sub_title = f"Run {self.run_id}"
        self._show_chart()
        self.follow()
        self.set_interval(0.25, self._redraw_charts)
        self.set_interval(1.0, self._tick)

    # ------------------------------------------------------------------ feed
    @background("feed")
    def follow(self) -> None:
        worker = get_current_worker()
        feed = RunFeed(self.backend.run(self.run_id), self.backend.masked)
        while not worker.is_cancelled:
            update = feed.poll()
            if update or update.ended:
                self.post_message(Fed(update))
            if update.ended:
                return
            deadline = time.monotonic() + self.backend.poll_s
            while time.monotonic() < deadline and not worker.is_cancelled:
                time.sleep(0.05)

    @on(Fed)
    def _fed(self, message: Fed) -> None:
        update = message.update
        keys_before = (self.status, self.has_profile)
        if update.lines:
            self.query_one("#log", WrapLog).write_lines(update.lines)
        if update.record is not None:
            self.record = update.record
            self.has_profile = self.has_profile or bool(update.record.profiles)
        self.steps += update.steps
        self.telemetry += update.telemetry
        self.start = update.start or self.start
        self.counter_pass = update.counter_pass or (update.record.counter_pass if update.record else None) \
            or self.counter_pass
        self.pass_started.update({p.number: p.time for p in update.passes if p.time is not None})
        self.has_profile = self.has_profile or update.profiled
        if update.steps or update.telemetry or update.start:
            self._update_series()
        self.status = update.status
        opened_ended, self.fed = update.ended and not self.fed, True
        if update.ended:
            self._show_outcome(pick_panel=opened_ended)
            if self.has_profile:
                self.load_step()
            self._add_advice()
            if self.compare_to:  # the try-it loop: B has ended, its verdict is in Compare
                self.app.open_compare(self.compare_to, self.run_id)  # type: ignore[attr-defined]
        self._show_head()
        self._show_progress()
        if (self.status, self.has_profile) != keys_before:  # the footer rebuilds on every refresh
            self.refresh_bindings()

    @background("step")
    def load_step(self) -> None:
        from tinylab.service.lab import NoTrace

        try:
            self.post_message(StepLoaded(self.backend.timeline(self.run_id), None))
        except NoTrace:
            return  # profiled by a tool without a PyTorch trace: no step panel
        except UserError as exc:
            self.post_message(StepLoaded(None, str(exc)))

    @on(StepLoaded)
    def _step_loaded(self, message: StepLoaded) -> None:
        result = message.result
        chart = SeriesChart("memory over the step (MB)", xlabel="ms into the step", id="step-memory")
        if result is not None:
            memory = result.memory
            if memory:
                # the total and the three largest categories at the peak: more lines are a tangle
                top = sorted(memory.peak_by_category_mb, key=lambda c: -memory.peak_by_category_mb[c])[:3]
                parts = [memory.series[c] for c in memory.peak_by_category_mb]
                series = {"total": [sum(vals) for vals in zip(*parts)], **{c: memory.series[c] for c in top}}
                chart.set_data(memory.series["ms"], series)
                chart.chart_title = (f"memory over step {result.shown_step} (MB), peak "
                                     f"{memory.peak_mb:,.1f} MB at {memory.peak_at_ms:.1f} ms")
        chart.set_class(result is None or not result.memory, "-empty")
        anatomy = AnatomyText(result if result is not None else f"No step anatomy: {message.error}", id="anatomy")
        pane = Pane(Container(VerticalScroll(anatomy, id="anatomy-box"), chart, id="step-body"),
                    title="Step", id="step-pane")
        self.query_one("#run-panes", Panes).add(pane)

    # ------------------------------------------------------------- rendering
    def _config(self) -> RunConfig | None:
        """The run's settings as it ran (its start event), else as launched; None when damaged."""
        return (RunConfig.read(self.start.config) if self.start else None) or (
            self.record.settings if self.record else None)

    def _show_head(self) -> None:
        cfg = self._config()
        start = self.start or (self.record.start if self.record else None)
        device = (start.device if start else None) or (cfg.device if cfg else "?")
        self.query_one("#run-head", RunHead).show(self.run_id, cfg.version if cfg else "?", key_config(cfg), device,
                                                  start.device_name if start else None, self.status)

    def _tick(self) -> None:
        if self.status == "running":
            self._show_progress()

    def _show_progress(self) -> None:
        total = cfg.num_steps if (cfg := self._config()) else None
        done = self.steps[-1].step + 1 if self.steps else 0
        started = (self.record.started if self.record else None) or (self.start.time if self.start else None)
        running = self.status == "running"
        now = self.backend.clock() if running else (self.ended_at or self.backend.clock())
        ms, statistic = self._ms_per_step()
        per_step = ms / 1000 if ms is not None else None
        # A counter-pass run shows its passes: the record's steps are pass 1's, so from pass 2 on
        # "step N/N" and its 100% would read as done while the tool still runs the program.
        counter = self.counter_pass if running else None
        bar = self.query_one("#progress", ProgressBar)
        if counter is not None and counter.planned:
            into = done / total if counter.number == 1 and total else 0.0
            bar.update(total=counter.planned, progress=counter.number - 1 + into)
        elif counter is not None and counter.number > 1:
            bar.update(total=None)  # how many passes remain is not known
        elif total:
            bar.update(total=total, progress=done)
        # (priority, text): what does not fit the line's width goes, the highest number first
        parts = []
        if counter is not None:  # the log says why there are passes
            parts.append((0, f"{counter.label} ({counter.tool})"))
        if counter is None or counter.number == 1:
            parts.append((1, f"step {done}/{total or '?'}"))
        if ms is not None:
            parts.append((3, f"{ms:,.1f} ms/step{statistic}"))
        eta = self._eta(done, total, per_step, started, now) if running else None
        if eta is not None:
            parts.append((2, f"ETA {duration(eta)}"))
        if started:
            parts.append((4, f"{'elapsed' if running else 'took'} {duration(now - started)}"))
        if running and not self.start:
            parts.append((2, "starting (loading torch and the model)"))
        widget = self.query_one("#progress-text", Static)
        width = widget.size.width or 80
        while len(parts) > 1 and len(" · ".join(t for _, t in parts)) > width:
            parts.remove(max(parts, key=lambda p: p[0]))
        widget.update(plain(" · ".join(t for _, t in parts)), layout=False)  # fixed size

    def _ms_per_step(self) -> tuple[float | None, str]:
        """The step time the summary reports, the median after warm-up: the summary's own once it is
        written, the median of the measured steps so far before; during warm-up, its recent steps'
        (said: " (warm-up)")."""
        summary = self.record.summary if self.record else None
        if summary is not None and summary.step_ms_median is not None:
            return summary.step_ms_median, ""
        measured = [s.step_ms for s in self.steps if not s.warmup and s.step_ms is not None]
        if measured:
            return statistics.median(measured), ""
        recent = [s.step_ms for s in self.steps[-10:] if s.step_ms is not None]
        return (statistics.median(recent), " (warm-up)") if recent else (None, "")

    def _eta(self, done: int, total: int | None, per_step: float | None, started: float | None,
             now: float) -> float | None:
        """Seconds left: the record's steps, then every counter pass still to come (None: unknown)."""
        counter = self.counter_pass
        if per_step is None or total is None:
            return None
        left = (total - done) * per_step if counter is None or counter.number == 1 else 0.0
        if counter is None:
            return left
        if not counter.planned:
            return None
        # a later pass: measured from the passes that ended, else its start-up and its steps
        times = sorted(self.pass_started.items())
        ended = [b - a for (n, a), (m, b) in zip(times, times[1:]) if n >= 2 and m == n + 1]
        if ended:
            per_pass = statistics.median(ended)
        else:
            startup = self.start.time - started if self.start and self.start.time and started else 0.0
            steps = counter.steps if counter.number > 1 and counter.steps else self._window_steps()
            per_pass = max(startup, 0.0) + (steps or 0) * per_step
        if counter.number > 1:
            into = now - self.pass_started.get(counter.number, now)
            left = max(per_pass - into, 0.0)
        return left + (counter.planned - counter.number) * per_pass

    def _window_steps(self) -> int | None:
        """Steps each later counter pass trains."""
        from tinylab.service.runs import window_steps

        try:
            return window_steps(RunConfig.from_dict(self._config()))
        except (ConfigError, TypeError, ValueError):
            return None

    def _update_series(self) -> None:
        xs = [s.step + 1 for s in self.steps]
        on_cpu = str(self.start.device if self.start else "").startswith("cpu")
        self.query_one("#chart-speed", SeriesChart).set_data(xs, {"samples/s": [s.samples_per_s for s in self.steps]})
        self.query_one("#chart-memory", SeriesChart).set_data(
            xs,
            {"allocated": [s.mem_alloc_mb for s in self.steps], "peak": [s.mem_peak_mb for s in self.steps]},
            empty="no device memory on a CPU run" if on_cpu else "not recorded",
        )
        self.query_one("#chart-loss", SeriesChart).set_data(xs, {"loss": [s.loss for s in self.steps]})
        # a chart that has nothing to show (memory on a CPU, telemetry not recorded) gives its space away
        self.query_one("#chart-memory").set_class(
            bool(self.steps) and all(s.mem_peak_mb is None for s in self.steps), "-empty")
        self.query_one("#chart-telemetry").set_class(bool(self.steps) and not self.telemetry, "-empty")
        self._show_chart()
        if self.telemetry:
            t0 = self.telemetry[0].time or 0.0
            ts = [round((t.time or t0) - t0, 1) for t in self.telemetry]
            self.query_one("#chart-telemetry", SeriesChart).set_data(ts, {
                "util %": [t.gpu_util_pct for t in self.telemetry],
                "power W": [t.power_w for t in self.telemetry],
                "mem GB": [_gb(t.mem_used_mb) for t in self.telemetry],
            })

    def _redraw_charts(self) -> None:
        panes = self.query_one("#run-panes", Panes)
        for pane in panes.panes:
            if panes.is_showing(pane):
                for chart in pane.query(SeriesChart):
                    if chart.dirty and chart.display:
                        chart.redraw()

    def _show_outcome(self, pick_panel: bool) -> None:
        """The outcome box and, for a run of several, its Ranks panel. `pick_panel`: the run had
        ended when the screen opened, so the panel that tells most is shown first; a run that ends
        under the learner leaves the panel they are on (it jumped from Log to Charts)."""
        record = self.record
        if record is None:
            return
        self.ended_at = record.ended
        widget = self.query_one("#outcome", Static)
        widget.set_class(True, "-shown")
        widget.set_class(self.status == "finished", "-finished")
        widget.set_class(self.status != "finished", "-failed")
        widget.update(outcome_text(record, self.status))
        panes = self.query_one("#run-panes", Panes)
        if record.ranks and not self.query("#ranks"):
            panes.add(Pane(ranks_table(record), title="Ranks", id="ranks-pane"))
        if not pick_panel:
            return
        if self.status == "failed":
            panes.show("log-pane")
        elif self.status == "finished" and record.ranks:  # what a run of several adds: each rank
            panes.show("ranks-pane")
        elif self.status == "finished" and self.steps:
            panes.show("charts-pane")

    def _add_advice(self) -> None:
        if self.query("#advice-pane"):
            return
        panel = AdvicePanel(id="advice")
        self.query_one("#run-panes", Panes).add(Pane(panel, title="Advice", id="advice-pane"))
        panel.load(self.run_id)

    # ---------------------------------------------------------------- actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "try_advice":
            panel = self.query("#advice")
            return bool(panel) and any(i.action.changes for i in panel.first().items or [])
        if action == "cancel_run":
            return self.status in LIVE
        if action == "next_chart":
            return self.screen.has_class("-narrow")
        if action == "hotspots":
            return True  # without a profile, the action says how to get one
        if action == "next_pane":
            return self.screen.has_class("-narrow")
        return True

    def action_next_pane(self) -> None:
        self.query_one("#run-panes", Panes).show_next()

    def action_next_chart(self) -> None:
        self.query_one("#run-panes", Panes).show("charts-pane")
        self.chart_index += 1
        self._show_chart()

    def _show_chart(self) -> None:
        """On a narrow terminal one chart shows at a time: the chart_index-th of those with data."""
        charts = [c for c in self.query("#charts SeriesChart") if not c.has_class("-empty")]
        current = charts[self.chart_index % len(charts)] if charts else None
        for chart in self.query("#charts SeriesChart"):
            chart.set_class(chart is current, "-current")

    def action_advice(self) -> None:
        if not self.query("#advice-pane"):
            self.notify("Advice comes when the run has ended: it reads the run's summary and profile.")
            return
        self.query_one("#run-panes", Panes).show("advice-pane")
        self.query_one("#advice-table").focus()

    def action_try_advice(self) -> None:
        self.query_one("#advice", AdvicePanel).try_selected()

    def action_hotspots(self) -> None:
        if not self.has_profile:
            self.notify("This run was not profiled: tick a profiler in the Lab (pytorch works on any "
                        "machine) and launch again for a kernel table.", severity="warning")
            return
        self.app.open_hotspots(self.run_id)  # type: ignore[attr-defined]

    def action_cancel_run(self) -> None:
        from tinylab.tui.screens.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"Cancelling {self.run_id}…")
                self.cancel_run()

        job = self.record.job if self.record else None
        how = f"Slurm cancels job {job.id} (scancel)" if job else "It gets SIGINT, then SIGTERM, then SIGKILL"
        self.app.push_screen(
            ConfirmScreen(f"Cancel run {self.run_id}?", f"{how}; its files stay in the run store.",
                          yes="Cancel run", no="Keep running"),
            answered,
        )

    @background("cancel")
    def cancel_run(self) -> None:
        self.post_message(Cancelled(self.run_id, self.backend.cancel(self.run_id)))

    @on(Cancelled)
    def _cancelled(self, message: Cancelled) -> None:
        self.notify(f"{message.run_id} {'cancelled' if message.stopped else 'had already stopped'}")


def _gb(mb: Any) -> float | None:
    return mb / 1024 if isinstance(mb, (int, float)) else None


def ranks_table(record: RunRecord) -> DataTable:
    """Each rank of a run of several, in the columns that fit 80: step median and p90, forward and
    backward, collectives; the slowest rank and weights out of sync said in words."""
    from tinylab.render.ranks import NUMERIC, rank_table

    keys = ("rank", "step", "p90", "fwd", "bwd", "weights", "comm")  # the weights before what a narrow cell cuts
    header, rows = rank_table(record, keys)
    table = DataTable(id="ranks", cursor_type="row", zebra_stripes=True)
    for key, label in zip(keys, header):
        table.add_column(label, key=key)
    for row in rows:
        table.add_row(*[Text(cell, justify="right") if key in NUMERIC else cell for key, cell in zip(keys, row)])
    return table


def status_style(status: str) -> str:
    return {"running": "bold $accent", "finished": "bold $success", "failed": "bold $error"}.get(status, "bold $warning")


def outcome_text(record: RunRecord, status: str) -> Text:
    """The end of a run in a few wrapped lines: its summary, or why it did not finish."""
    s, error = record.summary, record.error
    text = Text()
    if status == "finished" and s:
        peak = f"{s.text('peak_mem_mb')} MB" if s.peak_mem_mb is not None else "n/a (CPU)"
        mfu = f"{100 * s.mfu:.1f}%" if s.mfu is not None else "n/a"
        phases = "/".join(number(s.get(k), ".2f") for k in ("fwd_ms_median", "bwd_ms_median", "opt_ms_median"))
        text.append("✓ finished  ", style="bold")
        text.append(f"{number(s.samples_per_s)} samples/s", style="bold")
        parts = [
            f"{number(s.tokens_per_s, ',.0f')} tokens/s",
            f"step {number(s.step_ms_median, '.2f')} ms (p10 {number(s.step_ms_p10, '.2f')},"
            f" p90 {number(s.step_ms_p90, '.2f')})",
            f"fwd/bwd/opt {phases} ms",
            f"loss {number(s.initial_loss, '.4f')} → {number(s.final_loss, '.4f')}",
            f"peak mem {peak}",
            f"trained {s.params_trained}/{s.params_total} tensors",
            f"MFU {mfu}",
        ]
        text.append(" · " + " · ".join(parts))
        if record.ranks:
            from tinylab.render.ranks import ranks_caption

            text.append("\n" + ranks_caption(record))
        if s.partly_trained:
            text.append(f"\n! only {s.params_trained} of {s.params_total} parameter tensors trained: this speed is "
                        "not a real training step", style="bold")
        if record.busy:
            text.append(f"\n! busy machine: {record.busy}. These timings measure the contention, not the code: "
                        "the Lab keeps them out of the version's figure", style="bold")
        return text
    if status == "cancelled":  # its error event is the interrupt itself
        steps = record.steps_done
        text.append(f"■ cancelled after {steps} step{'s' if steps != 1 else ''}", style="bold")
    elif error:
        text.append(f"✗ {status}: {safe(error.type)}: {safe(error.message)}\n", style="bold")
        tail = [safe(line) for line in (error.traceback or "").rstrip().splitlines() if line.strip()][-3:]
        text.append("\n".join(tail), style="dim")
    elif status == "failed":
        code = record.exit.returncode if record.exit else None
        text.append(f"✗ failed with exit code {code}: see the log for why", style="bold")
    else:
        text.append(f"? {status}: the process is gone without a summary, an error or an exit record "
                    "(killed, or the machine restarted)", style="bold")
    return text

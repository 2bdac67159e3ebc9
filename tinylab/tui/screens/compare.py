"""Compare: two runs A/B, laid out from the Lab's Comparison (the CLI's numbers, tinylab.render.compare's rows).

`r` repeats both runs' configs, interleaved, until the verdict is settled or the budget is spent
(`tinylab compare A B --repeat auto`, through the same tinylab.service.repeat): a worker runs it
and posts each step; the table is the pooled comparison as each run ends; `r` again or escape
stops it (the run in flight is cancelled). `?` opens docs/statistics.md, which says how sure a
verdict is and why the repeats are interleaved.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static
from textual.worker import Worker, WorkerState, get_current_worker

from tinylab.service.repeat import DEFAULT_MAX_RUNS, Repeat, RepeatDone, budget_for, RepeatEnded, RepeatProgress, RepeatStarted
from tinylab.service.results import Comparison, KernelDiff
from tinylab.tui.fmt import plain, safe
from tinylab.tui.screens.base import BaseScreen, background
from tinylab.tui.widgets.advice import WholeTable
from tinylab.tui.widgets.charts import BarChart
from tinylab.tui.widgets.hanging import Hanging
from tinylab.tui.widgets.panes import Pane, Panes

#: Metrics drawn in the A/B bar chart, as the ratio B/A.
CHART_KEYS = ("samples_per_s", "step_ms_median", "fwd_ms_median", "bwd_ms_median", "opt_ms_median", "peak_mem_mb")


class Compared(Message):
    def __init__(self, result: Comparison) -> None:
        super().__init__()
        self.result = result


class AdviceChecked(Message):
    """Run A's advice checked against run B (tinylab.service.Lab.advice_verdict)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__()
        self.result = result


class RepeatProgressed(Message):
    """A step of the repeat (tinylab.service.repeat): a run started or ended, or the repeat done."""

    def __init__(self, event: RepeatProgress) -> None:
        super().__init__()
        self.event = event


#: The repeat line while none runs: the key, what it does (80 columns hold no more footer keys).
def repeat_hint(budget: int) -> str:
    return f"r: repeat both runs, interleaved, until sure (at most {budget} a side) · ?: how sure"


class CompareScreen(BaseScreen):
    TITLE = "Compare"
    AUTO_FOCUS = "#metrics"  # the table, not the box it scrolls in (which comes first)
    DEFAULT_CSS = "#cmp-repeat { height: auto; padding: 0 1; }"
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="while repeating: stop the repeat"),
        Binding("t", "next_pane", "Next panel"),
        Binding("s", "swap", "Swap A/B"),
        Binding("r", "repeat", "Repeat both, interleaved", show=False,  # the repeat line names it
                tooltip=f"run each side's config again, B A A B ..., until the samples/s 99% interval excludes 1 or "
                        f"lies inside ±5%, or {DEFAULT_MAX_RUNS} runs a side (more where the note asks for "
                        "more); r again (or esc) stops"),
        Binding("question_mark", "statistics", "How sure?", key_display="?",
                tooltip="how a verdict's interval is made, and why repeats are interleaved (docs/statistics.md)"),
        Binding("h", "app.help", "Help", show=False),  # `?` is the statistics page here
    ]

    def __init__(self, a_id: str, b_id: str) -> None:
        super().__init__()
        self.a_id, self.b_id = a_id, b_id
        self.more: tuple[list[str], list[str]] = ([], [])  # the repeats pooled in, a side each
        self.repeating: Worker | None = None
        self.stopping = False
        self.budget = DEFAULT_MAX_RUNS  # runs a side `r` goes up to (budget_for the comparison shown)

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield Static("Comparing…", id="cmp-head")
        yield Static(repeat_hint(self.budget), id="cmp-repeat")
        with Panes(id="cmp-panes"):
            # the notes (a busy machine's take several lines) scroll with the table, never cut at the
            # pane's edge: the table's page keys, and an arrow past its ends, scroll the box
            yield Pane(VerticalScroll(Static(id="cmp-scaling"),
                                      WholeTable(id="metrics", cursor_type="row", zebra_stripes=True),
                                      Static(id="cmp-notes"), id="metrics-box"), title="Metrics", id="metrics-pane")
            yield Pane(BarChart("B / A (1.00 = same)", id="cmp-chart"), title="Chart", id="chart-pane")
            # before Kernels: wide, it sits under the chart and Kernels under both (app.tcss)
            yield Pane(VerticalScroll(Static("Checking A's advice against B…", id="cmp-advice")), title="Advice",
                       id="advice-pane")
            with Pane(title="Kernels", id="kernels-pane"):
                yield DataTable(id="kernel-diff", cursor_type="row", zebra_stripes=True)
                yield VerticalScroll(Static(id="kernel-notes"), id="kernel-notes-box")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.sub_title = "Compare A/B"
        metrics = self.query_one("#metrics", DataTable)
        # Fixed widths: widths measured from content raced the layout (a squeezed table in snapshots).
        for label, width in (("metric", 17), ("A", 7), ("B", 7), ("B/A [interval]", 20), ("", 10)):
            metrics.add_column(Text(label, justify="left" if label in ("metric", "") else "right"), width=width)
        self.load()

    @background("compare")
    def load(self) -> None:
        more_a, more_b = self.more
        self.post_message(Compared(self.backend.compare(self.a_id, self.b_id, more_a=more_a, more_b=more_b)))
        self.post_message(AdviceChecked(self.backend.advice_verdict(self.a_id, self.b_id)))

    # ------------------------------------------------------------------ repeat
    def action_repeat(self) -> None:
        if self.repeating is not None:
            self._stop_repeat()
            return
        self.stopping = False
        self.repeating = self.repeat()
        self._repeat_line("repeat: checking that both configs can start here…")
        self.refresh_bindings()

    @background("repeat")
    def repeat(self) -> None:
        """`compare --repeat auto` with the default budget, until done or this worker is cancelled."""
        worker = get_current_worker()
        job = Repeat(self.backend, self.a_id, self.b_id, None, self.budget)
        for event in job.run(poll_s=self.backend.poll_s, stop=lambda: worker.is_cancelled):
            self.post_message(RepeatProgressed(event))

    def _stop_repeat(self) -> None:
        if self.repeating is not None and not self.stopping:
            self.stopping = True
            self.repeating.cancel()
            self._repeat_line("stopping: cancelling the run in flight…")

    @on(RepeatProgressed)
    def _repeat_progress(self, message: RepeatProgressed) -> None:
        event = message.event
        if isinstance(event, RepeatStarted):
            if not self.stopping:
                self._repeat_line(f"{event.line()} · r or esc stops")
            return
        comparison = event.comparison
        self.more = (list(comparison.pooled[0][1:]), list(comparison.pooled[1][1:]))
        self._show(comparison)
        if isinstance(event, RepeatEnded):
            if not self.stopping:
                self._repeat_line(event.line())
        elif isinstance(event, RepeatDone):
            runs = f"{len(comparison.pooled[0])} runs of A and {len(comparison.pooled[1])} of B pooled"
            self._repeat_line(f"{event.ended} ({runs}) · r repeats again · ?: how sure")
            self._repeat_ended()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A repeat that could not start (or broke) says why and is over."""
        super().on_worker_state_changed(event)
        if event.worker is self.repeating and event.state in (WorkerState.ERROR, WorkerState.SUCCESS):
            if event.state == WorkerState.ERROR:
                self._repeat_line(f"repeat stopped: {event.worker.error} · r tries again")
            self._repeat_ended()

    def _repeat_ended(self) -> None:
        self.repeating, self.stopping = None, False
        self.refresh_bindings()

    def _repeat_line(self, text: str) -> None:
        self.query_one("#cmp-repeat", Static).update(Text(safe(text)))

    def action_back(self) -> None:
        if self.repeating is not None:
            self._stop_repeat()
        else:
            self.app.pop_screen()

    def action_statistics(self) -> None:
        from tinylab.tui.screens.docs import DocScreen

        self.app.push_screen(DocScreen("statistics.md"))

    @on(AdviceChecked)
    def _show_advice(self, message: AdviceChecked) -> None:
        """The try-it loop's answer: for the item B tried, the predicted bound beside the measured
        change, held or not, and why; shown first when B was launched to try A's advice."""
        from tinylab.render.advice import verdict_lines

        result = message.result
        width = max(40, self.query_one("#cmp-advice", Static).size.width or 76)
        self.query_one("#cmp-advice", Static).update(Text("\n".join(verdict_lines(result, width))))
        if result.get("tried"):  # after the panes' own mount, which a fast answer can beat
            self.call_after_refresh(self.query_one("#cmp-panes", Panes).show, "advice-pane")

    @on(Compared)
    def _compared(self, message: Compared) -> None:
        self._show(message.result)
        self.budget = budget_for(message.result)
        if self.repeating is None:
            self._repeat_line(repeat_hint(self.budget))

    def _show(self, result: Comparison) -> None:
        from tinylab.render.compare import metric_rows, noise_note, scaling_rows, show_value

        head = Text()
        for side, info in (("A", result.a), ("B", result.b)):
            head.append(f"{side} ", style="bold reverse")
            head.append(f" {safe(info.id)} ", style="bold")
            status = f"{info.status} (damaged)" if info.problem else info.status
            head.append(safe(f"{info.version} {info.key_config} {info.device or ''} {status}") + "\n")
        diff = [d for d in result.config_diff if d.key != "label"]
        if diff:
            head.append("differs: " + safe(", ".join(f"{d.key} {show_value(d.a)}→{show_value(d.b)}" for d in diff)),
                        style="dim")  # "fault missing-init→-", never Python's None
        head.rstrip()  # no blank line under B when the configs do not differ: 24 rows hold little
        self.query_one("#cmp-head", Static).update(head)
        scaling = self.query_one("#cmp-scaling", Static)
        scaled = scaling_rows(result)
        scaling.set_class(scaled is not None, "-shown")
        if scaled is not None:
            scaling.update(scaling_table(*scaled))

        table = self.query_one("#metrics", DataTable)
        table.clear()
        for label, va, vb, ratio, verdict in metric_rows(result):
            table.add_row(Text(label), Text(va, justify="right"), Text(vb, justify="right"),
                          Text(ratio, justify="right"), Text(verdict, style="bold" if verdict else ""))
        said = [*result.notes, *filter(None, [noise_note(result)])]
        notes = Hanging()  # a note's wrapped lines under its text, not under its bullet
        for note in said:
            notes.add("• ", safe(note))
        self.query_one("#cmp-notes", Static).update(notes)  # no blank line under them: rows are few

        ratios = {m.key: m for m in result.metrics if m.key in CHART_KEYS and m.ratio is not None}
        labels = [ratios[k].label for k in CHART_KEYS if k in ratios]
        self.query_one("#cmp-chart", BarChart).set_bars(
            labels, [round(ratios[k].ratio, 3) for k in CHART_KEYS if k in ratios],
            empty="no metric is known for both runs")
        self._show_kernels(result.kernel_diff)

    def _show_kernels(self, diff: KernelDiff | None) -> None:
        from tinylab.render.compare import kernel_sections
        from tinylab.service.kernels import short_name

        table = self.query_one("#kernel-diff", DataTable)
        table.clear(columns=True)
        notes = Text()
        if diff is None:
            table.display = False
            notes.append("No kernel diff: both runs need a kernel table (launch them with a profiler, "
                         "e.g. pytorch).")
            self.query_one("#kernel-notes", Static).update(notes)
            return
        (title, header, rows), *others = kernel_sections(diff, short_name)
        table.border_title = title
        for label in header[1:] + header[:1]:  # the long kernel name goes last
            table.add_column(label)
        for kernel, *values in rows:
            # kernel names come from the profilers' files: never markup
            table.add_row(*[Text(v, justify="right") for v in values[:-1]], plain(values[-1]), plain(kernel))
        for title, _, listed in others:
            notes.append(f"{title}: ", style="bold")
            notes.append(safe(", ".join(f"{name} ({total}, {calls} calls)" for name, total, calls in listed) or "none"))
            notes.append("\n")
        notes.rstrip()  # no blank last line: the wide box is as high as what it shows
        self.query_one("#kernel-notes", Static).update(notes)

    def action_next_pane(self) -> None:
        self.query_one("#cmp-panes", Panes).show_next()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_pane":
            return self.screen.has_class("-narrow")
        if action == "swap" and self.repeating is not None:
            return None  # shown, disabled: the repeat's sides stay as it started them
        return True

    def action_swap(self) -> None:
        self.a_id, self.b_id = self.b_id, self.a_id
        self.more = self.more[::-1]
        self.load()


def scaling_table(header: list[str], rows: list[list[str]], line: str) -> Text:
    """Runs of different world sizes: each run's ranks, samples/s in all and per rank, collectives,
    and the scaling efficiency (tinylab.render.compare.scaling_rows)."""
    from tinylab.render.compare import text_table

    head, *body = text_table(header, rows, right=(1, 2, 3, 4, 5))
    return Text.assemble((head[1:], "bold"), "\n", "\n".join(r[1:] for r in body), "\n", (line, "bold"))

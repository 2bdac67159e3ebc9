"""Kernels: every Triton kernel of v3 and v4 compiled for AMD and NVIDIA GPUs on this machine, no GPU
needed (the kernel anatomy, through the Lab as `tinylab kernels` uses it): per kernel the registers,
LDS, spills and occupancy on one target, one IR stage of the selected kernel, and a sweep of one
of its parameters as a chart.

Compiling is slow the first time (a minute or two on a laptop's CPU, then read back from the same
cache `tinylab kernels` fills), so the compiles run in workers that post their progress and their
results as messages; a newer request (another precision, kernel or parameter) makes the older
one's answer stale, and its worker stops at its next progress report. The model is the workshop's
(from Hotspots, the profiled run's), and `p` changes its precision.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Log, Static
from textual.worker import get_current_worker

from tinylab.config import PRECISIONS, RunConfig
from tinylab.core.errors import UserError
from tinylab.service.kernels import STAGES, TARGETS, kernel_config, tunable
from tinylab.tui.screens.base import BaseScreen, background
from tinylab.tui.widgets.charts import SweepChart
from tinylab.tui.widgets.panes import Pane, Panes

#: The target shown first: MI300X, where the lab's users are.
FIRST_TARGET = "gfx942"
#: A stage the new target's vendor lacks becomes the same level of the other vendor's code.
SAME_LEVEL = {"amdgcn": "ptx", "ptx": "amdgcn", "sass": "amdgcn"}
#: Table columns: header, width (fixed: widths measured from content move with the rows' arrival).
COLUMNS = (("kernel", 18), ("registers", 13), ("LDS", 6), ("spills", 7), ("occ", 5), ("limit", 11))


class Stopped(Exception):
    """A worker's request was replaced by a newer one: its compiles are no longer wanted."""


class Compiling(Message):
    """Progress of the compiles behind request `key` (the anatomy's Progress)."""

    def __init__(self, key: tuple, progress: Any) -> None:
        super().__init__()
        self.key, self.progress = key, progress


class Studied(Message):
    """Every kernel compiled for every target (an Anatomy), or why not."""

    def __init__(self, key: tuple, anatomy: Any, error: str | None) -> None:
        super().__init__()
        self.key, self.anatomy, self.error = key, anatomy, error


class StageLoaded(Message):
    def __init__(self, key: tuple, text: str | None, error: str | None) -> None:
        super().__init__()
        self.key, self.text, self.error = key, text, error


class Swept(Message):
    """The points of one sweep (the anatomy's SweepPoint, one a value), or why not."""

    def __init__(self, key: tuple, points: list | None, error: str | None) -> None:
        super().__init__()
        self.key, self.points, self.error = key, points, error


def _stop_check(key_now, key: tuple):
    """For a worker's request `key`: a function that raises Stopped once the worker is cancelled
    or the screen wants something else (key_now() != key), called at each progress report."""
    worker = get_current_worker()

    def check() -> None:
        if worker.is_cancelled or key_now() != key:
            raise Stopped

    return check


class KernelsScreen(BaseScreen):
    TITLE = "Kernels"
    AUTO_FOCUS = "#kern-table"
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="the screen this one was opened from (the Lab from the section)"),
        Binding("g", "next_target", "Target", tooltip="the next GPU: gfx90a, gfx942, gfx950 (AMD), sm_80, sm_90 (NVIDIA)"),
        *[Binding(str(i), f"target('{name}')", f"Target {name}", show=False, tooltip=f"{t.gpu} ({t.vendor.upper()})")
          for i, (name, t) in enumerate(TARGETS.items(), 1)],
        Binding("p", "precision", "Precision", tooltip="fp32, bf16, fp16: the dtypes and configs the step launches"),
        Binding("i", "next_stage", "IR stage", tooltip="the selected kernel's ttir, ttgir, llir, then amdgcn (AMD) "
                "or ptx and sass (NVIDIA)"),
        Binding("s", "sweep", "Sweep", tooltip="recompile the selected kernel over its next parameter (block sizes, "
                "num_warps, ...) and chart what moves"),
        Binding("t", "next_pane", "Next panel", tooltip="narrow: the next panel (kernels, sweep, IR)"),
    ]

    def __init__(self, config: RunConfig | None = None, kernel: str | None = None, source: str = "") -> None:
        super().__init__()
        self.config = config or kernel_config()
        #: where the model comes from, for the head line ("the workshop's model", "run X's model")
        self.source = source or "the workshop's model"
        self.wanted = kernel  # a profiler's name for the kernel to select once compiled
        self.target = FIRST_TARGET
        self.stage = STAGES["amd"][0]
        self.anatomy: Any = None
        self.selected: str | None = None  # the highlighted variant's name
        self.sweep_key: tuple | None = None  # the sweep the chart shows or waits for
        self.progress_text = ""
        self.error: str | None = None

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield Static(id="kern-head")
        yield Static(id="kern-targets")
        with Panes(id="kern-panes"):
            with Pane(title="Kernels", id="kern-table-pane"):
                yield DataTable(id="kern-table", cursor_type="row", zebra_stripes=True)
                yield Static(id="kern-detail")
            with Pane(title="Sweep", id="kern-sweep-pane"):
                yield SweepChart(id="kern-chart")
                yield Static(id="kern-points")
            with Pane(title="IR", id="kern-ir-pane"):
                yield Static(id="kern-ir-title")
                yield Log(id="kern-ir", auto_scroll=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        super().on_mount()
        table = self.query_one("#kern-table", DataTable)
        for label, width in COLUMNS:
            table.add_column(label, key=label, width=width)
        self.query_one("#kern-chart", SweepChart).clear_sweep("s sweeps a parameter of the selected kernel")
        self._show_head()
        self._show_targets()
        self.study(self.study_key, self.config)

    # ------------------------------------------------------------------- keys
    @property
    def study_key(self) -> tuple:
        return (self.config.precision,)

    @property
    def kernel_key(self) -> tuple:
        """The selected kernel on the target at this precision: what a stage or a sweep is of."""
        return (*self.study_key, self.selected, self.target)

    @property
    def stage_key(self) -> tuple:
        return (*self.kernel_key, self.stage)

    # --------------------------------------------------------------- workers
    def _answer(self, key: tuple, key_now: Callable[[], tuple], answer: type[Studied | StageLoaded | Swept],
                compute: Callable[[Callable[[Any], None]], Any]) -> None:
        """A worker's body: post answer(key, compute(progress), None), or answer(key, None, why) when
        it cannot; each progress report as Compiling(key, ...), and nothing once the request is
        stale (key_now() != key) or the worker cancelled: progress raises Stopped then."""
        check = _stop_check(key_now, key)

        def progress(p) -> None:
            check()
            self.post_message(Compiling(key, p))

        try:
            result = compute(progress)
        except Stopped:
            return
        except UserError as exc:
            self.post_message(answer(key, None, str(exc)))
            return
        self.post_message(answer(key, result, None))

    @background("kernels")
    def study(self, key: tuple, config: RunConfig) -> None:
        self._answer(key, lambda: self.study_key, Studied,
                     lambda progress: self.backend.kernel_study(config, progress=progress).anatomy)

    @background("stage")
    def load_stage(self, key: tuple, anatomy: Any) -> None:
        *_, selected, target, stage = key
        self._answer(key, lambda: self.stage_key, StageLoaded,
                     lambda progress: self.backend.kernel_stage(anatomy, selected, target, stage))

    @background("sweep")
    def run_sweep(self, key: tuple, anatomy: Any) -> None:
        *_, selected, target, param = key
        self._answer(key, lambda: self.sweep_key, Swept,
                     lambda progress: self.backend.kernel_sweep(anatomy, selected, target, param, progress=progress))

    # -------------------------------------------------------------- messages
    @on(Compiling)
    def _compiling(self, message: Compiling) -> None:
        p = message.progress
        text = f"{p.phase} {p.done}/{p.total} · {p.what}"
        if message.key == self.study_key and self.anatomy is None:
            self.progress_text = text
            self._show_head()
        elif message.key == self.sweep_key:
            self.query_one("#kern-points", Static).update(Text(f"{text}\n(each value is compiled once, then cached)"))

    @on(Studied)
    def _studied(self, message: Studied) -> None:
        if message.key != self.study_key:
            return
        self.anatomy, self.error, self.progress_text = message.anatomy, message.error, ""
        if self.anatomy is not None:
            known = [t.name for t in self.anatomy.targets]
            if self.target not in known and known:
                self.target = FIRST_TARGET if FIRST_TARGET in known else known[0]
                self._fit_stage()
            if self.wanted is not None:
                self._select_wanted()
        self._show_head()
        self._show_targets()
        self._show_table()

    def _select_wanted(self) -> None:
        found = self.anatomy.profiled(self.wanted)
        if found:
            self.selected = found[0].name
        else:
            self.notify(f"{self.wanted} is not one of v3's and v4's Triton kernels: all of them are listed.",
                        severity="warning")
        self.wanted = None

    @on(StageLoaded)
    def _stage_loaded(self, message: StageLoaded) -> None:
        if message.key != self.stage_key:
            return
        log = self.query_one("#kern-ir", Log)
        log.clear()
        log.write_lines((message.text or f"no {self.stage}: {message.error}").splitlines())
        log.scroll_home(animate=False)

    @on(Swept)
    def _swept(self, message: Swept) -> None:
        if message.key != self.sweep_key:
            return
        chart = self.query_one("#kern-chart", SweepChart)
        points_text = self.query_one("#kern-points", Static)
        param = message.key[-1]
        if message.points is None:
            chart.clear_sweep(f"{self.selected} {param}: no sweep")
            points_text.update(Text(message.error or ""))
            return
        points = message.points
        labels = [f"{p.value}{'*' if p.shipped else ''}" for p in points]
        regs = [p.report.lane_registers for p in points]
        occ = [p.report.occupancy.value if p.report.ok else None for p in points]
        unit = points[0].report.occupancy.unit if points[0].report.ok else "occupancy"
        chart.set_sweep(labels, ("registers", regs), (f"{unit} (right)", occ),
                        f"{self.selected} on {self.target}: {param}")
        points_text.update(_points_table(param, points))

    # ---------------------------------------------------------------- display
    def _show_head(self) -> None:
        c = self.config
        text = Text()
        text.append("v3/v4 kernels", style="bold")
        text.append(f" · {self.source}: hidden {c.hidden_dim}, {c.num_heads} heads ({c.num_kv_heads} kv), "
                    f"seq {c.seq_len}, batch {c.batch_size}, ")
        text.append(c.precision + (" tf32" if c.tf32 and c.precision == "fp32" else ""), style="bold")
        target = TARGETS[self.target]
        text.append(f"\n{self.target} = {target.gpu}, occ in {'waves/SIMD of 8' if target.amd else 'warps/SM of 64'}")
        if self.error:
            text.append(f"\ncannot compile: {self.error}", style="bold")
        elif self.anatomy is None:
            text.append(" · ")
            text.append(self.progress_text or "starting the compiles…", style="bold")
            text.append(" (a minute or two the first time; cached after)", style="dim")
        self.query_one("#kern-head", Static).update(text)

    def _show_targets(self) -> None:
        skipped = self.anatomy.skipped if self.anatomy is not None else {}
        strip = Text("target ")
        for i, name in enumerate(TARGETS, 1):
            if name == self.target:
                strip.append(f" {i} ▸{name} ", style="reverse bold")
            elif name in skipped:
                strip.append(f" {i} {name} (unknown to this Triton) ", style="dim")
            else:
                strip.append(f" {i} {name} ")
        strip.append(" g next", style="dim")
        self.query_one("#kern-targets", Static).update(strip)

    def _show_table(self) -> None:
        table = self.query_one("#kern-table", DataTable)
        table.clear()
        if self.anatomy is None:
            return
        rows = [v for v in self.anatomy.variants if self.target in v.reports]
        for v in rows:
            report = v.reports[self.target]
            if not report.ok:
                cells = [Text("failed", style="bold reverse"), "", "", "", ""]
            else:
                regs, lds, _, spills, occ, limit = report.cells()
                cells = [regs, Text(lds, justify="right"),
                         Text(spills, justify="right", style="bold reverse" if report.spilled else ""),
                         Text(occ, justify="right"), limit]
            table.add_row(v.name, *cells, key=v.name)
        names = [v.name for v in rows]
        if self.selected not in names:
            self.selected = names[0] if names else None
        if self.selected is not None:
            table.move_cursor(row=names.index(self.selected), animate=False)
        self._selection_changed()

    @on(DataTable.RowHighlighted, "#kern-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        name = event.row_key.value if event.row_key is not None else None
        if name is not None and name != self.selected:
            self.selected = name
            self._selection_changed()

    def _selection_changed(self) -> None:
        """A new variant, target or precision: its detail, its stage; the sweep starts over."""
        self._show_detail()
        if self.anatomy is not None and self.selected is not None:
            stages = STAGES[TARGETS[self.target].vendor]
            title = Text.assemble((f"{self.stage} of {self.selected} on {self.target}", "bold"), "  i: ",
                                  *[(f"[{s}]" if s == self.stage else s) + " " for s in stages])
            self.query_one("#kern-ir-title", Static).update(title)
            self.load_stage(self.stage_key, self.anatomy)
        else:
            self.query_one("#kern-ir-title", Static).update("")
        if self.sweep_key is None or self.sweep_key[:-1] != self.kernel_key:
            self.sweep_key = None
            self.query_one("#kern-chart", SweepChart).clear_sweep(
                f"s sweeps a parameter of {self.selected or 'the selected kernel'}")
            self.query_one("#kern-points", Static).update("")

    def _show_detail(self) -> None:
        detail = self.query_one("#kern-detail", Static)
        if self.anatomy is None or self.selected is None:
            detail.update("")
            return
        v = self.anatomy.variant(self.selected)
        report, launch = v.reports[self.target], v.launches[self.target]
        text = Text()
        text.append(f"{v.name} on {self.target}", style="bold")
        if report.ok:
            text.append(f": scratch {report.scratch} B, occupancy {report.occupancy.value} {report.occupancy.unit}, "
                        f"limit {report.occupancy.limiter}")
        else:
            text.append(f" failed to compile: {report.error}")
        config = " ".join(f"{k}={val}" for k, val in launch.config.items())
        text.append(f"\ngrid {'x'.join(map(str, launch.grid))} {config}")
        if v.summary:
            text.append(f"\n{v.summary}", style="dim")
        text.append(f"\nlaunched by {', '.join(v.scenarios)}", style="dim")
        detail.update(text)

    def _fit_stage(self) -> None:
        stages = STAGES[TARGETS[self.target].vendor]
        if self.stage not in stages:
            self.stage = SAME_LEVEL[self.stage]

    # ---------------------------------------------------------------- actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_pane":
            return self.screen.has_class("-narrow")
        return True  # the others say what is missing (the compiles, a kernel) when they cannot act

    async def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        else:
            await self.app.action_section("lab")  # type: ignore[attr-defined]

    def action_next_target(self) -> None:
        names = list(TARGETS)
        self.action_target(names[(names.index(self.target) + 1) % len(names)])

    def action_target(self, name: str) -> None:
        if self.anatomy is not None and name in self.anatomy.skipped:
            self.notify(f"The installed Triton cannot compile for {name}: {self.anatomy.skipped[name]}",
                        severity="warning")
            return
        self.target = name
        self._fit_stage()
        self._show_head()
        self._show_targets()
        self._show_table()

    def action_precision(self) -> None:
        self.config = dataclasses.replace(self.config, precision=PRECISIONS[(PRECISIONS.index(self.config.precision) + 1)
                                                                              % len(PRECISIONS)])
        self.anatomy, self.error, self.progress_text = None, None, ""
        self.query_one("#kern-table", DataTable).clear()
        self.query_one("#kern-ir", Log).clear()
        self._selection_changed()
        self._show_head()
        self.study(self.study_key, self.config)

    def _ready(self) -> bool:
        if self.anatomy is None or self.selected is None:
            self.notify("The kernels are still compiling: their table comes first." if self.error is None
                        else f"Nothing compiled: {self.error}", severity="warning")
            return False
        return True

    def action_next_stage(self) -> None:
        if not self._ready():
            return
        stages = STAGES[TARGETS[self.target].vendor]
        self.stage = stages[(stages.index(self.stage) + 1) % len(stages)]
        self.query_one("#kern-panes", Panes).show("kern-ir-pane")
        self._selection_changed()

    def action_sweep(self) -> None:
        if not self._ready():
            return
        v = self.anatomy.variant(self.selected)
        if not v.reports[self.target].ok:
            self.notify(f"{v.name} does not compile for {self.target}: nothing to sweep.", severity="warning")
            return
        params = tunable(v.launches[self.target], TARGETS[self.target])
        shown = self.sweep_key[-1] if self.sweep_key is not None else None  # always of this kernel and target
        param = params[(params.index(shown) + 1) % len(params)] if shown in params else params[0]
        self.sweep_key = (*self.kernel_key, param)
        self.query_one("#kern-chart", SweepChart).clear_sweep(f"{self.selected} on {self.target}: {param}")
        self.query_one("#kern-points", Static).update(Text(f"compiling {param} at each value…"))
        self.query_one("#kern-panes", Panes).show("kern-sweep-pane")
        self.run_sweep(self.sweep_key, self.anatomy)

    def action_next_pane(self) -> None:
        self.query_one("#kern-panes", Panes).show_next()


def _points_table(param: str, points: list) -> Text:
    """The sweep's exact values, one column a value (* the one the step launches), narrow enough
    for the wide layout's side panel."""
    rows = [["value"], ["regs"], ["LDS"], ["spills"], ["occ"]]
    for p in points:
        rows[0].append(f"{p.value}{'*' if p.shipped else ''}")
        if p.report.ok:
            regs, lds, _, spills, occ, _ = p.report.cells()
            for row, cell in zip(rows[1:], (regs.split()[0], lds, spills, occ)):
                row.append(cell)
        else:
            for row in rows[1:]:
                row.append("failed")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    text = Text.assemble((param, "bold"), " (* the value the step launches)\n")
    for j, row in enumerate(rows):
        text.append(" ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
                    + "\n", style="bold" if j == 0 else "")
    failed = [p for p in points if not p.report.ok]
    if failed:
        text.append(f"{param}={failed[0].value} failed: {failed[0].report.error}"[:200], style="dim")
    return text

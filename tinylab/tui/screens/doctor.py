"""Doctor: the environment and which profilers work here, with the fix for each missing one."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static

from tinylab.service.doctor import DoctorReport
from tinylab.tui.fmt import plain
from tinylab.tui.widgets.runtable import WIDE
from tinylab.tui.screens.base import HOME, BaseScreen


def _pairs(data: Any) -> str:
    if isinstance(data, dict):
        return ", ".join(f"{k} {v}" for k, v in data.items() if v not in (None, "", [], {}))
    return str(data)


#: The profiler table's columns: key -> header.
COLUMNS = {"name": "profiler", "kind": "kind", "status": "status", "version": "version", "reason": "why not"}


class DoctorScreen(BaseScreen):
    TITLE = "Doctor"
    BINDINGS = [HOME]

    def compose(self) -> ComposeResult:
        yield Header(icon="▲")
        yield Static("Checking the environment and the profilers…", id="env")
        yield DataTable(id="profilers", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="fix-box"):
            yield Static(id="fix")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.watch(self.app, "doctor_report", self._show)
        self.watch(self.app, "doctor_error", self._show_error)

    def _show_error(self, error: str | None) -> None:
        if error is not None:
            self.query_one("#env", Static).update(Text.assemble(("doctor failed: ", "bold"), error))

    def _show(self, report: DoctorReport | None) -> None:
        if report is None:
            return
        env = Text()
        env.append("os ", style="bold")
        env.append(f"{_pairs(report.os)}   ")
        env.append("python ", style="bold")
        env.append(f"{_pairs(report.python)}\n")
        env.append("gpu ", style="bold")
        env.append(_pairs(asdict(report.gpu)) if report.gpu else "none visible: CPU runs only (GPU profilers are unavailable)")
        if report.rocm:
            env.append("\nrocm ", style="bold")
            env.append(f"{report.rocm.release or 'not found'} · torch's HIP {report.rocm.torch_hip or '-'}")
        env.append("\npackages ", style="bold")
        env.append(", ".join(f"{k} {v or 'missing'}" for k, v in report.packages.items()))
        for warning in report.warnings:
            env.append("\n! warning ", style="bold")
            env.append(warning)
        self.query_one("#env", Static).update(env)
        table = self.query_one("#profilers", DataTable)
        table.clear(columns=True)
        rows = {name: {  # versions and reasons quote the tools' own output: never markup
            "name": plain(name, "bold"),
            "kind": plain(entry.kind or ""),
            "status": Text("✓ available" if entry.available else "✗ missing", style="bold"),
            "version": plain(" ".join(str(v) for v in (entry.version, entry.release) if v)),
            "reason": plain(entry.reason or ""),
        } for name, entry in report.profilers.items()}
        # An 80-column table cut the reasons ("deepspeed is not installe"): narrow, the kind goes (the
        # fix below names it) and the reason takes the rest of the row, wrapped.
        keys = [k for k in COLUMNS if not (self.app.size.width < WIDE and k == "kind")]
        widths = {k: max([len(COLUMNS[k]), *(r[k].cell_len for r in rows.values())]) for k in keys if k != "reason"}
        widths["reason"] = max(12, self.size.width - sum(w + 2 for w in widths.values()) - 4)
        for key in keys:
            table.add_column(COLUMNS[key], key=key, width=widths[key])
        for name, row in rows.items():
            table.add_row(*(row[k] for k in keys), key=name, height=None)
        self._show_fix()

    @on(DataTable.RowHighlighted, "#profilers")
    def _show_fix(self) -> None:
        report: DoctorReport | None = self.app.doctor_report  # type: ignore[attr-defined]
        table = self.query_one("#profilers", DataTable)
        if not report or not table.row_count:
            return
        name = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        entry = report.profilers.get(name)
        text = Text()
        if entry is not None and entry.available:
            text.append(f"{name} is available", style="bold")
            text.append(f" ({entry.kind}): tick it in the Lab's profile row.")
        else:
            kind = (entry.kind if entry else None) or "?"
            text.append(f"{name} ({kind}): {(entry.reason if entry else None) or 'not available'}\n", style="bold")
            text.append(f"fix: {(entry.fix if entry else None) or '-'}")
        missing = [(n, e) for n, e in report.profilers.items() if not e.available and n != name]
        if missing:
            text.append("\n\nother missing profilers\n", style="bold")
            for other, e in missing:
                text.append(f"{other}: ", style="bold")
                text.append(f"{e.fix or '-'}\n")
        self.query_one("#fix", Static).update(text)

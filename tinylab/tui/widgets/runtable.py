"""The run store as a table, updated in place by run id (a rescan never rebuilds it)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from tinylab.runs.record import RunRecord, short_id
from tinylab.tui.fmt import age, number, plain

COLUMNS = (("mark", " "), ("run", "run"), ("age", "age"), ("status", "status"), ("version", "ver"),
           ("sps", "samples/s"), ("peak", "peak MB"), ("loss", "loss"), ("config", "config"))
#: Below this many columns the table leaves these out, so that the config is not cut off.
WIDE = 120
NARROW_HIDDEN = ("peak", "loss")
STATUS_STYLE = {"queued": "italic", "running": "bold", "failed": "bold reverse", "lost": "dim", "cancelled": "dim"}


def cells(record: RunRecord, mark: str, now: float) -> dict[str, Text]:
    """The row of one run; every cell a Text, because a str cell is parsed as markup and labels,
    ids and problems come from the run's files (a label `[/]` must show as `[/]`)."""
    row = record.row()
    label = f" [{row['label']}]" if row["label"] else ""
    return {
        "mark": Text(mark, style="bold reverse") if mark else Text(""),
        "run": plain(short_id(row["id"])),
        "age": Text(age(row["started"], now)),
        "status": Text("damaged", style="bold") if row["problem"] else
        Text("busy", style="italic") if row["busy"] and row["status"] == "finished" else  # timings of a busy machine
        plain(row["status"], STATUS_STYLE.get(row["status"], "")),
        "version": plain(row["version"] or "?"),
        "sps": Text(number(row["samples_per_s"]), justify="right"),
        "peak": Text(number(row["peak_mem_mb"], ",.0f"), justify="right"),
        "loss": Text(number(row["final_loss"], ".3f"), justify="right"),
        "config": plain(f"! {row['problem']}" if row["problem"] else row["config"] + label),
    }


class RunTable(DataTable):
    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.records: dict[str, RunRecord] = {}
        self._cells: dict[str, dict[str, Text]] = {}

    def on_mount(self) -> None:
        narrow = self.app.size.width < WIDE
        for key, label in COLUMNS:
            if not (narrow and key in NARROW_HIDDEN):
                self.add_column(label, key=key)

    def show(self, records: list[RunRecord], marks: dict[str, str], now: float) -> None:
        """Newest first; rows are added, updated cell by cell, or removed by run id."""
        wanted = {record.id: record for record in reversed(records)}
        for run_id in [k for k in self._cells if k not in wanted]:
            self.remove_row(run_id)
            del self._cells[run_id]
        added = False
        for run_id, record in wanted.items():
            new = {k: v for k, v in cells(record, marks.get(run_id, ""), now).items() if k in self.columns}
            old = self._cells.get(run_id)
            if old is None:
                self.add_row(*new.values(), key=run_id)
                added = True
            else:
                for column, value in new.items():
                    if str(value) != str(old[column]):
                        self.update_cell(run_id, column, value)
            self._cells[run_id] = new
        if added and len(wanted) > 1:
            rank = {short_id(run_id): i for i, run_id in enumerate(wanted)}
            self.sort("run", key=lambda sid: rank.get(str(sid), len(rank)))
        self.records = wanted

    @property
    def current_id(self) -> str | None:
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

"""Small kernel tables and run folders holding them, for the analysis and hotspots tests."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd

from tinylab.core.kernel_table import build_table
from tinylab.core.eventlog import EventWriter
from tinylab.core.events import ProfileEvent
from tinylab.profilers.base import CollectResult, write_kernel_table
from tinylab.runs.store import mark_run


def table_of(rows: list[tuple[str, int, float]]) -> pd.DataFrame:
    return build_table(pd.DataFrame(rows, columns=["name", "calls", "total_ns"]))


def run_with_events(tmp_path: Path, events: list[dict]) -> Path:
    """A marked run folder with an empty config and these records, written as they are (each stamped
    with a time)."""
    run = tmp_path / "runs" / "20260101-000000-abcd"
    run.mkdir(parents=True)
    mark_run(run)
    (run / "config.json").write_text("{}")
    (run / "events.jsonl").write_text("".join(json.dumps({"event": e["event"], "time": time.time(), **e}) + "\n"
                                              for e in events))
    return run


RANK0 = [("aten::mm", 10, 600.0), ("c10d::allreduce_", 2, 100.0), ("aten::add", 4, 300.0)]
RANK1 = [("aten::mm", 10, 900.0), ("c10d::allreduce_", 2, 50.0), ("aten::add", 4, 250.0)]


def ranked_run(tmp_path, tables=(RANK0, RANK1), tool="pytorch"):
    """A run of len(tables) ranks, each rank's table recorded by its own profile event."""
    run = run_with_events(tmp_path, [])
    with EventWriter(run / "events.jsonl") as ev:
        for rank, rows in reversed(list(enumerate(tables))):  # ranks finish in any order
            ev.emit(ProfileEvent(**write_kernel_table(run, tool, CollectResult({}, table_of(rows), None,
                                                                               "pytorch-operators"), rank)))
    return run

"""Follow a run from its files alone, so any terminal can attach at any time."""

from __future__ import annotations

import sys
import time

from tinylab.runs.store import TERMINAL, Run

#: Exit codes of `follow`, `run` and `train` by final status.
EXIT_CODES = {"finished": 0, "failed": 1, "lost": 3, "cancelled": 130}


def follow(run: Run, out=sys.stdout, poll_s: float = 0.2, from_start: bool = True) -> str:
    """Copy output.log to `out` as it grows until the run ends; return the final status."""
    offset = 0 if from_start else _size(run)
    while True:
        status = run.status()
        offset = _copy_new(run, offset, out)
        if status in TERMINAL:
            _copy_new(run, offset, out)
            return status
        time.sleep(poll_s)


def _size(run: Run) -> int:
    try:
        return run.output_log.stat().st_size
    except FileNotFoundError:
        return 0


def _copy_new(run: Run, offset: int, out) -> int:
    try:
        with open(run.output_log, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return offset
    if data:
        out.write(data.decode("utf-8", errors="replace"))
        out.flush()
    return offset + len(data)

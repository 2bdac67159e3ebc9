"""Follow a run from its files alone, so any terminal can attach at any time."""

from __future__ import annotations

import re
import sys
import time
from typing import Callable, Iterator, TextIO

from tinylab.core.safeio import open_regular
from tinylab.runs.record import printable
from tinylab.runs.store import TERMINAL, Run

#: At most this much output is copied a poll (a run that floods its log is followed in steps).
READ_CHUNK = 4 << 20

#: Exit codes of `follow`, `run` and `train` by final status.
EXIT_CODES = {"finished": 0, "failed": 1, "lost": 3, "cancelled": 130, "dry-run": 4}

#: Lines of a run's log that say nothing to a learner, left out wherever the log is shown (output.log
#: keeps them): libkineto, the PyTorch profiler's engine, prints a line at each profiler start and
#: stop ("USDT:2026-11-28 03:33:08 2507:2507 SyncActivityProfilerHandler.cpp:52] profiler_start")
#: on stderr, and no setting of torch 2.13 silences it.
NOISE = re.compile(r"USDT:[^\n]*\] profiler_(?:start|stop)\r?")


def noise(line: str) -> bool:
    """Whether a line of a run's log is NOISE."""
    return NOISE.fullmatch(line) is not None


def watch(run: Run, out: TextIO | None = None, poll_s: float = 0.2, from_start: bool = True,
          stop: Callable[[], bool] = lambda: False) -> Iterator[str]:
    """The run's status once a poll until it ends (or `stop()`), copying output.log's new text to `out`."""
    offset = 0 if from_start else _size(run)
    while True:
        status = run.status()
        offset = _copy_new(run, offset, out)
        if status in TERMINAL:
            _copy_new(run, offset, out, whole=True)
        yield status
        if status in TERMINAL or stop():
            return
        time.sleep(poll_s)


def follow(run: Run, out: TextIO | None = sys.stdout, poll_s: float = 0.2, from_start: bool = True) -> str:
    """Copy output.log to `out` as it grows until the run ends; return the final status."""
    status = "running"
    for status in watch(run, out, poll_s, from_start):
        pass
    return status


def _size(run: Run) -> int:
    """The log's size, not through a link (one that loops raised ELOOP here; _copy_new refuses a
    link in one line)."""
    try:
        return run.output_log.lstat().st_size
    except OSError:
        return 0


def _copy_new(run: Run, offset: int, out: TextIO | None, whole: bool = False) -> int:
    """Copy the log's complete new lines (and, `whole`, its unfinished last one) less NOISE;
    return the offset copied up to."""
    if out is None:
        return offset
    try:
        with open_regular(run.output_log) as fh:  # a link (to /etc/shadow, say) or a FIFO: UserError
            fh.seek(offset)
            data = fh.read(READ_CHUNK)
    except FileNotFoundError:
        return offset
    if not whole and len(data) < READ_CHUNK:  # a line still being written waits for its end ("\r" too)
        data = data[: max(data.rfind(b"\n"), data.rfind(b"\r")) + 1]
    if data:
        text = data.decode("utf-8", errors="replace")
        out.write("".join(_shown(line) for line in text.splitlines(keepends=True) if not noise(line.rstrip("\n"))))
        out.flush()
    return offset + len(data)


def _shown(line: str) -> str:
    """A log line as a terminal may show it: its line ending kept, every other control character
    (the escape sequences of a binary or hostile output.log: clear the screen, retitle the
    window) as '?' (printable), a tab kept."""
    body = line.rstrip("\r\n")
    return "\t".join(printable(part) for part in body.split("\t")) + line[len(body):]

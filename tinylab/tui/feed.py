"""Incremental readers behind the Run screen: output.log in chunks and events.jsonl, plus status.

Called from a thread worker; nothing here touches Textual. The log reader works on raw chunks,
not readline: a progress bar that only ever writes "\\r" produces one "line" of megabytes, and a
run that floods its log must cost the UI a bounded amount per poll however far behind it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from tinylab.core.eventlog import EVENTS_FILE, EventTail
from tinylab.core.events import PassEvent, StartEvent, StepEvent, TelemetryEvent
from tinylab.runs.record import RunRecord, mask_config
from tinylab.core.safeio import UnsafeFile, open_regular
from tinylab.service.runs import TERMINAL, Run, noise

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_NEWLINE = re.compile(rb"\r\n|\r|\n")


def clean_line(text: str, limit: int) -> str:
    """A log line as a terminal widget can show it: no escape sequences or control bytes, capped."""
    text = _CONTROL.sub("", _ANSI.sub("", text)).expandtabs(4)
    if len(text) > limit:
        return f"{text[:limit]} …(+{len(text) - limit:,} chars)"
    return text


@dataclass
class LogTail:
    """New lines of a growing text file, at most `backlog` bytes behind its end.

    On the first poll, and whenever the reader falls more than `backlog` behind (a flood), the
    skipped part is replaced by one marker line, so each poll reads a bounded amount.
    """

    path: Path
    backlog: int = 256 * 1024
    max_line: int = 64 * 1024
    line_limit: int = 2000
    offset: int = 0
    refused: bool = False
    _partial: bytes = b""

    def poll(self) -> list[str]:
        if self.refused:
            return []
        try:
            with open_regular(self.path) as fh:
                size = fh.seek(0, 2)
                if size < self.offset:  # truncated or replaced: start over
                    self.offset, self._partial = 0, b""
                lines: list[str] = []
                if size - self.offset > self.backlog:
                    skipped = size - self.backlog - self.offset
                    lines.append(f"… {skipped / 2**20:,.1f} MB of earlier output skipped (full log: {self.path})")
                    self.offset, self._partial = size - self.backlog, b""
                    fh.seek(self.offset)
                    fh.readline()  # resume at a line start
                    self.offset = fh.tell()
                fh.seek(self.offset)
                data = fh.read(size - self.offset)
        except FileNotFoundError:
            return []
        except UnsafeFile as exc:  # said once: the run's log is not shown, the rest of the view is
            self.refused = True
            return [f"(not shown: {exc})"]
        self.offset += len(data)
        return lines + self._split(data)

    def _split(self, data: bytes) -> list[str]:
        buf = self._partial + data
        pieces = _NEWLINE.split(buf)
        rest = pieces.pop()
        if buf.endswith(b"\r") and pieces:  # "\r" may be the first half of a "\r\n" still to come
            rest = pieces.pop() + b"\r"
        if len(rest) > self.max_line:
            pieces.append(rest)
            rest = b""
        self._partial = rest
        lines = (p.decode("utf-8", errors="replace") for p in pieces)
        return [clean_line(line, self.line_limit) for line in lines if not noise(line)]

    def flush(self) -> list[str]:
        """The unterminated last line, once the writer is gone."""
        rest, self._partial = self._partial.rstrip(b"\r"), b""
        return [clean_line(rest.decode("utf-8", errors="replace"), self.line_limit)] if rest else []


@dataclass
class FeedUpdate:
    """What is new in a run since the last poll, typed; the first and the final update carry its record."""

    steps: list[StepEvent] = field(default_factory=list)
    telemetry: list[TelemetryEvent] = field(default_factory=list)
    start: StartEvent | None = None
    profiled: bool = False  # a profile event arrived
    passes: list[PassEvent] = field(default_factory=list)  # a counter-pass profiler started the program again
    lines: list[str] = field(default_factory=list)
    status: str = "running"
    record: RunRecord | None = None

    def __bool__(self) -> bool:
        return bool(self.steps or self.telemetry or self.start or self.profiled or self.lines or self.record
                    or self.passes)

    @property
    def counter_pass(self) -> PassEvent | None:
        """The latest counter pass among the new events."""
        return self.passes[-1] if self.passes else None

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL


class RunFeed:
    """What changed in one run since the last poll; the first and the final update carry its record.

    `mask` is how the learner may see the run's record (tinylab.service.lab.Lab.masked): what it
    hides of the config is hidden in the start event's config too."""

    def __init__(self, run: Run, mask: Callable[[RunRecord], RunRecord] = lambda record: record):
        self.run = run
        self.mask = mask
        self.hidden: frozenset[str] = frozenset()
        self.events = EventTail(run.dir / EVENTS_FILE)
        self.log = LogTail(run.output_log)
        self.first = True

    def poll(self) -> FeedUpdate:
        alive = self.run.is_alive()  # checked first: once it is gone, every write is on disk
        record = None
        if self.first or not alive:  # before the events: what it masks applies to their start event
            record = self.mask(self.run.record())
            self.hidden = record.hidden
        update = FeedUpdate(lines=self.log.poll())
        for event in self.events.poll():
            kind = event.get("event")
            if kind == "step":
                update.steps.append(StepEvent.from_event(event))
            elif kind == "telemetry" and event.get("rank") in (None, 0):  # the chart follows rank 0's GPU
                update.telemetry.append(TelemetryEvent.from_event(event))
            elif kind == "start":
                start = StartEvent.from_event(event)
                update.start = replace(start, config=mask_config(start.config, self.hidden))
            elif kind == "profile":
                update.profiled = True
            elif kind == "pass":
                update.passes.append(PassEvent.from_event(event))
        if not alive:
            update.lines += self.log.flush()
        if record is not None:
            update.record = record
            update.status = record.status if not alive else "running"
            self.first = False
        return update

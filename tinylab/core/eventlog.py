"""events.jsonl itself: the writer, and readers bounded in time and memory however long the log.

What a line holds is tinylab/core/events.py's (the schema); this module is how lines reach the
file and come back: one write() a line, a full disk's last words, a huge log read at its ends, a
live log followed a poll at a time.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from tinylab.core.events import Event, StepEvent, encode, well_typed
from tinylab.core.safeio import FULL_DISK, UnsafeFile, loads_json, open_append, open_regular, release_space

EVENTS_FILE = "events.jsonl"

#: The events a run writes last: on a full disk they may use the run folder's reserve.
LAST_WORDS = ("error", "exit")


class EventWriter:
    """Appends events with one write() each, so concurrent writers never interleave a line.

    On a full disk an ordinary event raises (the run must stop); its last words (an error, the
    exit) release the run folder's reserve and are written after a newline that ends whatever
    fragment the failed write left, so the run still says why it ended.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = open_append(self.path)  # never through a planted link; read: see _after_fragment

    def emit(self, event: Event) -> dict[str, Any]:
        """Append one event (stamped now unless it has its own time); return the record written."""
        record = encode(event, time.time())
        line = (json.dumps(record, default=_jsonable, allow_nan=False) + "\n").encode("utf-8")
        if event.kind not in LAST_WORDS:
            self._write(line)
            return record
        try:
            self._write(self._after_fragment(line))
        except OSError as exc:
            if exc.errno not in FULL_DISK or not release_space(self.path.parent):
                raise
            self._write(self._after_fragment(line))
        return record

    def _write(self, data: bytes) -> None:
        while data:
            data = data[os.write(self._fd, data):]

    def _after_fragment(self, line: bytes) -> bytes:
        """The line, after a newline when a failed write left the file's last line unfinished."""
        size = os.fstat(self._fd).st_size
        return line if size == 0 or os.pread(self._fd, 1, size - 1) == b"\n" else b"\n" + line

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "EventWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def clean_float(value: float | None) -> float | None:
    """NaN/inf are not JSON: store them as null."""
    if value is None:
        return None
    value = float(value)
    return value if value == value and value not in (float("inf"), float("-inf")) else None


#: Up to this size events.jsonl is read whole; past it readers that need only the run's start and
#: end (listing, show, compare, status) read its head and tail: a 400 MB log lists in milliseconds.
FULL_READ_LIMIT = 8 << 20
HEAD_BYTES = 256 << 10
TAIL_BYTES = 4 << 20


@dataclass
class EventLog:
    """Parsed events plus what could not be parsed (and what was not read, for a huge log)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    corrupt_lines: list[int] = field(default_factory=list)
    partial_tail: bool = False
    offset: int = 0
    skipped_bytes: int = 0  # the middle of a huge log, not read
    corrupt_unnumbered: int = 0  # corrupt lines in the tail of a huge log (their numbers are unknown)
    problem: str | None = None  # why the file could not be read at all (a link, a FIFO ...)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    def last(self, kind: str) -> dict[str, Any] | None:
        for e in reversed(self.events):
            if e.get("event") == kind:
                return e
        return None


def parse_lines(data: bytes, first_line_no: int = 1) -> tuple[list[dict[str, Any]], list[int], int]:
    """Parse complete lines of `data`; return events, corrupt line numbers, bytes consumed.

    A trailing fragment without a newline is left unconsumed (it may still be being written).
    """
    events: list[dict[str, Any]] = []
    corrupt: list[int] = []
    end = data.rfind(b"\n") + 1
    for i, raw in enumerate(data[:end].splitlines()):
        if not raw.strip():
            continue
        try:
            obj = loads_json(raw)  # depth and integer size bounded: 5,000 brackets are a corrupt line
        except (ValueError, UnicodeDecodeError):
            corrupt.append(first_line_no + i)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("event"), str) and well_typed(obj):
            events.append(obj)
        else:
            corrupt.append(first_line_no + i)
    return events, corrupt, end


def read_events(path: str | os.PathLike[str]) -> EventLog:
    """An events file: whole up to FULL_READ_LIMIT, else its head and tail; a missing file is an
    empty log, and one that is a link, a FIFO or a device an empty log with its `problem`."""
    try:
        fh = open_regular(path)
    except FileNotFoundError:
        return EventLog()
    except (UnsafeFile, OSError) as exc:
        return EventLog(problem=str(exc) if isinstance(exc, UnsafeFile) else f"{path}: {exc.strerror or exc}")
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size <= FULL_READ_LIMIT:
            data = fh.read(FULL_READ_LIMIT)
            events, corrupt, end = parse_lines(data)
            return EventLog(events=events, corrupt_lines=corrupt, partial_tail=end < len(data), offset=end)
        head = fh.read(HEAD_BYTES)
        head = head[: head.rfind(b"\n") + 1]
        fh.seek(size - TAIL_BYTES)
        tail = fh.read(TAIL_BYTES)
    cut = tail.find(b"\n") + 1  # the tail starts inside a line: drop that fragment
    head_events, head_corrupt, _ = parse_lines(head)
    tail_events, tail_corrupt, end = parse_lines(tail[cut:])
    return EventLog(events=head_events + tail_events, corrupt_lines=head_corrupt, partial_tail=end < len(tail) - cut,
                    offset=size - TAIL_BYTES + cut + end, skipped_bytes=size - TAIL_BYTES + cut - len(head),
                    corrupt_unnumbered=len(tail_corrupt))


#: The longest line sample_steps parses: a step line is a few hundred bytes; a longer one is no
#: step tinylab wrote, and a 4 GB "line" without a newline was gathered whole (1.24 GB, over 60 s).
STEP_LINE_LIMIT = 64 << 10
#: The most of events.jsonl sample_steps reads: its first and its last half of this past it (a run
#: of a million steps writes about 300 MB), so a huge log charts in seconds, a gap in the middle.
SAMPLE_LIMIT = 512 << 20
CHUNK = 8 << 20


def sample_steps(path: str | os.PathLike[str], max_points: int = 2000) -> list[StepEvent]:
    """Step events of a whole run, every k-th one past `max_points` (charts need no more), in
    bounded memory and time: the file is read in chunks (at most SAMPLE_LIMIT of it), lines longer
    than STEP_LINE_LIMIT are skipped unread, and only the kept lines are parsed. The first and the
    last step are always kept."""
    marker = b'"event": "step"'  # how EventWriter writes a step line (its first key)
    try:
        fh = open_regular(path)
    except (FileNotFoundError, UnsafeFile, OSError):
        return []
    with fh:
        size = os.fstat(fh.fileno()).st_size
        half = SAMPLE_LIMIT // 2
        spans = [(0, size)] if size <= SAMPLE_LIMIT else [(0, half), (size - half, size)]
        total = sum(1 for _ in _lines_with(fh, spans, marker))
        stride = max(1, -(-total // max_points))
        steps: list[StepEvent] = []
        for index, raw in enumerate(_lines_with(fh, spans, marker)):
            if index % stride == 0 or index == total - 1:
                steps += _step(raw)
    return steps


def _lines_with(fh: Any, spans: list[tuple[int, int]], marker: bytes) -> Iterator[bytes]:
    """The complete lines of the file's byte spans that hold `marker`, none longer than
    STEP_LINE_LIMIT: a longer one is dropped as it is read, never gathered. A span that starts
    inside a line starts at its end."""
    for start, end in spans:
        fh.seek(start)
        rest: bytes | None = b"" if start == 0 else None  # None: inside a line that is dropped
        left = end - start
        while left > 0:
            chunk = fh.read(min(CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            *complete, last = chunk.split(b"\n")
            if complete:
                first = None if rest is None else rest + complete[0]
                for raw in ([first] if first is not None else []) + complete[1:]:
                    if marker in raw and len(raw) <= STEP_LINE_LIMIT:
                        yield raw
                rest = last
            elif rest is not None:
                rest += last
            if rest is not None and len(rest) > STEP_LINE_LIMIT:
                rest = None


def _step(raw: bytes) -> list[StepEvent]:
    events, _, _ = parse_lines(raw + b"\n")
    return [StepEvent.from_event(e) for e in events if e.get("event") == "step"]


class EventTail:
    """Incremental reader: each poll() returns the events appended since the last one.

    A log already past FULL_READ_LIMIT on the first poll is read from its head (the start event)
    and its last TAIL_BYTES, like read_events: a live view needs the recent steps, not every one.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.offset = 0
        self.line_no = 1
        self.corrupt_lines: list[int] = []

    def poll(self) -> list[dict[str, Any]]:
        try:
            with open_regular(self.path) as fh:
                size = os.fstat(fh.fileno()).st_size
                head: list[dict[str, Any]] = []
                if self.offset == 0 and size > FULL_READ_LIMIT:
                    data = fh.read(HEAD_BYTES)
                    head = parse_lines(data[: data.rfind(b"\n") + 1])[0]
                    fh.seek(size - TAIL_BYTES)
                    skip = fh.readline()
                    self.offset, self.line_no = size - TAIL_BYTES + len(skip), 0  # line numbers unknown from here
                fh.seek(self.offset)
                data = fh.read(max(0, size - self.offset))
        except (FileNotFoundError, UnsafeFile):
            return []
        events, corrupt, end = parse_lines(data, self.line_no)
        self.offset += end
        if self.line_no:
            self.line_no += data[:end].count(b"\n")
            self.corrupt_lines.extend(corrupt)
        return head + events


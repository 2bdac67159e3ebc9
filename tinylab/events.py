"""The events.jsonl schema shared by the trainer (writer) and every reader.

One JSON object per line, each with an "event" key:

start     config, device, device_name, torch, triton, python, pid, params_total, param_tensors,
          model_flops_per_step, time
step      step, loss, step_ms, fwd_ms, bwd_ms, opt_ms (null when not separable, e.g. graph
          replay), samples_per_s, tokens_per_s, mem_alloc_mb, mem_peak_mb (null on CPU), warmup
summary   samples_per_s (median after warm-up), tokens_per_s, step_ms_median, step_ms_p10,
          step_ms_p90, fwd_ms_median, bwd_ms_median, opt_ms_median, peak_mem_mb,
          initial_loss, final_loss, params_trained, params_total, model_flops_per_step, mfu,
          steps, measured_steps
profile   tool, artifacts {name: path relative to the run dir}, kernel_table (path or null), note
telemetry time, gpu_util_pct, mem_used_mb, power_w, sm_clock_mhz (any may be null)
error     type, message, traceback
exit      returncode, signal (written by the supervisor after the trainer ends)

Readers must tolerate a partly written last line and corrupt records: they are skipped and
counted, never fatal. A record that parses but breaks FIELD_TYPES (a hand edit, a damaged line
that is still JSON) is corrupt too, so readers can compute with those fields without guarding.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

EVENTS_FILE = "events.jsonl"
KINDS = ("start", "step", "summary", "profile", "telemetry", "error", "exit")

_NUM = (int, float, type(None))
_STR = (str, type(None))
#: kind -> field -> (allowed types, required): the fields readers format or compute with.
FIELD_TYPES: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "start": {"config": ((dict,), False), "pid": ((int,), False)},
    "step": {
        "step": ((int,), True),
        "loss": (_NUM, True),
        **{k: (_NUM, False) for k in ("step_ms", "fwd_ms", "bwd_ms", "opt_ms", "samples_per_s",
                                       "tokens_per_s", "mem_alloc_mb", "mem_peak_mb")},
    },
    "summary": {k: (_NUM, False) for k in (
        "samples_per_s", "tokens_per_s", "step_ms_median", "step_ms_p10", "step_ms_p90", "fwd_ms_median",
        "bwd_ms_median", "opt_ms_median", "peak_mem_mb", "initial_loss", "final_loss", "params_trained",
        "params_total", "model_flops_per_step", "mfu", "steps", "measured_steps")},
    "profile": {"artifacts": ((dict, type(None)), False), "kernel_table": (_STR, False)},
    "error": {"type": (_STR, False), "message": (_STR, False), "traceback": (_STR, False)},
    "exit": {"returncode": ((int,), True), "signal": (_STR, False)},
}


class EventWriter:
    """Appends events with one write() each, so concurrent writers never interleave a line."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, kind: str, **fields: Any) -> dict[str, Any]:
        record = {"event": kind, "time": time.time(), **fields}
        line = json.dumps(record, default=_jsonable, allow_nan=False) + "\n"
        os.write(self._fd, line.encode("utf-8"))
        return record

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


@dataclass
class EventLog:
    """Parsed events plus what could not be parsed."""

    events: list[dict[str, Any]] = field(default_factory=list)
    corrupt_lines: list[int] = field(default_factory=list)
    partial_tail: bool = False
    offset: int = 0

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
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            corrupt.append(first_line_no + i)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("event"), str) and _well_typed(obj):
            events.append(obj)
        else:
            corrupt.append(first_line_no + i)
    return events, corrupt, end


def _well_typed(record: dict[str, Any]) -> bool:
    if not isinstance(record.get("time", 0.0), (int, float)):  # every writer stamps it
        return False
    for name, (types, required) in FIELD_TYPES.get(record["event"], {}).items():
        if name in record:
            if not isinstance(record[name], types):
                return False
        elif required:
            return False
    return True


def read_events(path: str | os.PathLike[str]) -> EventLog:
    """Read a whole events file; a missing file is an empty log."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return EventLog()
    events, corrupt, end = parse_lines(data)
    return EventLog(events=events, corrupt_lines=corrupt, partial_tail=end < len(data), offset=end)


class EventTail:
    """Incremental reader: each poll() returns the events appended since the last one."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.offset = 0
        self.line_no = 1
        self.corrupt_lines: list[int] = []

    def poll(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        events, corrupt, end = parse_lines(data, self.line_no)
        self.offset += end
        self.line_no += data[:end].count(b"\n")
        self.corrupt_lines.extend(corrupt)
        return events


def iter_events(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    yield from read_events(path).events

"""Triton's profiler, proton: its `.hatchet` tree (JSON).

The file is a list: the tree's root node, then (when any kernel ran) the devices. A node is
{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}; its metrics are its own
(exclusive), as proton writes them. A kernel's node carries "time (ns)", "count" and its
"device_id"; a Triton kernel's node also carries the "flops" and "bytes" its launch metadata
gave (kernels.work, through the kernels' `launch_metadata`). Nodes above the
kernels are scopes: tinylab's are the phases forward, backward and optimizer. Under the
instrumentation backend a kernel's children are the regions its code marks
(kernels._utils.enter_region), each with the "cycles" its warps spent there, and no kernel time.

Which backend measured and which Triton wrote the file are not in it: tinylab's proton hook
writes them beside it (SESSION, read here when present). Launches made while launch metadata was
computed sit under `__proton_launch_metadata` and are not the program's: they are left out.
"""

from __future__ import annotations

import re

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from tinylab.analysis.formats._base import FormatError, Head, Parsed, join, json_number, read_text
from tinylab.core.kernel_table import build_table
from tinylab.core.profile_files import SESSION
from tinylab.core.errors import UserError
from tinylab.core.safeio import is_plain_file, read_bounded

#: The scopes tinylab's trainer opens around a step's phases.
PHASES = ("forward", "backward", "optimizer")
METADATA_SCOPE = "__proton_launch_metadata"
#: A tree deeper or larger than this is not one proton wrote for a training run.
MAX_DEPTH = 200
MAX_NODES = 2_000_000
SESSION_LIMIT = 64 << 10


@dataclass
class Hatchet:
    """What a proton tree says: per kernel (name) its launches, time, FLOPs and bytes; the time
    under each phase scope; per kernel the cycles of each region; and the session facts."""

    kernels: dict[str, dict[str, float]] = field(default_factory=dict)
    phases_ns: dict[str, float] = field(default_factory=dict)
    regions: dict[str, dict[str, float]] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    session: dict[str, Any] = field(default_factory=dict)


#: How a .hatchet file starts: a list whose first node opens with its children, frame or metrics.
HEAD = re.compile(rb'\s*\[\s*\{\s*"(?:children|frame|metrics)"')


def is_hatchet(data: Any) -> bool:
    """Whether parsed JSON is a proton tree: a list whose first element is a node."""
    return (isinstance(data, list) and bool(data) and isinstance(data[0], dict)
            and isinstance(data[0].get("frame"), dict) and "children" in data[0])


def read_hatchet(path: Path, data: Any) -> Hatchet:
    """The tree's kernels, phases and regions, and the session file beside it when there is one."""
    if not is_hatchet(data):
        raise FormatError("not a proton tree: expected a list whose first element has frame and children")
    found = Hatchet(session=read_session(path.parent / SESSION))
    if len(data) > 1 and isinstance(data[1], dict):
        found.devices = [f"{kind} {index}" for kind, devices in data[1].items() if isinstance(devices, dict)
                         for index in devices]
    stack: list[tuple[dict, int, str | None, str | None]] = [(data[0], 0, None, None)]
    seen = 0
    while stack:
        node, depth, phase, parent = stack.pop()
        seen += 1
        if depth > MAX_DEPTH or seen > MAX_NODES:
            raise FormatError(f"the tree is deeper than {MAX_DEPTH} or larger than {MAX_NODES:,} nodes")
        frame = node.get("frame") if isinstance(node.get("frame"), dict) else {}
        name = frame.get("name")
        if not isinstance(name, str) or name == METADATA_SCOPE:
            continue
        metrics = node.get("metrics") if isinstance(node.get("metrics"), dict) else {}
        if name in PHASES:
            phase = name
        _add(found, name, metrics, phase, parent)
        children = node.get("children")
        for child in children if isinstance(children, list) else ():
            if isinstance(child, dict):
                stack.append((child, depth + 1, phase, name))
    return found


def _add(found: Hatchet, name: str, metrics: dict[str, Any], phase: str | None, parent: str | None) -> None:
    cycles = json_number(metrics.get("cycles"))
    if not math.isnan(cycles) and parent is not None:  # a region inside the kernel `parent`
        regions = found.regions.setdefault(parent, {})
        regions[name] = regions.get(name, 0.0) + cycles
        return
    time_ns = json_number(metrics.get("time (ns)"))
    flops, moved = json_number(metrics.get("flops")), json_number(metrics.get("bytes"))
    kernel = "device_id" in metrics or "device_type" in metrics
    if not (kernel and not math.isnan(time_ns)) and not flops > 0 and not moved > 0:
        return  # a scope, or the root with its zero totals
    row = found.kernels.setdefault(name, {"calls": 0.0, "total_ns": 0.0, "flops": 0.0, "bytes": 0.0})
    if kernel and not math.isnan(time_ns):
        count = json_number(metrics.get("count"))
        row["calls"] += count if count >= 0 else 0.0
        row["total_ns"] += time_ns
        if phase is not None:
            found.phases_ns[phase] = found.phases_ns.get(phase, 0.0) + time_ns
    for key, value in (("flops", flops), ("bytes", moved)):
        if value > 0:
            row[key] += value
            row[f"has_{key}"] = 1.0


def read_session(path: Path) -> dict[str, Any]:
    """The session file tinylab's hook writes beside the tree ({} when absent or unreadable)."""
    if not is_plain_file(path):
        return {}
    try:
        data = json.loads(read_bounded(path, SESSION_LIMIT))
    except (OSError, ValueError, UserError):  # UserError: over the bound
        return {}
    return data if isinstance(data, dict) else {}


def parse(path: Path, head: Head) -> Parsed:
    """A `.hatchet` file (the registry's reader)."""
    text = read_text(path, head)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"not valid JSON (truncated?): {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return parse_data(path, data)


def parse_data(path: Path, data: Any) -> Parsed:
    """The kernel table of a proton tree already parsed from JSON."""
    found = read_hatchet(path, data)
    timed = {name: row for name, row in found.kernels.items() if row["calls"] > 0}
    if not timed:
        if found.regions:
            raise FormatError("an instrumentation profile: cycles of regions inside "
                              f"{', '.join(sorted(found.regions)[:3])}, no kernel times")
        raise FormatError("the proton tree holds no kernel (was the session active while kernels ran?)")
    table = build_table(pd.DataFrame({"name": list(timed), "calls": [r["calls"] for r in timed.values()],
                                      "total_ns": [r["total_ns"] for r in timed.values()]}))
    return Parsed(table, "proton", describe(found))


def describe(found: Hatchet) -> str | None:
    """The note of a proton table: backend and Triton, steps, phase times, counted kernels."""
    session = found.session
    parts = []
    if session:
        backend = session.get("backend") or "?"
        parts.append(f"proton {backend} backend, triton {session.get('triton') or '?'}")
        steps = session.get("steps")
        if isinstance(steps, list) and len(steps) == 2:
            parts.append(f"steps {steps[0]}..{steps[1]}")
    else:
        parts.append(f"backend and triton not recorded (no {SESSION} beside the tree)")
    if found.phases_ns:
        parts.append(", ".join(f"{phase} {found.phases_ns[phase] / 1e6:.3f} ms" for phase in PHASES
                               if phase in found.phases_ns))
    counted = sum(1 for row in found.kernels.values() if row.get("has_flops") or row.get("has_bytes"))
    if counted:
        parts.append(f"FLOPs and bytes from launch metadata for {counted} kernel{'s' if counted > 1 else ''}")
    return join(*parts)


def load_hatchet(path: Path) -> Hatchet:
    """A `.hatchet` file read whole (bounded), for the roofline's counts and the exercises'
    regions; UserError (one line, naming the file) when it cannot be read as one."""
    from tinylab.analysis.formats.detect import sniff

    _, head = sniff(path)
    try:
        return read_hatchet(path, json.loads(read_text(path, head)))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (truncated?): {exc.msg}") from None
    except (FormatError, RecursionError) as exc:
        raise UserError(f"{path}: {exc}") from None

"""The kernels of the measured steps: a profiler's dispatches cut to the trainer's step ranges.

On a GPU the trainer marks each step as a range (roctx on ROCm, NVTX on CUDA; tinylab/core/markers.py),
warm-up steps saying so in their name. Tools that record those ranges on the clock of their kernel
records (rocprofv3 --marker-trace, Nsight Systems' NVTX push/pop trace, rocprof-sys' Perfetto
trace) give both; each tool's reader turns them into (name, start, end) ranges and (names, starts,
ends) dispatches, and this keeps the dispatches that started inside a measured step.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from tinylab.core.kernel_table import table_from_durations
from tinylab.core.markers import parse_step_range

#: (step, warm-up, start, end) of one step range, on the tool's clock
Window = tuple[int, bool, int, int]


def step_windows(ranges: Iterable[tuple[Any, Any, Any]]) -> list[Window]:
    """The tinylab step ranges among (name, start, end) ranges, sorted by start; other ranges (the
    phases, anything the program marked) and incomplete ones are left out."""
    windows = []
    for name, start, end in ranges:
        parsed = parse_step_range(str(name))
        try:
            start, end = int(start), int(end)
        except (TypeError, ValueError, OverflowError):
            continue
        if parsed is not None and end >= start:
            windows.append((parsed[0], parsed[1], start, end))
    return sorted(windows, key=lambda w: w[2])


def measured_kernels(names: pd.Series, starts: np.ndarray, ends: np.ndarray,
                     windows: list[Window]) -> tuple[pd.DataFrame, int] | None:
    """The kernel table of the dispatches that started inside a measured (not warm-up) step range,
    and how many steps that is; None when there is no measured step range.

    The trainer synchronizes before it closes a step's range, so a step's kernels start after its
    push and end before its pop: the start alone places a dispatch. Incomplete rows (NaN) drop out.
    """
    measured = sorted((start, end) for _, warmup, start, end in windows if not warmup)
    if not measured:
        return None
    first = np.array([s for s, _ in measured], dtype=np.float64)
    last = np.array([e for _, e in measured], dtype=np.float64)
    begin = np.asarray(starts, dtype=np.float64)
    finish = np.asarray(ends, dtype=np.float64)
    slot = np.searchsorted(first, begin, side="right") - 1  # the last range that started before it
    inside = (slot >= 0) & (begin <= last[np.clip(slot, 0, None)])
    keep = inside & (finish >= begin)  # NaN compares false
    kept = pd.Series(np.asarray(names, dtype=object)[keep])
    return table_from_durations(kept, pd.Series(finish[keep] - begin[keep])), len(measured)

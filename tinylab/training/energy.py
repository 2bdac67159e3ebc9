"""Joules a sample, measured: the telemetry's power samples integrated over the timed steps.

The GPU's power draw comes once a second (tinylab/profilers/telemetry.py, NVML or AMD SMI), the
steps far more often, so the energy of the timed (non-warm-up) steps is the integral of power over
their window, [the end of the last warm-up step (or the first step's start), the end of the last
step]: the window holds the host's time between steps too, which the samples cost as much as
their kernels. The power curve is the straight line between samples (the trapezoid rule), cut at
the window's edges and held flat past the first and last sample. A window with fewer than two
samples in it (a run of a few seconds) has no curve of its own: its power is the mean of the
samples nearest it (those inside, the last before, the first after) over its whole length.
Without a power reading (a CPU run, no NVML or AMD SMI) there is no figure: None, never 0.
"""

from __future__ import annotations

import bisect
import time
from typing import Sequence

from tinylab.core.events import TelemetryEvent

#: (when, on the time.monotonic clock; watts)
PowerSample = tuple[float, float]


def joules(samples: Sequence[PowerSample], start: float, end: float) -> float | None:
    """The energy between `start` and `end` from power `samples` (see the module's text); None
    without a sample or a window."""
    points = sorted(samples)
    if not points or end <= start:
        return None
    times = [t for t, _ in points]
    lo, hi = bisect.bisect_left(times, start), bisect.bisect_right(times, end)
    if hi - lo < 2:
        nearest = points[max(0, lo - 1):hi + 1]
        return sum(w for _, w in nearest) / len(nearest) * (end - start)

    def power(t: float) -> float:
        i = bisect.bisect_left(times, t)
        if i == 0 or i == len(times):
            return points[min(i, len(times) - 1)][1]
        (t0, w0), (t1, w1) = points[i - 1], points[i]
        return w0 + (w1 - w0) * (t - t0) / (t1 - t0)

    edges = [start, *times[lo:hi], end]
    return sum((b - a) * (power(a) + power(b)) / 2 for a, b in zip(edges, edges[1:]))


def per_sample(ranks: Sequence[tuple[float, int] | None], batch_size: int) -> float | None:
    """Joules a trained sample from each rank's (joules, timed steps), rank 0 first: the ranks'
    sum over all their samples when every rank measured its GPU, else rank 0's alone; None when
    rank 0 has no figure."""
    if ranks and all(r is not None for r in ranks):
        return sum(j for j, _ in ranks) / sum(n * batch_size for _, n in ranks)
    if ranks and ranks[0] is not None:
        return ranks[0][0] / (ranks[0][1] * batch_size)
    return None


class PowerLog:
    """A trainer's power samples and step ends, in memory and on one clock: the telemetry thread
    adds samples while the training loop marks its steps."""

    def __init__(self) -> None:
        self.samples: list[PowerSample] = []
        self.began = time.monotonic()
        self.ends: list[tuple[float, bool]] = []  # (when a step's work was done, whether it warmed up)

    def add(self, sample: TelemetryEvent) -> TelemetryEvent:
        """Keep the sample's power (a telemetry callback: it hands the sample on to be written)."""
        if sample.power_w is not None:
            self.samples.append((time.monotonic(), sample.power_w))
        return sample

    def begin(self) -> None:
        """The first step starts now."""
        self.began = time.monotonic()

    def step_end(self, warmup: bool) -> None:
        self.ends.append((time.monotonic(), warmup))

    def timed(self) -> tuple[float, int] | None:
        """(joules, steps) of the timed steps (all steps when every one warmed up, as the summary's
        medians take them), or None without a power reading."""
        starts = [self.began, *(t for t, _ in self.ends[:-1])]
        spans = [(s, e) for s, (e, warm) in zip(starts, self.ends) if not warm] or \
            [(s, e) for s, (e, _) in zip(starts, self.ends)]
        if not spans:
            return None
        energy = joules(list(self.samples), spans[0][0], spans[-1][1])
        return None if energy is None else (energy, len(spans))

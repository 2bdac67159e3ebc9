"""How sure an A/B verdict is: an interval on the B/A ratio that sees between-run variation.

A run's own step-to-step spread cannot see contention that changes between runs: two runs of one
config on a shared node differ by far more than either run's steps do (docs/statistics.md shows
the measurements). So the unit of replication here is the run, as in pyperf (which runs worker
processes for the same reason) and tritonbench's `--ab-repeat`:

- each run gives one figure per timed metric (its median step time, its samples/s, ...), taken in
  logs, so that a time and its rate get the same verdict and ratios are differences;
- the between-run variance of those logs is pooled over both sides' repeats and, as a prior worth
  `Variation.dof` degrees of freedom, from this machine's own history of repeated configs (or a
  conservative assumption when there is none; a run the load sampler saw busy raises it to
  BUSY_SIGMA): one pair of runs has no degrees of freedom of its own, so it gets a verdict only
  when its difference is far outside what the machine's recent run-to-run variation allows;
- the interval on the mean log difference is Student's t at the pooled degrees of freedom, and
  never narrower than the runs' own step noise allows (a run's median has a sampling error of
  its own, `RunValue.within`).

A verdict names a side only when the whole interval is on one side of 1; an interval inside
±SAME_BAND says "same"; anything else is "not sure", with what would settle it (`settle`).
Headless and pure Python: `tinylab compare` reads no numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

#: The intervals' confidence level.
LEVEL = 0.95
#: An interval inside 1 ± this says "same": a difference this small is not worth a verdict.
SAME_BAND = 0.05
#: The run-to-run spread (SD of log figures) assumed on a machine with no repeated configs on
#: record: about what a quiet GPU or CPU shows between runs of one config (docs/statistics.md).
ASSUMED_SIGMA = 0.10
#: ... when the load sampler saw another process on the machine during either run: identical pairs
#: of CPU runs under two busy loops differed by 25 % (issue 37), so at least that again.
BUSY_SIGMA = 0.30
#: The weight of an assumed spread, in degrees of freedom: enough to give one pair an interval,
#: few enough that the pair's own repeats soon outweigh it.
ASSUMED_DOF = 2
#: The most degrees of freedom the machine's history may weigh: the runs in front of us count more
#: than yesterday's.
MAX_HISTORY_DOF = 8
#: `settle` suggests at most this many runs a side.
MAX_SUGGESTED = 12

# Student's t, two-sided 95 %, by degrees of freedom (the normal's 1.96 from 120 on).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t95(dof: float) -> float:
    """Student's t quantile for a two-sided 95 % interval (the next smaller tabulated dof: wider)."""
    if dof < 1:
        raise ValueError(f"dof must be >= 1, got {dof}")
    if dof >= 120:
        return 1.96
    return _T95[max(d for d in _T95 if d <= dof)]


@dataclass(frozen=True)
class RunValue:
    """One run's figure of a timed metric."""

    run_id: str
    value: float  # > 0: the run's median step time, its samples/s, its joules a sample, ...
    within: float | None = None  # the sampling error of log(value) from the run's own steps, if known
    busy: bool = False  # the load sampler saw other work on the machine during it

    @classmethod
    def of(cls, run_id: str, value: Any, spread: float | None, steps: int | None, busy: bool) -> "RunValue | None":
        """A summary's figure with the sampling error of a median of `steps` steps whose p10-p90
        half-width over the median is `spread`: sigma ~ spread / 1.28 (normal quantiles), and a
        median's standard error 1.25 sigma / sqrt(n); None when there is no positive figure."""
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0 or math.isinf(value):
            return None
        within = 1.2533 * (spread / 1.2816) / math.sqrt(steps) if spread is not None and steps else None
        return cls(run_id, float(value), within, busy)


@dataclass(frozen=True)
class Variation:
    """This machine's run-to-run spread: the SD of log figures between repeated runs of one config."""

    sigma: float
    dof: int  # the degrees of freedom it rests on; 0 when assumed
    source: str  # where it comes from, in words

    def to_json(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "dof": self.dof, "source": self.source}


ASSUMED = Variation(ASSUMED_SIGMA, 0, "assumed (no repeated configs of this size on record for this machine)")


def history_variation(groups: Iterable[Sequence[float]], what: str = "this machine") -> Variation:
    """The spread between repeated runs from `groups` (each: one config's figures, runs of one
    machine and size), pooled; ASSUMED when no group has two runs. Never below a tenth of
    ASSUMED_SIGMA: a history of two lucky runs must not make every later pair look certain."""
    ss, dof, configs = 0.0, 0, 0
    for values in groups:
        logs = [math.log(v) for v in values if v > 0]
        if len(logs) < 2:
            continue
        mean = sum(logs) / len(logs)
        ss += sum((x - mean) ** 2 for x in logs)
        dof += len(logs) - 1
        configs += 1
    if not dof:
        return ASSUMED
    sigma = max(math.sqrt(ss / dof), ASSUMED_SIGMA / 10)
    return Variation(sigma, dof, f"{dof + configs} runs of {configs} repeated config{'s' * (configs > 1)} on {what}")


@dataclass(frozen=True)
class RatioInterval:
    """The B/A ratio of a timed metric with its interval, and the verdict it allows."""

    ratio: float
    low: float
    high: float
    better: str | None  # "a", "b", or None: not sure (or the same)
    same: bool  # the interval lies inside 1 ± SAME_BAND
    runs: tuple[int, int]  # runs pooled on each side
    sigma: float  # the run-to-run spread the interval used (SD of log figures)
    dof: float  # its degrees of freedom
    settle: str | None  # for a verdict that is not sure: what would settle it

    @property
    def sure(self) -> bool:
        return self.better is not None or self.same

    def text(self) -> str:
        """`0.80x [0.62–1.03]`."""
        return f"{self.ratio:.2f}x [{self.low:.2f}–{self.high:.2f}]"

    def to_json(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "low": self.low, "high": self.high, "level": LEVEL, "better": self.better,
                "same": self.same, "runs": list(self.runs), "sigma": self.sigma, "dof": self.dof,
                "settle": self.settle}


def ratio_interval(a: Sequence[RunValue], b: Sequence[RunValue], direction: int,
                   prior: Variation = ASSUMED) -> RatioInterval | None:
    """The interval on B/A of the mean log figures of runs `a` and `b` (see the module's text);
    `direction` +1 when larger is better, -1 when smaller is. None without a run on either side."""
    if not a or not b:
        return None
    xa, xb = [math.log(r.value) for r in a], [math.log(r.value) for r in b]
    ma, mb = sum(xa) / len(xa), sum(xb) / len(xb)
    ss = sum((x - ma) ** 2 for x in xa) + sum((x - mb) ** 2 for x in xb)
    data_dof = len(xa) + len(xb) - 2
    prior_sigma = max(prior.sigma, BUSY_SIGMA) if any(r.busy for r in (*a, *b)) else prior.sigma
    prior_dof = ASSUMED_DOF if not prior.dof else min(prior.dof, MAX_HISTORY_DOF)
    dof = data_dof + prior_dof
    var = (ss + prior_dof * prior_sigma ** 2) / dof
    within = [r.within ** 2 for r in (*a, *b) if r.within is not None]
    var = max(var, sum(within) / len(within)) if within else var  # a run's median is never surer than its steps
    sigma = math.sqrt(var)
    diff = mb - ma
    half = t95(dof) * sigma * math.sqrt(1 / len(xa) + 1 / len(xb))
    low, high = math.exp(diff - half), math.exp(diff + half)
    same = 1 / (1 + SAME_BAND) <= low and high <= 1 + SAME_BAND
    better = None
    if low > 1 or high < 1:
        better = "b" if (low > 1) == (direction > 0) else "a"
    settle = None if better or same else _settle(diff, sigma, len(xa), len(xb), prior_dof)
    return RatioInterval(math.exp(diff), low, high, better, same, (len(xa), len(xb)), sigma, dof, settle)


def runs_needed(diff: float, sigma: float, prior_dof: int) -> int | None:
    """Runs a side for an interval of spread `sigma` around a log difference `diff` to exclude 1,
    or, for a difference inside the same-band, to fit inside it; None past MAX_SUGGESTED."""
    target = abs(diff) if abs(diff) > math.log1p(SAME_BAND) else math.log1p(SAME_BAND) - abs(diff)
    for n in range(2, MAX_SUGGESTED + 1):
        if target > 0 and t95(2 * n - 2 + prior_dof) * sigma * math.sqrt(2 / n) < target:
            return n
    return None


def _settle(diff: float, sigma: float, na: int, nb: int, prior_dof: int) -> str:
    spread = f"spread ±{math.expm1(sigma):.0%} between runs"
    n = runs_needed(diff, sigma, prior_dof)
    if n is None:
        return (f"{spread}: the difference is too small to see in {MAX_SUGGESTED} runs a side here; "
                "measure on a quieter machine or with more steps")
    return f"{spread}: `--repeat {max(1, n - min(na, nb))}`"


def mean_interval(values: Sequence[float], prior: Variation = ASSUMED) -> tuple[float, float, float] | None:
    """(geometric mean, low, high) of one case's repeated figures (bench), the same t interval as
    ratio_interval with the prior's weight; None without a positive figure."""
    logs = [math.log(v) for v in values if v > 0]
    if not logs:
        return None
    mean = sum(logs) / len(logs)
    prior_dof = ASSUMED_DOF if not prior.dof else min(prior.dof, MAX_HISTORY_DOF)
    dof = len(logs) - 1 + prior_dof
    sigma = math.sqrt((sum((x - mean) ** 2 for x in logs) + prior_dof * prior.sigma ** 2) / dof)
    half = t95(dof) * sigma / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)

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

#: The intervals' confidence level: the headline rows' (samples/s, step median, ...).
LEVEL = 0.95
#: ... and the secondary rows' (the p90, the phases): a comparison shows several of them, and at
#: 95 % each, one or another would name a winner between identical runs about one time in five;
#: tails and phases also move more with contention than the step's median does.
SECONDARY_LEVEL = 0.99
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

# Student's t, two-sided, by degrees of freedom (the normal's from 120 on), at LEVEL and SECONDARY_LEVEL.
_DOF = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 25, 30, 40, 60, 120)
_T = {0.95: (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.179, 2.131, 2.086, 2.060,
             2.042, 2.021, 2.000, 1.980),
      0.99: (63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.055, 2.947, 2.845, 2.787,
             2.750, 2.704, 2.660, 2.617)}
_NORMAL = {0.95: 1.960, 0.99: 2.576}


def t_quantile(dof: float, level: float = LEVEL) -> float:
    """Student's t quantile for a two-sided interval at `level` (the next smaller tabulated dof: wider)."""
    if dof < 1:
        raise ValueError(f"dof must be >= 1, got {dof}")
    if level not in _T:
        raise ValueError(f"level must be one of {sorted(_T)}, got {level}")
    if dof > _DOF[-1]:
        return _NORMAL[level]
    return _T[level][max(i for i, d in enumerate(_DOF) if d <= dof)]


def _positive(value: Any) -> bool:
    """A finite number above 0 (a run's files are a stranger's: 1e308, -1, NaN and true are not figures)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _exp(x: float) -> float:
    """exp that saturates instead of raising OverflowError (an interval on hostile figures)."""
    return math.exp(max(-700.0, min(700.0, x)))


@dataclass(frozen=True)
class RunValue:
    """One run's figure of a timed metric."""

    run_id: str
    value: float  # > 0: the run's median step time, its samples/s, its joules a sample, ...
    within: float | None = None  # the sampling error of log(value) from the run's own steps, if known
    busy: bool = False  # the load sampler saw other work on the machine during it

    @classmethod
    def of(cls, run_id: str, value: Any, p10: float | None, p90: float | None, steps: int | None,
           busy: bool) -> "RunValue | None":
        """A summary's figure with the sampling error of a median of `steps` step times whose 10th
        and 90th percentiles are `p10` and `p90`, in logs (a step time is skewed: one stalled step
        is not a step run backwards): sigma ~ ln(p90 / p10) / 2.56, and a median's standard error
        1.25 sigma / sqrt(n); None when there is no positive figure."""
        if not _positive(value):
            return None
        within = None
        if _positive(p10) and _positive(p90) and p90 >= p10 and isinstance(steps, int) and steps > 0:
            within = 1.2533 * (math.log(p90) - math.log(p10)) / (2 * 1.2816) / math.sqrt(steps)
        return cls(run_id, float(value), within, busy)

    @classmethod
    def from_summary(cls, run_id: str, summary: Any, key: str, busy: bool) -> "RunValue | None":
        """A run's figure `key` of its summary (tinylab.core.events.Summary), its steps' error from
        the summary's step-time percentiles."""
        if summary is None:
            return None
        return cls.of(run_id, summary.get(key), summary.step_ms_p10, summary.step_ms_p90, summary.measured_steps, busy)


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
        logs = [math.log(v) for v in values if _positive(v)]
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
    level: float = LEVEL
    #: for a verdict that is not sure: the runs a side (in all) that would settle it, None past
    #: MAX_SUGGESTED (the Compare screen's `r` takes it as its budget)
    needed: int | None = None

    @property
    def sure(self) -> bool:
        return self.better is not None or self.same

    def text(self) -> str:
        """`0.80x [0.62–1.03]`."""
        return f"{self.ratio:.2f}x [{self.low:.2f}–{self.high:.2f}]"

    def to_json(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "low": self.low, "high": self.high, "level": self.level, "better": self.better,
                "same": self.same, "runs": list(self.runs), "sigma": self.sigma, "dof": self.dof,
                "settle": self.settle, "needed": self.needed}


def ratio_interval(a: Sequence[RunValue], b: Sequence[RunValue], direction: int,
                   prior: Variation = ASSUMED, level: float = LEVEL) -> RatioInterval | None:
    """The interval at `level` on B/A of the mean log figures of runs `a` and `b` (see the module's
    text); `direction` +1 when larger is better, -1 when smaller is. None without a run on either side."""
    if not a or not b:
        return None
    xa, xb = [math.log(r.value) for r in a], [math.log(r.value) for r in b]
    ma, mb = sum(xa) / len(xa), sum(xb) / len(xb)
    ss = sum((x - ma) ** 2 for x in xa) + sum((x - mb) ** 2 for x in xb)
    data_dof = len(xa) + len(xb) - 2
    busy = any(r.busy for r in (*a, *b))
    prior_sigma = max(prior.sigma, BUSY_SIGMA) if busy else prior.sigma
    prior_dof = ASSUMED_DOF if not prior.dof else min(prior.dof, MAX_HISTORY_DOF)
    dof = data_dof + prior_dof
    var = (ss + prior_dof * prior_sigma ** 2) / dof
    if busy:  # contention makes runs neither steady nor independent: a few lucky repeats must not shrink it
        var = max(var, BUSY_SIGMA ** 2)
    within = [r.within ** 2 for r in (*a, *b) if r.within is not None]
    if within and not data_dof:  # one pair: its medians are never surer than their own steps allow
        var = max(var, sum(within) / len(within))
    sigma = math.sqrt(var)
    diff = mb - ma
    half = t_quantile(dof, level) * sigma * math.sqrt(1 / len(xa) + 1 / len(xb))
    low, high = _exp(diff - half), _exp(diff + half)
    same = 1 / (1 + SAME_BAND) <= low and high <= 1 + SAME_BAND
    better = None
    if low > 1 or high < 1:
        better = "b" if (low > 1) == (direction > 0) else "a"
    settle = None if better or same else _settle(diff, sigma, len(xa), len(xb), prior_dof, level)
    needed = None if settle is None else runs_needed(diff, sigma, prior_dof, level)
    return RatioInterval(_exp(diff), low, high, better, same, (len(xa), len(xb)), sigma, dof, settle, level, needed)


def runs_needed(diff: float, sigma: float, prior_dof: int, level: float = LEVEL) -> int | None:
    """Runs a side for an interval of spread `sigma` around a log difference `diff` to exclude 1,
    or, for a difference inside the same-band, to fit inside it; None past MAX_SUGGESTED."""
    target = abs(diff) if abs(diff) > math.log1p(SAME_BAND) else math.log1p(SAME_BAND) - abs(diff)
    for n in range(2, MAX_SUGGESTED + 1):
        if target > 0 and t_quantile(2 * n - 2 + prior_dof, level) * sigma * math.sqrt(2 / n) < target:
            return n
    return None


def _settle(diff: float, sigma: float, na: int, nb: int, prior_dof: int, level: float) -> str:
    spread = f"spread ±{math.expm1(sigma):.0%} between runs"
    n = runs_needed(diff, sigma, prior_dof, level)
    if n is None and abs(diff) <= math.log1p(SAME_BAND):  # a near-tie: what is out of reach is "the same"
        return (f"{spread}: the runs differ by {math.expm1(abs(diff)):.0%}, but telling that from the same "
                f"(±{SAME_BAND:.0%}) takes more than {MAX_SUGGESTED} runs a side at this spread; take them as "
                "equal within it, or measure with more steps")
    if n is None:
        return (f"{spread}: the difference is too small to see in {MAX_SUGGESTED} runs a side here; "
                "measure on a quieter machine or with more steps")
    return f"{spread}: `--repeat {max(1, n - min(na, nb))}`"


def mean_interval(values: Sequence[float], prior: Variation = ASSUMED) -> tuple[float, float, float] | None:
    """(geometric mean, low, high) of one case's repeated figures (bench), the same t interval as
    ratio_interval with the prior's weight; None without a positive figure."""
    logs = [math.log(v) for v in values if _positive(v)]
    if not logs:
        return None
    mean = sum(logs) / len(logs)
    prior_dof = ASSUMED_DOF if not prior.dof else min(prior.dof, MAX_HISTORY_DOF)
    dof = len(logs) - 1 + prior_dof
    sigma = math.sqrt((sum((x - mean) ** 2 for x in logs) + prior_dof * prior.sigma ** 2) / dof)
    half = t_quantile(dof) * sigma / math.sqrt(len(logs))
    return _exp(mean), _exp(mean - half), _exp(mean + half)

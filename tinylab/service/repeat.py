"""`tinylab compare A B --repeat N|auto` and the Compare screen's "Repeat both, interleaved".

One pair of runs on a shared machine cannot tell its difference from the machine's run-to-run
variation (docs/statistics.md); more runs of each side's own config can. A `Repeat` re-launches
each side's config as stored (the same seed; only the label says it is a repeat), one run at a
time and to its end (two runs at once would skew each other's timings), **interleaved**: the
pairs alternate their order (B A, A B, B A, ... after the given A B), so that a load which comes
and goes lands on both sides alike and neither side always runs right after the other. After each
run it compares again with every finished run of each side pooled (Lab.compare's more_a/more_b).

`Repeat.run` is a generator of typed progress events, like the exercises' run_step: the CLI
prints them, the lab's worker posts them as messages. Its `stop()` (the lab's cancel) and the
CLI's Ctrl-C (`cancel`, then `finish`) cancel the run in flight, which stays in the store.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, Union

from tinylab.analysis.compare import HEADLINE, METRICS
from tinylab.config import MAX_LABEL, RunConfig
from tinylab.core.errors import UserError
from tinylab.render.compare import format_value
from tinylab.runs.follow import watch
from tinylab.runs.record import RunRecord, short_id
from tinylab.runs.store import LIVE, TERMINAL, Run

if TYPE_CHECKING:
    from tinylab.analysis.compare import Comparison
    from tinylab.service.lab import Lab

#: `--max-runs`' default: runs a side in all, the two given included (10 launched at most).
DEFAULT_MAX_RUNS = 6
#: The smallest budget: one more run a side.
MIN_RUNS = 2
#: The headline row's name in the progress lines ("samples/s").
HEADLINE_LABEL = next(f.label for f in METRICS if f.key == HEADLINE)


def budget_for(result: "Comparison") -> int:
    """Runs a side the Compare screen's `r` goes up to: the default, or as many as the headline
    row's "not sure" note asks for (its `--repeat 9` beside "at most 6 a side" was a promise `r`
    could not keep); stats.MAX_SUGGESTED at most, as the note never asks for more."""
    head = result.row(HEADLINE)
    needed = head.interval.needed if head is not None and head.interval is not None else None
    return max(DEFAULT_MAX_RUNS, needed or 0)


def interleaved(ran_first: str, pairs: int) -> list[str]:
    """The sides ("a", "b") of `pairs` more pairs of runs after a pair whose `ran_first` side ran
    first: each pair in the other order than the one before (A B | B A | A B ...), so that each
    side runs as often right after the other as right after itself."""
    later = "b" if ran_first == "a" else "a"
    return [side for k in range(pairs) for side in ((later, ran_first) if k % 2 == 0 else (ran_first, later))]


@dataclass(frozen=True)
class RepeatStarted:
    number: int  # 1-based, among the runs this repeat may launch
    planned: int  # how many it may launch in all (`auto`: the budget's)
    side: str  # "a" or "b"
    name: str  # the side's letter as the comparison shows it
    run_id: str

    def line(self) -> str:
        """`repeating 3/10: A 1202-1605-ab12 running`."""
        return f"repeating {self.number}/{self.planned}: {self.name} {short_id(self.run_id)} running"


@dataclass(frozen=True)
class RepeatEnded:
    number: int
    planned: int
    side: str
    name: str
    run_id: str
    status: str
    error: str | None  # a failed run's error, one line
    value: float | None  # the run's own samples/s
    comparison: Comparison  # every finished run of each side pooled, this one included

    def line(self) -> str:
        """`repeat 3/6: B 1202-1605-ab12 finished, samples/s 612.3 -> B/A 0.98x [0.81–1.19] not sure`."""
        if self.status == "finished":
            what = f"finished, {HEADLINE_LABEL} {format_value(HEADLINE, self.value)}"
        else:
            what = f"{self.status}{f' ({self.error})' if self.error else ''}, not pooled"
        return f"repeat {self.number}/{self.planned}: {self.name} {short_id(self.run_id)} {what} -> " \
               f"{headline(self.comparison)}"


@dataclass(frozen=True)
class Launched:
    side: str
    run_id: str
    status: str

    def to_json(self) -> dict[str, Any]:
        return {"side": self.side, "id": self.run_id, "status": self.status}


@dataclass(frozen=True)
class RepeatDone:
    comparison: Comparison
    launched: tuple[Launched, ...]
    ended: str  # what ended it, in words: "settled: ...", "budget spent: ...", "stopped: ..."

    def to_json(self) -> dict[str, Any]:
        """`compare --repeat --json`'s "repeat" object (the comparison's "pooled" lists the ids)."""
        return {"launched": [r.to_json() for r in self.launched], "ended": self.ended}


RepeatProgress = Union[RepeatStarted, RepeatEnded, RepeatDone]


def headline(result: Comparison) -> str:
    """The headline row as one phrase: `B/A 0.98x [0.81–1.19] not sure`."""
    row = result.row(HEADLINE)
    interval = row.interval if row is not None else None
    if interval is None:
        return "B/A - (no samples/s on both sides)"
    verdict = "same" if interval.same else f"{result.names[0 if interval.better == 'a' else 1]} better" \
        if interval.better else "not sure"
    return f"B/A {interval.text()} {verdict}"


class Repeat:
    """Runs A and B repeated `times` more runs a side, or (`times` None: `--repeat auto`) pairs
    at a time until Comparison.settled() or `max_runs` a side in all (the given two included).

    Everything that could refuse is checked here, before anything is launched: both runs exist,
    neither is still running (it would skew the repeats' timings), neither hides an exercise's
    fault (a repeat's record would show it), and both configs can start on this machine
    (Lab.check). UserError (one line) otherwise."""

    def __init__(self, lab: Lab, a: str, b: str, times: int | None, max_runs: int = DEFAULT_MAX_RUNS) -> None:
        if times is not None and times < 1:
            raise UserError(f"--repeat must be a positive integer or 'auto', got {times}")
        if max_runs < MIN_RUNS:
            raise UserError(f"--max-runs must be at least {MIN_RUNS} (runs a side in all, the two given included), "
                            f"got {max_runs}")
        self.lab, self.times, self.max_runs = lab, times, max_runs
        self.runs = {"a": lab.run(a), "b": lab.run(b)}
        records = {side: lab.record(run.id) for side, run in self.runs.items()}
        self.names = ("A", "B")
        self.configs = {side: self._config(side, run, records[side]) for side, run in self.runs.items()}
        first = min(records, key=lambda side: (records[side].started or 0.0, side))
        # the store's history, scanned once: the repeats it would gain are the pooled runs, left out anyway
        self.variation = lab.variation(records["a"], [run.id for run in self.runs.values()])
        pairs = times if times is not None else max_runs - 1
        self.order = interleaved(first, pairs)
        self.launched: list[Launched] = []
        self._in_flight: Run | None = None
        self._lock = threading.Lock()

    def _config(self, side: str, run: Run, record: RunRecord) -> RunConfig:
        name = f"run {side.upper()} ({run.id})"
        if record.hidden:
            raise UserError(f"{name} hides its exercise step's {', '.join(sorted(record.hidden))} until the step "
                            "passes, and a repeat would show it: pass the step or reveal its answers first")
        if record.status in LIVE:
            raise UserError(f"{name} is still {record.status}: repeat it once it has ended "
                            "(runs at the same time skew each other's timings)")
        try:
            return self.lab.check(run.config())
        except UserError as exc:
            raise UserError(f"{name}'s config cannot start on this machine: {exc}") from None

    @property
    def planned(self) -> int:
        return len(self.order)

    def pooled_ids(self) -> tuple[list[str], list[str]]:
        """Every run launched so far of each side; Comparison leaves out those that did not finish."""
        return ([r.run_id for r in self.launched if r.side == "a"], [r.run_id for r in self.launched if r.side == "b"])

    def compare(self) -> Comparison:
        more_a, more_b = self.pooled_ids()
        return self.lab.compare(self.runs["a"].id, self.runs["b"].id, more_a=more_a, more_b=more_b,
                                variation=self.variation)

    def run(self, *, poll_s: float = 0.5, stop: Callable[[], bool] = lambda: False) -> Iterator[RepeatProgress]:
        """Launch, watch and pool each run of the plan in turn; RepeatDone last. `stop()` ends it
        early (the run in flight is cancelled). A run that fails is reported and left out of the
        pool, and the repeat goes on; a config the machine refuses now ends it (UserError)."""
        comparison = self.compare()
        if self.times is None and comparison.settled():
            yield self.finish(f"settled before any repeat: {comparison.settled()}", comparison)
            return
        counts = {"a": 0, "b": 0}
        for number, side in enumerate(self.order, 1):
            if stop():
                yield self.finish(self._stopped(cancelled=False), comparison)
                return
            counts[side] += 1
            run = self._launch(side, counts[side])
            yield RepeatStarted(number, self.planned, side, self.names[side == "b"], run.id)
            status = "running"
            for status in watch(run, None, poll_s, stop=stop):
                pass
            if status not in TERMINAL:  # stopped while it ran
                self.cancel()
                yield self.finish(self._stopped(cancelled=True), self.compare())
                return
            record = run.record()
            self._ended(side, run, status)
            comparison = self.compare()
            error = f"{record.error.type}: {record.error.message}" if record.error else None
            value = record.summary.get(HEADLINE) if record.summary else None
            yield RepeatEnded(number, self.planned, side, self.names[side == "b"], run.id, status, error,
                              value if isinstance(value, (int, float)) else None, comparison)
            if self.times is None and number % 2 == 0 and comparison.settled():
                yield self.finish(f"settled: {comparison.settled()}", comparison)
                return
        yield self.finish(self._spent(comparison), comparison)

    def _launch(self, side: str, number: int) -> Run:
        cfg = self.configs[side]
        source = self.runs[side]
        tail = f"repeat {number} of {short_id(source.id)}"
        label = f"{cfg.label[:MAX_LABEL - len(tail) - 1]} {tail}" if cfg.label else tail
        try:
            run = self.lab.launch(replace(cfg, label=label))
        except UserError as exc:
            raise UserError(f"run {side.upper()}'s config cannot start any more, so the repeat stopped "
                            f"after {len(self.launched)} run(s): {exc}") from None
        with self._lock:
            self._in_flight = run
            self.launched.append(Launched(side, run.id, "running"))
        return run

    def _ended(self, side: str, run: Run, status: str) -> None:
        with self._lock:
            self._in_flight = None
            self.launched[-1] = Launched(side, run.id, status)

    def cancel(self) -> bool:
        """Cancel the run in flight, if any (Lab.cancel; it stays in the store, cancelled)."""
        with self._lock:
            run = self._in_flight
        if run is None:
            return False
        stopped = self.lab.cancel(run)
        self._ended(self.launched[-1].side, run, run.status())
        return stopped

    def finish(self, ended: str, comparison: Comparison | None = None) -> RepeatDone:
        """What the repeat pooled so far and what ended it (the CLI's Ctrl-C says "interrupted")."""
        return RepeatDone(comparison or self.compare(), tuple(self.launched), ended)

    def _stopped(self, cancelled: bool) -> str:
        return f"stopped after {len(self.launched)} of {self.planned} runs" + (
            " (the last one cancelled, not pooled)" if cancelled else "")

    def _spent(self, comparison: Comparison) -> str:
        """A fixed --repeat N's end, or an auto repeat's spent budget; either way how sure it is."""
        row = comparison.row(HEADLINE)
        settle = row.interval.settle if row is not None and row.interval is not None else None
        sure = comparison.settled()
        if self.times is not None:
            return f"done: {self.times} more run{'s' * (self.times > 1)} a side; " + (
                f"settled: {sure}" if sure else f"still not sure{f': {settle}' if settle else ''}")
        return f"budget spent: {self.max_runs} runs a side, still not sure{f': {settle}' if settle else ''}"

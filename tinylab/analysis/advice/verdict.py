"""Did the advice hold? Run B applied an advice item's action to run A: compare what the item
predicted (its bound on a summary field, or that its rule stops firing) with what B measured.

A bound holds when B improved on A by more than the runs' noise and by no more than the bound
(within that noise); an item without a bound (correctness, validity, a finding) holds when B no
longer triggers its rule, and that only where the rule can judge B (scope.py): a B outside the
rule's device or inputs, or busy beyond what the rule trusts, cannot tell. Either way the verdict
says why, in words.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tinylab.analysis.advice.model import Advice, Facts, ratio
from tinylab.analysis.stats import ASSUMED, RunValue, Variation, ratio_interval
from tinylab.analysis.advice.scope import SCOPES
from tinylab.core.events import FIELD_BY_KEY

#: Ratios this close to 1 are no change, whatever the runs' spread (as A/B comparisons judge them).
SAME_WITHIN = 0.01


@dataclass(frozen=True)
class Verdict:
    rule: str
    held: bool | None  # None: B cannot tell (no summary)
    predicted: str  # what A's advice said the change could do
    measured: str  # what B measured against A
    why: str  # "the change worked: ..." / "the change did not work: ..."


def _noise(facts: Facts) -> float | None:
    """Half the run's p10-p90 spread over its median, as compare judges A/B differences by."""
    spread, _ = facts.spread()
    return None if spread is None else spread / 2


def _change(metric: str, va: float, vb: float) -> str:
    """"step median 17.17 -> 2.45 ms": a summary field from A to B, as people read it."""
    field = FIELD_BY_KEY[metric]
    unit = f" {field.unit}" if field.unit and field.unit != "fraction" else ""
    return f"{field.label} {format(va, field.fmt)} -> {format(vb, field.fmt)}{unit}"


def applies(item: Advice, b: Facts) -> bool:
    """Whether B's config carries every change of the item's action."""
    return bool(item.action.changes) and all(b.config.get(k) == v for k, v in item.action.changes.items())


def check(item: Advice, a: Facts, b: Facts, b_items: list[Advice], b_unjudged: dict[str, str] | None = None,
          variation: Variation = ASSUMED) -> Verdict:
    """`b_unjudged`: the rules B found something for but could not judge (Judgement.unjudged);
    `variation`: the machine's run-to-run spread, which a timed gain must stand out of
    (tinylab.analysis.stats: one pair of runs is judged by the interval on B/A, as compare does)."""
    still = next((i for i in b_items if i.rule == item.rule), None)
    after = f"; B still shows it: {still.measured.text}" if still else ""
    if b.summary is None or a.summary is None:
        return Verdict(item.rule, None, item.impact.text, "-", f"cannot tell: run {'B' if b.summary is None else 'A'} "
                                                               f"has no summary ({b.status or a.status})")
    bound, metric = item.impact.bound, item.impact.metric
    va, vb = (s.get(metric) if metric else None for s in (a.summary, b.summary))
    if bound is None or not va or not vb:
        predicted = f"{item.rule} clears (it fires at {item.threshold.text})"
        measured = _change(metric, va, vb) if va is not None and vb is not None else (
            still.measured.text if still else f"{item.rule} no longer fires")
        if still:
            return Verdict(item.rule, False, predicted, measured,
                           f"the change did not work: B still triggers {item.rule}{after}")
        unjudged = (b_unjudged or {}).get(item.rule) or SCOPES[item.rule].missing(b)
        if unjudged:
            return Verdict(item.rule, None, predicted, "-", f"cannot tell: {item.rule} cannot judge run B: {unjudged}")
        return Verdict(item.rule, True, predicted, measured,
                       f"the change worked: B no longer triggers {item.rule} (A: {item.measured.text})")
    field = FIELD_BY_KEY[metric]
    gain = va / vb if field.direction < 0 else vb / va
    noise = max(SAME_WITHIN, *(n for n in (_noise(a), _noise(b)) if n is not None)) if field.timed else SAME_WITHIN
    measured = f"{_change(metric, va, vb)}: {ratio(gain)}"
    predicted = f"at most {ratio(bound)} ({field.label})"
    if field.timed:
        sides = [RunValue.from_summary(name, f.summary, metric, bool(f.busy)) for name, f in (("A", a), ("B", b))]
        interval = ratio_interval(sides[:1], sides[1:], field.direction, variation) if all(sides) else None
        if interval is not None and not interval.sure:
            return Verdict(item.rule, None, predicted, f"{measured}, B/A {interval.text()}",
                           f"cannot tell yet: the 95% interval on B/A spans 1 ({interval.settle}; "
                           f"`tinylab compare A B --repeat N`){after}")
        if interval is not None and interval.better != "b":  # B applied the advice: B must be better
            return Verdict(item.rule, False, predicted, f"{measured}, B/A {interval.text()}",
                           f"the change did not work: B/A {interval.text()} is "
                           f"{'the same within ±5%' if interval.same else 'worse'}{after}")
    if gain - 1 <= noise:
        return Verdict(item.rule, False, predicted, measured, f"the change did not work: {ratio(gain)} is inside the "
                                                              f"runs' noise (±{noise:.0%}){after}")
    if gain > bound * (1 + noise):
        return Verdict(item.rule, False, predicted, measured, f"the change worked beyond the bound: {ratio(gain)} > "
                                                              f"{ratio(bound)}, so the bound missed something the "
                                                              f"change also did{after}")
    return Verdict(item.rule, True, predicted, measured, f"the change worked: {ratio(gain)}, within the predicted "
                                                         f"{ratio(bound)}{after}")


def compare_advice(a_items: list[Advice], b_items: list[Advice], a: Facts, b: Facts,
                   tried: str | None = None, b_unjudged: dict[str, str] | None = None,
                   variation: Variation = ASSUMED) -> dict[str, Any]:
    """B against A's advice: a verdict for the item B tried (`tried`, a rule of A's) and for every
    other item whose action B's config carries; which of A's rules B cleared and which are new.
    `b_unjudged`: B's Judgement.unjudged (a rule withheld on B has not cleared); `variation`: see check."""
    checked = [i for i in a_items if i.rule == tried or applies(i, b)]
    a_rules, b_rules = {i.rule for i in a_items}, {i.rule for i in b_items}
    missing = tried is not None and tried not in a_rules
    return {
        "tried": tried,
        "verdicts": [dataclasses.asdict(check(i, a, b, b_items, b_unjudged, variation)) for i in checked],
        "cleared": sorted(a_rules - b_rules - set(b_unjudged or ())),
        "new": sorted(b_rules - a_rules),
        "notes": [f"run A no longer triggers {tried}, the rule B was launched to try"] if missing else [],
    }

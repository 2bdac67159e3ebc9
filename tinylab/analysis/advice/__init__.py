"""The advisor: from a run's own numbers to evidence-grounded advice, and whether advice held.

`judge(facts)` runs every rule (one module a family: correctness, validity, step, kernels, scale)
where it can apply (its @scope, scope.py: its device, what it reads, how a busy run's timings are
trusted) over a Facts (facts.py reads a run or a trace into one), and returns the Advice items,
most urgent first, with a sentence for each rule that found something it cannot trust here;
`advise(facts)` is its items. `compare_advice` says, for a run B that applied an item's action to
run A, whether the change worked and why (verdict.py). Rules are deterministic, documented with
their thresholds, sources and scopes in docs/advice.md, and a rule's id is its function's name with
dashes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tinylab.analysis.advice import correctness, kernels, scale, step, validity
from tinylab.analysis.advice.model import SEVERITIES, Action, Advice, Facts, Impact, Quantity
from tinylab.analysis.advice.scope import SCOPES, Scope, rule_id, scope_of
from tinylab.analysis.advice.verdict import Verdict, compare_advice

RULES = (*correctness.RULES, *validity.RULES, *step.RULES, *kernels.RULES, *scale.RULES)
RULE_IDS = tuple(rule_id(rule) for rule in RULES)
#: The rules that say a run's results are wrong: a clean run must trigger none of them.
CORRECTNESS = tuple(rule_id(rule) for rule in correctness.RULES)


@dataclass(frozen=True)
class Judgement:
    """A run's advice: the items, and the rules that found something they cannot judge on this run
    (rule id -> why: a timing item of a busy run, not far outside the contention)."""

    items: list[Advice]
    unjudged: dict[str, str] = field(default_factory=dict)

    @property
    def notes(self) -> list[str]:
        return [f"cannot judge {rule}: {why}" for rule, why in self.unjudged.items()]


def judge(facts: Facts) -> Judgement:
    """Every rule that applies to this run, by severity (errors first), then by the largest bound;
    a rule outside its device or inputs is not run at all (it has nothing to read)."""
    items, unjudged = [], {}
    for rule in RULES:
        declared = scope_of(rule)
        if declared.missing(facts) is not None:
            continue
        found = rule(facts)
        if found is None:
            continue
        assert found.rule == rule_id(rule), f"{rule.__name__} names itself {found.rule}"
        item, why = declared.judge(facts, found)
        if item is not None:
            items.append(item)
        else:
            unjudged[found.rule] = str(why)
    items.sort(key=lambda i: (SEVERITIES.index(i.severity), -(i.impact.bound or 0.0)))
    return Judgement(items, unjudged)


def advise(facts: Facts) -> list[Advice]:
    """The items of judge(facts): what the advisor says about this run."""
    return judge(facts).items


__all__ = ["CORRECTNESS", "RULES", "RULE_IDS", "SCOPES", "SEVERITIES", "Action", "Advice", "Facts", "Impact",
           "Judgement", "Quantity", "Scope", "Verdict", "advise", "compare_advice", "judge"]

"""The advisor: from a run's own numbers to evidence-grounded advice, and whether advice held.

`advise(facts)` runs every rule (one module a family: correctness, validity, step, kernels, scale)
over a Facts (facts.py reads a run or a trace into one) and returns Advice items, most urgent
first; `compare_advice` says, for a run B that applied an item's action to run A, whether the
change worked and why (verdict.py). Rules are deterministic, documented with their thresholds
and sources in docs/advice.md, and a rule's id is its function's name with dashes.
"""

from __future__ import annotations

from tinylab.analysis.advice import correctness, kernels, scale, step, validity
from tinylab.analysis.advice.model import SEVERITIES, Action, Advice, Facts, Impact, Quantity
from tinylab.analysis.advice.verdict import Verdict, compare_advice

RULES = (*correctness.RULES, *validity.RULES, *step.RULES, *kernels.RULES, *scale.RULES)
RULE_IDS = tuple(rule.__name__.replace("_", "-") for rule in RULES)
#: The rules that say a run's results are wrong: a clean run must trigger none of them.
CORRECTNESS = tuple(rule.__name__.replace("_", "-") for rule in correctness.RULES)


def advise(facts: Facts) -> list[Advice]:
    """Every rule's item for this run, by severity (errors first), then by the largest bound."""
    items = []
    for rule in RULES:
        item = rule(facts)
        if item is not None:
            assert item.rule == rule.__name__.replace("_", "-"), f"{rule.__name__} names itself {item.rule}"
            items.append(item)
    return sorted(items, key=lambda i: (SEVERITIES.index(i.severity), -(i.impact.bound or 0.0)))


__all__ = ["CORRECTNESS", "RULES", "RULE_IDS", "SEVERITIES", "Action", "Advice", "Facts", "Impact", "Quantity",
           "Verdict", "advise", "compare_advice"]

"""Did the advice hold: B within the bound and out of the noise holds; B inside the noise, or beyond
the bound, does not; an item without a bound holds when B no longer triggers its rule."""

from __future__ import annotations

import pytest

from tinylab.analysis.advice import advise, compare_advice
from tinylab.analysis.advice.model import Facts
from tinylab.analysis.advice.verdict import check

from support.advice import config, eager_facts, summary


def _b(step_ms: float, spread: float = 0.02, **cfg) -> Facts:
    s = summary(step_ms_median=step_ms, step_ms_p10=step_ms * (1 - spread / 2), step_ms_p90=step_ms * (1 + spread / 2))
    return Facts("b", config=config(**cfg), device="cuda:0", summary=s, status="finished")


TRIED = dict(version="v2", qkv_fusion=True, sdpa=True, swiglu_fusion=True, torch_compile=True, cuda_graph=True)


@pytest.mark.parametrize("speedup, held, why", [
    (7.0, True, "the change worked: 7.00x, within the predicted"),
    (1.005, None, "cannot tell yet: the 95% interval on B/A spans 1"),  # one pair, no history: not sure
    (200.0, False, "beyond the bound"),
])
def test_a_bound_holds_when_b_gains_more_than_the_noise_and_no_more_than_the_bound(speedup, held, why):
    a = eager_facts()
    item = next(i for i in advise(a) if i.rule == "launch-bound")
    b = _b(a.summary.step_ms_median / speedup, **TRIED)
    verdict = check(item, a, b, advise(b))
    assert verdict.held is held and why in verdict.why
    assert verdict.predicted.startswith(f"at most {item.impact.bound:.1f}x")


def test_a_gain_inside_a_tight_machines_spread_did_not_work_and_a_loss_is_worse():
    """With this machine's repeats agreeing within 0.5 %, 1.005x is the same: the change did not work;
    a slower B is named worse, whatever the bound."""
    from tinylab.analysis.stats import Variation

    a = eager_facts()
    item = next(i for i in advise(a) if i.rule == "launch-bound")
    tight = Variation(0.002, 8, "test")
    same = check(item, a, _b(a.summary.step_ms_median / 1.005, **TRIED), [], variation=tight)
    assert same.held is False and "the same within ±5%" in same.why
    worse = check(item, a, _b(a.summary.step_ms_median * 3, **TRIED), [], variation=tight)
    assert worse.held is False and "is worse" in worse.why


def test_an_item_without_a_bound_holds_when_b_clears_its_rule():
    a = Facts("a", config=config(fault="missing-init"), summary=summary(initial_loss=40.0), status="finished")
    fixed = Facts("b", config=config(), summary=summary(initial_loss=6.9), status="finished")
    item = advise(a)[0]
    assert check(item, a, fixed, advise(fixed)).held is True
    still = Facts("b", config=config(), summary=summary(initial_loss=41.0), status="finished")
    verdict = check(item, a, still, advise(still))
    assert verdict.held is False and "B still shows it: initial loss 41.00" in verdict.why


def test_compare_advice_checks_the_tried_item_and_every_item_b_applied():
    a = eager_facts()
    b = _b(a.summary.step_ms_median / 5, **TRIED)
    result = compare_advice(advise(a), advise(b), a, b, tried="launch-bound")
    assert [v["rule"] for v in result["verdicts"]] == ["launch-bound"] and result["verdicts"][0]["held"]
    assert "launch-bound" in result["cleared"]
    unrelated = _b(a.summary.step_ms_median)
    assert compare_advice(advise(a), advise(unrelated), a, unrelated)["verdicts"] == []
    gone = compare_advice([], [], a, b, tried="launch-bound")
    assert gone["notes"] == ["run A no longer triggers launch-bound, the rule B was launched to try"]


def test_b_without_a_summary_cannot_tell():
    a = eager_facts()
    item = next(i for i in advise(a) if i.rule == "launch-bound")
    verdict = check(item, a, Facts("b", config=config(**TRIED), status="failed"), [])
    assert verdict.held is None and "has no summary (failed)" in verdict.why

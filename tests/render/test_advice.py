"""Advice as text: every line of `tinylab advise` within its width, an item's detail in the order
condition, measured, impact, action, lesson, evidence; the verdicts held or not in words."""

from __future__ import annotations

from tinylab.analysis.advice import advise
from tinylab.render.advice import detail, rows, text, verdict_lines

from support.advice import eager_facts, v4_graph_facts


def test_the_listing_fits_its_width_and_says_how_to_try_an_item():
    items = advise(eager_facts()) + advise(v4_graph_facts())
    for width in (80, 100):
        listing = text("RUN", "advice for run RUN", items, ["a note"], width)
        assert max(map(len, listing.splitlines())) <= width
    assert "tinylab advise RUN --try fp32-gemms" in text("RUN", "t", advise(v4_graph_facts()), [], 80)


def test_an_item_in_full_and_as_a_row():
    item = next(i for i in advise(v4_graph_facts()) if i.rule == "fp32-gemms")
    lines = detail(item, 80)
    heads = [line.split(":")[0].strip() for line in lines if line.startswith("  ") and not line.startswith("    ")]
    assert heads == ["measured", "impact", "action", "lesson", "evidence"]
    assert lines[0].startswith("→ suggestion  fp32-gemms: ")
    assert "tinylab exercises show v3-flash-attention --step 4" in "\n".join(lines)
    assert rows([item]) == [["→ suggestion", "fp32-gemms", item.measured.text, f"{item.impact.bound:.2f}x step"]]


def test_verdicts_read_held_or_not_in_words():
    result = {"verdicts": [{"rule": "launch-bound", "held": True, "predicted": "at most 8.1x (step median)",
                            "measured": "step median 44.00 -> 6.30 ms: 6.98x", "why": "the change worked"},
                           {"rule": "bad-init", "held": False, "predicted": "p", "measured": "m", "why": "w"}],
              "cleared": ["launch-bound"], "new": ["fp32-gemms"], "notes": []}
    lines = verdict_lines(result, 80)
    assert lines[0].startswith("✓ held  launch-bound: predicted at most 8.1x") and any("✗ not held  bad-init" in l
                                                                                      for l in lines)
    assert lines[-2:] == ["A's advice that B no longer triggers: launch-bound", "new in B: fp32-gemms"]
    assert verdict_lines({"verdicts": [], "cleared": [], "new": []}) == [
        "no advice item of A applies to B, and both trigger the same rules"]

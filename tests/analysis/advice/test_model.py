"""The advisor's shared parts: the noise gate and its confidence, actions kept only when the lab
accepts them, the flags they read as, and an item's JSON (exactly its nine fields)."""

from __future__ import annotations

import json

import pytest

from tinylab.analysis.advice import RULE_IDS, advise
from tinylab.analysis.advice.model import Facts, action, flags, percent, speedup

from support.advice import config, eager_facts, summary

KEYS = {"rule", "severity", "condition", "measured", "threshold", "impact", "action", "lesson", "evidence"}


def facts(spread: float, steps: int = 20) -> Facts:
    return Facts("r", config=config(), device="cuda:0",
                 summary=summary(step_ms_p10=10 * (1 - spread / 2), step_ms_p90=10 * (1 + spread / 2),
                                 measured_steps=steps))


@pytest.mark.parametrize("bound, spread, steps, sure", [
    (1.05, 0.10, 20, None),  # a 5% gain inside a 10% spread: no claim
    (1.12, 0.10, 20, "low"),
    (1.20, 0.10, 20, "medium"),
    (1.50, 0.10, 20, "high"),
    (1.50, 0.10, 8, "medium"),  # high needs 10 measured steps
    (1.50, 0.10, 3, "low"),  # under 5 steps the spread itself is rough
])
def test_a_speedup_claim_must_stand_out_of_the_runs_own_spread(bound, spread, steps, sure):
    impact = speedup(facts(spread, steps), bound, "why")
    assert (impact.confidence if impact else None) == sure
    if impact:
        assert impact.bound == bound and impact.metric == "step_ms_median"
        assert f"{spread:.0%}" in impact.text and f"{steps} steps" in impact.text


def test_without_a_spread_a_claim_is_made_with_low_confidence_and_says_why():
    impact = speedup(Facts("trace.json"), 3.0, "why")
    assert impact.confidence == "low" and "no step-time spread" in impact.text


def test_an_action_keeps_only_changes_the_lab_accepts():
    gpu = Facts("r", config=config(version="v3"), device="cuda:0")
    kept = action(gpu, "graph it", {"cuda_graph": True})
    assert kept.changes == {"cuda_graph": True} and kept.text.endswith("--cuda-graph")
    cpu = Facts("r", config=config(version="v3", device="cpu"), device="cpu")
    refused = action(cpu, "graph it", {"cuda_graph": True})
    assert refused.changes == {} and "needs a GPU" in refused.text
    v1 = action(Facts("r", config=config(), device="cuda:0"), "graph it", {"cuda_graph": True})
    assert v1.changes == {} and "does not apply to v1" in v1.text


def test_flags_read_as_the_run_flags():
    assert flags({"version": "v2", "torch_compile": True, "cuda_graph": False}) == \
        "--version v2 --torch-compile --no-cuda-graph"
    assert flags({"fault": None}) == ""


def test_small_shares_are_not_rounded_to_nothing():
    assert [percent(x) for x in (0.25, 0.015, 0.0004)] == ["25%", "1.5%", "<0.1%"]


def test_every_item_is_json_with_exactly_the_nine_keys():
    items = advise(eager_facts())
    assert items
    for item in items:
        doc = json.loads(json.dumps(item.to_json()))
        assert set(doc) == KEYS and doc["rule"] in RULE_IDS
        assert set(doc["measured"]) == {"value", "unit", "text"} and set(doc["impact"]) >= {"bound", "text"}


def test_every_lesson_names_a_step_of_a_shipped_scenario():
    import re
    from pathlib import Path

    from tinylab import exercises as ex
    from tinylab.analysis import advice

    scenarios = {s.id: len(s.steps) for s in ex.load_scenarios()}
    lessons = {m for path in Path(advice.__file__).parent.glob("*.py")
               for m in re.findall(r'lesson="([^"]+)"', path.read_text())}
    assert len(lessons) >= 10
    for lesson in lessons:
        scenario, _, number = lesson.partition(" step ")
        assert scenario in scenarios and 1 <= int(number) <= scenarios[scenario], lesson


def test_every_rule_is_documented_with_its_threshold_and_source():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "advice.md").read_text(encoding="utf-8")
    table = [line for line in page.splitlines() if line.startswith("| `")]
    for rule in RULE_IDS:
        row = next((line for line in table if line.startswith(f"| `{rule}`")), None)
        assert row is not None and row.count("|") == 6, rule  # rule, family, fires when, source, action

"""Where a rule applies (scope.py): every rule declares it, docs/advice.md lists it, a CPU run gets no
GPU-only advice, and a busy run's timing items stand only when their effect is far outside the
contention, otherwise a note says why the rule cannot judge."""

from __future__ import annotations

import dataclasses

import pytest

from tinylab.analysis.advice import RULE_IDS, RULES, SCOPES, advise, compare_advice, judge
from tinylab.analysis.advice.model import Facts
from tinylab.analysis.advice.scope import FAR_FACTOR, NEEDS, Scope, far, in_page, scope_of, table
from tinylab.core.events import RankEvent

from support.advice import config, ddp2_facts, eager_facts, summary, v4_graph_facts
from support.paths import REPO

#: Other processes wanted 1.9 cores of a 2-core machine the run left none of: busy by measured load.
LOADED = dict(others_cpu_cores=1.9, spare_cpu_cores=0.0)
TINY_CPU = config(device="cpu", hidden_dim=32, num_layers=1, num_heads=2, num_kv_heads=1, seq_len=8, batch_size=1,
                  profilers=[])


def _phases(share: float, **fields) -> dict:
    """fwd + bwd + opt medians that add up to `share` of the 10 ms step."""
    return dict(fwd_ms_median=4 * share, bwd_ms_median=5 * share, opt_ms_median=share, **fields)


def test_every_rule_declares_where_it_applies():
    assert set(SCOPES) == set(RULE_IDS) and all(isinstance(scope_of(rule), Scope) for rule in RULES)
    with pytest.raises(LookupError, match="declares no @scope"):
        scope_of(lambda f: None)


def test_a_misspelt_need_or_effect_fails_when_declared():
    with pytest.raises(ValueError, match="unknown needs"):
        Scope("why", needs=("trcae",))
    with pytest.raises(ValueError, match="unknown timed"):
        Scope("why", timed="fast")


def test_docs_list_every_rules_declared_applicability():
    page = (REPO / "docs" / "advice.md").read_text(encoding="utf-8")
    assert page == in_page(page, RULES), (
        "docs/advice.md's table of where each rule applies is not what the @scope declarations give; regenerate:\n"
        "  python -c \"from pathlib import Path; from tinylab.analysis.advice import RULES; "
        "from tinylab.analysis.advice.scope import in_page; p = Path('docs/advice.md'); "
        "p.write_text(in_page(p.read_text(encoding='utf-8'), RULES), encoding='utf-8')\"")
    for rule in RULES:
        row = "| `{}` | {} | {} | {} | {} |".format(rule.__name__.replace("_", "-"), *scope_of(rule).cells())
        assert row in table(RULES) and row in page


def test_a_busy_tiny_cpu_run_gets_no_gpu_only_advice_and_no_unsynced_timers():
    """The issue's case: contention put the phase medians at 64% of the step median on a CPU."""
    s = summary(**_phases(0.64), **LOADED, peak_mem_mb=None)
    f = Facts("cpu", config=TINY_CPU, status="finished", device="cpu", device_name="x86_64", summary=s)
    assert f.busy and "1.9 CPU cores" in f.busy
    judged = judge(f)
    assert not [i.rule for i in judged.items if SCOPES[i.rule].gpu]
    assert "unsynced-timers" not in {i.rule for i in judged.items} | set(judged.unjudged)  # silent: not its device
    quiet = dataclasses.replace(f, summary=summary(**_phases(0.22)))  # on a CPU even a huge gap is no GPU fault
    assert "unsynced-timers" not in {i.rule for i in advise(quiet)}


def test_a_gpu_only_rule_still_fires_on_a_gpu_runs_facts():
    f = Facts("gpu", config=config(fault="unsynced-timing"), status="finished", device="cuda:0",
              summary=summary(**_phases(0.22)))
    assert "unsynced-timers" in {i.rule for i in advise(f)}
    assert "launch-bound" in {i.rule for i in advise(eager_facts())}


def test_a_busy_runs_timing_item_is_withheld_with_a_note_unless_far_outside_the_contention():
    gpu = dict(config=config(), status="finished", device="cuda:0")
    near = Facts("busy", summary=summary(**_phases(0.64), others_gpu_share=0.9), **gpu)
    assert near.busy
    judged = judge(near)
    assert "unsynced-timers" not in {i.rule for i in judged.items}
    note = next(n for n in judged.notes if n.startswith("cannot judge unsynced-timers: "))
    assert "another process used the GPU in 90% of the samples" in note and "1.56x, is not far outside" in note
    quiet = dataclasses.replace(near, summary=summary(**_phases(0.64)))
    assert "unsynced-timers" in {i.rule for i in advise(quiet)}  # the same numbers on a quiet run
    far_out = Facts("busy", summary=summary(**_phases(0.22), others_gpu_share=0.9), **gpu)  # 4.5x, 4% spread
    item = next(i for i in advise(far_out) if i.rule == "unsynced-timers")
    assert "far outside the contention" in item.evidence[-1] and not judge(far_out).unjudged
    # the real eager H100 step on a shared GPU: a 57x bound stands out of any contention
    shared = eager_facts(summary=dataclasses.replace(eager_facts().summary, others_gpu_share=0.9))
    assert "launch-bound" in {i.rule for i in advise(shared)}


def test_a_busy_cpu_runs_straggler_must_stand_far_outside_its_own_spread():
    f = ddp2_facts(summary=dataclasses.replace(ddp2_facts().summary, **LOADED))  # spread 40% of the median
    assert f.busy
    def ranks(others: float, slow: float) -> tuple[RankEvent, ...]:
        return RankEvent(0, fwd_ms_median=others), RankEvent(1, fwd_ms_median=slow)

    near = dataclasses.replace(f, ranks=ranks(20.0, 38.0))  # 1.9x, 18 ms of a 48.9 ms step: a quiet run's item
    assert "straggler" in {i.rule for i in advise(dataclasses.replace(near, summary=ddp2_facts().summary))}
    judged = judge(near)
    assert "straggler" not in {i.rule for i in judged.items} and "1.90x, is not far" in judged.unjudged["straggler"]
    assert "straggler" in {i.rule for i in advise(dataclasses.replace(f, ranks=ranks(10.0, 30.0)))}  # 3x: 2 > 3 x 0.4


def test_a_rule_that_judges_quiet_runs_only_says_so_on_a_busy_run():
    f = v4_graph_facts()
    assert "gemm-bound" in {i.rule for i in advise(f)}
    busy = dataclasses.replace(f, summary=dataclasses.replace(f.summary, others_gpu_share=0.5))
    judged = judge(busy)
    assert "gemm-bound" not in {i.rule for i in judged.items} and "quiet runs only" in judged.unjudged["gemm-bound"]


@pytest.mark.parametrize("effect, spread, stands", [
    (FAR_FACTOR, None, True), (1.9, None, False),  # without a spread: the factor alone
    (2.4, 0.5, False), (2.6, 0.5, True),  # a gain above 3x a 50% spread
    (None, 0.01, False),  # no effect size: never far
])
def test_far_outside_the_contention_is_twice_and_three_spreads(effect, spread, stands):
    s = summary(step_ms_p10=10 * (1 - spread / 2), step_ms_p90=10 * (1 + spread / 2)) if spread is not None else None
    assert far(Facts("r", summary=s), effect) is stands


def test_a_rule_withheld_on_a_busy_b_has_not_cleared():
    gpu = dict(status="finished", device="cuda:0")
    a = Facts("a", config=config(fault="unsynced-timing"), summary=summary(**_phases(0.22)), **gpu)
    b = Facts("b", config=config(), summary=summary(**_phases(0.64), others_gpu_share=0.9), **gpu)
    jb = judge(b)
    result = compare_advice(advise(a), jb.items, a, b, "unsynced-timers", jb.unjudged)
    verdict = result["verdicts"][0]
    assert verdict["held"] is None and verdict["why"].startswith("cannot tell: unsynced-timers cannot judge run B")
    assert "unsynced-timers" not in result["cleared"]


def test_every_need_reads_the_facts_it_names():
    assert not any(has(Facts("trace.json")) for has, _ in NEEDS.values())
    assert all(NEEDS[need][0](ddp2_facts()) for need in ("summary", "ranks"))

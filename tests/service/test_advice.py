"""The advisor through the Lab: a run's advice, a trace file's, the try-it loop (run B launched
from an item, recording what it tries, checked against A's advice when it ends), and the one-line
errors of a bad request."""

from __future__ import annotations

import json

import pytest
from support.advice import A, bad_init_run
from support.exercises import HIDES_ITS_FAULT
from support.paths import FIX
from support.runs import make_run, output_tail, wait_for_status

from tinylab.analysis.advice.model import Action, action
from tinylab.core.errors import UserError
from tinylab.runs.store import TRIED_FILE
from tinylab.service.lab import Lab


@pytest.fixture
def lab(tmp_path) -> Lab:
    bad_init_run(tmp_path / "runs")
    return Lab(tmp_path / "runs")


def test_a_runs_advice_and_a_trace_files(lab):
    advised = lab.advise(A)
    assert [i.rule for i in advised.items] == ["bad-init"] and advised.source == A
    assert advised.title.startswith(f"advice for run {A} (v1 fp32 on x86_64, finished)")
    trace = lab.advise(str(FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz"))
    assert "launch-bound" in [i.rule for i in trace.items] and trace.title == "advice for the trace torchprof_trace.json.gz"
    assert all(set(doc) >= {"rule", "evidence"} for doc in trace.to_json())


def test_a_bad_request_is_one_line_naming_what_is_allowed(lab, tmp_path):
    with pytest.raises(UserError, match=f"run {A} has no advice 'launch-bound' \\(its advice: bad-init\\)"):
        lab.try_advice(A, "launch-bound")
    with pytest.raises(UserError, match="--kernels: run .* is v1, whose step launches no Triton kernel"):
        lab.advise(A, kernels="sm_90")
    with pytest.raises(UserError, match="--kernels: no compile target is known for x86_64"):
        lab.advise(A, kernels=True)
    make_run(tmp_path / "runs", "20260101-000000-cccc", [], fault="missing-init")  # no summary yet: no advice
    with pytest.raises(UserError, match="has no advice 'bad-init' \\(its advice: none\\)"):
        lab.try_advice("20260101-000000-cccc", "bad-init")


def test_trying_an_item_launches_b_and_its_verdict_says_the_advice_held(lab):
    b, item = lab.try_advice(A, "bad-init")
    assert wait_for_status(b, timeout=120) == "finished", output_tail(b)
    a_cfg, b_cfg = lab.run(A).config_dict, b.config_dict
    assert b_cfg["fault"] is None and b_cfg["label"] == f"try bad-init on {A}"
    assert {k: v for k, v in b_cfg.items() if k not in ("fault", "label")} == \
        {k: v for k, v in a_cfg.items() if k not in ("fault", "label")}  # same sizes, seed and profilers
    assert json.loads((b.dir / TRIED_FILE).read_text()) == {"a": A, "rule": "bad-init", "bound": None,
                                                           "metric": "initial_loss", "predicted": item.impact.text}
    result = lab.advice_verdict(A, b.id)
    (verdict,) = result["verdicts"]
    assert verdict["rule"] == "bad-init" and verdict["held"] is True and "no longer triggers bad-init" in verdict["why"]
    assert result["tried"] == "bad-init" and result["cleared"] == ["bad-init"]


def test_the_report_has_an_advice_section_a_run(lab):
    from tinylab.render.report import build_report

    run = lab.run(A)
    advice = {run.id: lab.advise(str(run.dir)).items}  # as `tinylab report` asks the Lab for it
    md = build_report([run], "md", advice=advice)
    assert "### Advice" in md and "| ✗ error | bad-init | initial loss 40.00 = 5.8x ln(1000) = 6.91 | - |" in md
    assert "- bad-init: the same run without --fault missing-init" in md
    assert "<h3>Advice</h3>" in build_report([run], "html", advice=advice)


def test_the_advice_on_a_step_that_hides_its_fault_does_not_name_it(tmp_path):
    """The Advice panel, `advise` and the report's advice said "the same run without --fault
    missing-init" of the run whose fault the learner is to find; after the answers, they do."""
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "faults.toml").write_text(HIDES_ITS_FAULT, encoding="utf-8")
    bad_init_run(tmp_path / "runs", label="exercise faults step 1")
    lab = Lab(tmp_path / "runs", exercises_root=tmp_path / "exercises")
    hidden = lab.advise(A)
    (item,) = [i for i in hidden.items if i.rule == "bad-init"]
    assert "missing-init" not in json.dumps(hidden.to_json()) + hidden.title and "fault" not in item.action.changes
    # the other actions are checked as they would run, not against fault='(hidden)' (which said
    # "not here: unknown fault '(hidden)': choose one of missing-init, ..." and dropped them)
    assert hidden.facts.config["fault"] == "(hidden)"
    assert action(hidden.facts, "train more steps", {"num_steps": 50}) == Action("train more steps: --num-steps 50", {"num_steps": 50})
    lab.reveal_answers("faults", 1)
    revealed = lab.advise(A)
    (item,) = [i for i in revealed.items if i.rule == "bad-init"]
    assert "missing-init" in item.action.text and item.action.changes == {"fault": None}
    assert not any("(hidden)" in i.action.text for i in hidden.items + revealed.items)

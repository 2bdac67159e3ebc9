"""The fault catalogue is the advisor's test suite, on a CPU: a run with each fault whose effect a CPU
shows triggers its rule, naming the measured value, and the clean run triggers no correctness rule
(the GPU-only faults are checked by tests/gpu/advice_check.py; the straggler, which needs two ranks,
by tests/exercises/test_scale_out_lessons.py on the straggler lesson's own runs).

The runs train in this process (no interpreter start-up), at the smallest sizes the Triton kernels
take, one after the other, once for the module."""

from __future__ import annotations

import io
import json

import pytest

from tinylab.analysis.advice import CORRECTNESS, advise
from tinylab.analysis.advice.facts import run_facts
from tinylab.config import RunConfig
from tinylab.runs.store import RunStore
from tinylab.training.faults import CATALOGUE
from tinylab.training.trainer import run_training

SMALL = dict(device="cpu", hidden_dim=32, num_layers=1, num_heads=2, num_kv_heads=1, seq_len=8, batch_size=1,
             num_steps=3, warmup_steps=1)
RUNS = {
    "clean": dict(version="v1", profilers=["pytorch"], profile_steps=1),
    "missing-init": dict(version="v1", fault="missing-init"),
    "detached-backward": dict(version="v3", fault="detached-backward"),
    "non-contiguous": dict(version="v3", fault="non-contiguous", profilers=["pytorch"], profile_steps=1),
}
#: fault -> the rule its run must trigger
RULE = {"missing-init": "bad-init", "detached-backward": "untrained-parameters", "non-contiguous": "layout-copies"}


@pytest.fixture(scope="module")
def advice(tmp_path_factory) -> dict:
    store = RunStore(tmp_path_factory.mktemp("fault-runs"))
    out = {}
    for name, settings in RUNS.items():
        cfg = RunConfig(**{**SMALL, **settings}).validate()
        run = store.create(cfg)
        run_training(cfg, run.dir, out=io.StringIO())
        out[name] = advise(run_facts(run))
    return out


def test_every_cpu_fault_of_the_catalogue_is_covered_here_or_named_elsewhere():
    cpu = {name for name, fault in CATALOGUE.items() if fault.observable_on == "cpu"}
    assert cpu - set(RULE) == {"straggler"}  # two ranks: the straggler lesson's runs check it


def test_the_clean_run_triggers_no_correctness_rule_and_its_json_has_the_nine_keys(advice):
    rules = {item.rule for item in advice["clean"]}
    assert not rules & set(CORRECTNESS), rules
    for item in advice["clean"]:
        assert list(json.loads(json.dumps(item.to_json()))) == ["rule", "severity", "condition", "measured",
                                                                "threshold", "impact", "action", "lesson", "evidence"]


@pytest.mark.parametrize("fault", list(RULE))
def test_each_fault_triggers_its_rule_naming_the_measured_value(advice, fault):
    item = next((i for i in advice[fault] if i.rule == RULE[fault]), None)
    assert item is not None, [i.rule for i in advice[fault]]
    assert item.measured.value is not None and item.action.changes == {"fault": None}
    if fault == "missing-init":
        assert item.measured.value > 3 * 6.9 and f"initial loss {item.measured.value:.2f}" in item.measured.text
    elif fault == "detached-backward":
        assert item.measured.value < 8 and f"{item.measured.value:.0f} of 8 parameter tensors" in item.measured.text
    else:  # one norm before attention, one before the FFN, the final one: a copy each
        assert item.measured.value == 3 and "3 layout copies (aten::contiguous)" in item.measured.text

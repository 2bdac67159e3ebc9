"""The v3 flash-attention and SwiGLU scenarios' CPU steps, run for real (`tinylab exercises check
... --device cpu`, three at once): the online softmax equals PyTorch's attention across two key
blocks, bf16 stays close to fp32, and the naive SwiGLU kernel computes the same FFN; and the
checks can fail."""

from __future__ import annotations

import re

import pytest
from support.exercises import check_steps

from tinylab import exercises as ex

STEPS = [("v3-flash-attention", 1), ("v3-flash-attention", 4), ("v3-swiglu", 1)]


@pytest.fixture(scope="module")
def lesson_runs(tmp_path_factory):
    return check_steps(tmp_path_factory.mktemp("v3-lessons"), STEPS)


@pytest.mark.parametrize(("scenario", "number"), STEPS)
def test_cpu_steps_pass_on_cpu(lesson_runs, scenario, number):
    got = lesson_runs[(scenario, number)]
    assert got["rc"] == 0, got["stdout"] + got["stderr"]
    # every check that ran passed; GPU-only ones are skipped, and the verdict says so
    assert re.search(r": (all checks passed|\d+ of \d+ checks ran and passed \(over the run\); \d+ skipped)",
                     got["stdout"]) and "FAIL" not in got["stdout"]
    assert all(r.status() == "finished" for r in got["runs"]) and len(got["runs"]) == 2


def evaluate(scenario: str, number: int, run, baseline) -> dict[str, str]:
    step = ex.get_step(ex.find_scenario(ex.load_scenarios(), scenario), number)
    return {r.name: r.status for r in ex.evaluate_checks(step, run.record(), baseline.record(), on_gpu=False)}


def test_the_online_softmax_step_spans_two_key_blocks(lesson_runs):
    v1, v3 = lesson_runs[("v3-flash-attention", 1)]["runs"]
    assert v1.config_dict["version"] == "v1" and v3.config_dict["version"] == "v3"
    assert v3.config_dict["seq_len"] == 128  # the interpreter's attention blocks hold 64 keys


def test_bf16_checks_can_fail(lesson_runs):
    fp32, bf16 = lesson_runs[("v3-flash-attention", 4)]["runs"]
    assert fp32.config_dict["precision"] == "fp32" and bf16.config_dict["precision"] == "bf16"
    assert evaluate("v3-flash-attention", 4, fp32, fp32)["not-identical"] == "fail"

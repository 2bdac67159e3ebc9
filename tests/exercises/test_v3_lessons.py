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


def test_the_intra_kernel_step_reads_proton_regions(tmp_path):
    """Step 5 over a run whose proton instrumentation tree is the H100's (tests/fixtures/proton): the
    shares are the tree's cycles over the kernel's regions; without such a profile it says why; on
    a CPU both checks are skipped with the reason."""
    import json
    import shutil

    from support.exercises import make_run
    from support.paths import FIX

    step = ex.get_step(ex.find_scenario(ex.load_scenarios(), "v3-flash-attention"), 5)
    assert step.preset["profilers"] == ["proton"] and step.preset["proton_backend"] == "instrumentation"
    config = {"version": "v3", "seq_len": 1024, "profilers": ["proton"], "proton_backend": "instrumentation"}
    run = make_run(tmp_path, "gpu", device="cuda:0", config=config)
    (run.dir / "profiles" / "proton").mkdir(parents=True)
    shutil.copy(FIX / "proton" / "instrument_attn_fwd.hatchet", run.dir / "profiles" / "proton" / "proton.hatchet")
    with open(run.dir / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"event": "profile", "time": 4.0, "tool": "proton", "kernel_table": None,
                             "artifacts": {"proton.hatchet": "profiles/proton/proton.hatchet"}}) + "\n")
    regions = {r["frame"]["name"]: r["metrics"]["cycles"] for r in
               json.loads((FIX / "proton" / "instrument_attn_fwd.hatchet").read_text())[0]["children"][0]["children"]}
    share = {name: 100 * cycles / sum(regions.values()) for name, cycles in regions.items()}
    results = {r.name: r for r in ex.evaluate_checks(step, run.record(), None, on_gpu=True)}
    assert results["loops-dominate"].status == "pass" and results["below-diagonal-dominates"].status == "pass"
    assert results["loops-dominate"].value == pytest.approx(share["below_diagonal"] + share["diagonal"], abs=0.01)  # shown rounded
    plain = make_run(tmp_path, "plain", device="cuda:0", config={"version": "v3"})
    missed = {r.name: r for r in ex.evaluate_checks(step, plain.record(), None, on_gpu=True)}
    assert missed["loops-dominate"].status == "fail"
    assert "not profiled with --profile proton --proton-backend instrumentation" in missed["loops-dominate"].detail
    skipped = {r.name: r for r in ex.evaluate_checks(step, None, None, on_gpu=False)}
    assert all(r.status == "skip" and "cycle counter" in r.detail for r in skipped.values())

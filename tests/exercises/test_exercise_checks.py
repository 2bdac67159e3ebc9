"""evaluate_checks over hand-written run folders: pass, fail, skip, and values that were not measured."""

from __future__ import annotations

import json

import pytest
from support.exercises import make_run

from tinylab import exercises as ex
from tinylab.config import RunConfig
from tinylab.exercises import CheckSpec, Step


def step(*specs: tuple, baseline: dict | None = None) -> Step:
    checks = [CheckSpec(name, expr, f"description of {name}", gpu, "needs a GPU because" if gpu else "")
              for name, expr, gpu in specs]  # fmt: skip
    return Step(1, "t", "text", {}, {}, baseline, checks, [], [])


def results(st: Step, run, baseline=None, on_gpu=False) -> dict:
    return {r.name: r for r in ex.evaluate_checks(st, run.record(), baseline.record() if baseline else None, on_gpu)}


KERNELS = [
    {"name": "ampere_sgemm_128x64_tn", "calls": 40, "total_ns": 6e6},
    {"name": "void at::native::elementwise_kernel<copy>", "calls": 300, "total_ns": 2e6},
    {"name": "_rmsnorm_fwd_kernel", "calls": 17, "total_ns": 1e6},
    {"name": "direct_copy_kernel_cuda", "calls": 5, "total_ns": 1e6},
]


def test_pass_fail_and_values(tmp_path):
    run = make_run(tmp_path, summary={"initial_loss": 62.5, "params_trained": 1, "params_total": 14})
    st = step(
        ("high", "initial_loss > 3 * ln(vocab_size)", False),
        ("frozen", "params_trained < params_total", False),
        ("trains", "params_trained == params_total", False),
        ("ratio", "0.1 < fwd_ms / step_ms < 0.5", False),
    )
    got = results(st, run)
    assert got["high"].status == "pass" and got["high"].value == 62.5
    assert got["high"].detail == "initial_loss=62.5, vocab_size=1000"
    assert got["frozen"].status == "pass" and got["trains"].status == "fail"
    assert got["trains"].detail == "params_trained=1, params_total=14"
    assert got["ratio"].status == "pass" and got["ratio"].value == pytest.approx(0.3125)
    assert got["high"].description == "description of high" and got["high"].expr.startswith("initial_loss")


def test_gpu_checks_are_skipped_on_cpu_with_the_reason(tmp_path):
    run = make_run(tmp_path)
    st = step(("phases", "abs(fwd_ms + bwd_ms + opt_ms - step_ms) / step_ms > 0.5", True))
    (skipped,) = ex.evaluate_checks(st, run.record(), None, on_gpu=False)
    assert (skipped.status, skipped.value, skipped.detail) == ("skip", None, "GPU-only: needs a GPU because")
    (ran,) = ex.evaluate_checks(st, run.record(), None, on_gpu=True)
    assert ran.status == "fail" and ran.value == pytest.approx(0.0)
    assert not ex.step_passed([skipped]) and not ex.step_passed([ran])


def test_values_that_were_not_measured_fail_with_a_reason(tmp_path):
    run = make_run(tmp_path, device="cpu")
    st = step(
        ("mem", "peak_mem_mb > 100", False),
        ("top", 'top_kernel_category == "gemm"', False),
        ("calls", 'kernel_calls("copy") > 0', False),
        ("flops", "deepspeed_fwd_flops > 0", False),
        ("base", "fwd_ms > baseline.fwd_ms", False),
        ("mfu", "mfu < 0.5", False),
    )
    got = results(st, run)
    assert all(r.status == "fail" and r.value is None for r in got.values())
    assert got["mem"].detail == "not measured: peak_mem_mb (CPU runs track no device memory)"
    assert "was not profiled (add --profile pytorch)" in got["top"].detail
    assert "was not profiled (add --profile pytorch)" in got["calls"].detail
    assert "not profiled with --profile deepspeed" in got["flops"].detail
    assert "baseline run has not been run" in got["base"].detail
    assert "no peak rate is known" in got["mfu"].detail


def test_failed_and_running_runs(tmp_path):
    failed = make_run(tmp_path, "failed", error={"type": "FloatingPointError", "message": "loss became nan"})
    running = make_run(tmp_path, "running", with_summary=False)
    st = step(("trains", "params_trained == params_total", False))
    (r,) = ex.evaluate_checks(st, failed.record(), None, False)
    assert r.status == "fail" and "the run failed: FloatingPointError: loss became nan" in r.detail
    (r,) = ex.evaluate_checks(st, running.record(), None, False)
    assert r.status == "fail" and "has no summary yet" in r.detail


def test_kernel_table_names_and_functions(tmp_path):
    base = make_run(tmp_path, "base", kernels=KERNELS[:3])
    run = make_run(tmp_path, "run", kernels=KERNELS)
    st = step(
        ("top", 'top_kernel_category == "gemm" and contains(top_kernel_name, "SGEMM")', False),
        ("counts", "kernel_count == 4 and kernel_launches == 362 and gemm_calls == 40", False),
        ("share", "gemm_pct > 59 and gemm_pct < 61 and abs(kernel_total_ms - 10) < 0.001", False),
        ("copies", 'kernel_calls("copy") > baseline.kernel_calls("copy")', False),
        ("norm", "norm_ms == baseline.norm_ms and kernel_ms(\"rmsnorm\") == 1", False),
        ("pct", 'abs(kernel_pct("rmsnorm") - 10) < 0.001', False),
        ("absent", "memcpy_calls == 0 and triton_ms == 0", False),
        baseline={},
    )
    got = results(st, run, base)
    assert {name: r.status for name, r in got.items()} == dict.fromkeys(got, "pass"), got
    assert got["copies"].value == 305 and 'baseline.kernel_calls("copy")=300' in got["copies"].detail


def test_deepspeed_flops_are_read_from_the_profile(tmp_path):
    run = make_run(tmp_path)
    prof = run.dir / "profiles" / "deepspeed"
    prof.mkdir(parents=True)
    (prof / "flops.json").write_text(json.dumps({"flops": 5e10, "fwd_latency_s": 0.012}), encoding="utf-8")
    with open(run.dir / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": "profile", "tool": "deepspeed", "kernel_table": None,
                             "artifacts": {"flops.json": "profiles/deepspeed/flops.json"}, "note": "forward only"}) + "\n")
    st = step(("agree", "abs(3 * deepspeed_fwd_flops / model_flops_per_step - 1) < 0.3 and deepspeed_fwd_ms == 12", False))
    (r,) = ex.evaluate_checks(st, run.record(), None, False)
    assert r.status == "pass", r


def test_config_values_come_from_the_run(tmp_path):
    run = make_run(tmp_path, config={"version": "v2", "sdpa": False, "fault": None, "batch_size": 4})
    st = step(("cfg", 'version == "v2" and sdpa == false and qkv_fusion == true and fault == "" and batch_size == 4', False))
    (r,) = ex.evaluate_checks(st, run.record(), None, False)
    assert r.status == "pass", r


def test_arithmetic_errors_fail_the_check_only(tmp_path):
    run = make_run(tmp_path, summary={"opt_ms_median": 0.0})
    st = step(("div", "fwd_ms / opt_ms > 1", False), ("ok", "fwd_ms > 1", False))
    got = results(st, run)
    assert got["div"].status == "fail" and got["div"].detail.startswith("cannot evaluate: column 8: division by zero")
    assert got["ok"].status == "pass"


def test_corrupt_records_never_crash(tmp_path):
    """A summary of the wrong shape is dropped by the event reader: the checks say it is missing."""
    run = make_run(tmp_path, summary={"fwd_ms_median": "fast"})
    with open(run.dir / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"event": "summ')  # a half-written last line
    st = step(("fwd", "fwd_ms > 1", False), ("cfg", "batch_size == 8", False))
    got = results(st, run)
    assert got["fwd"].status == "fail" and got["fwd"].detail.startswith("not measured: fwd_ms (the run has no summary")
    assert got["cfg"].status == "pass"


def test_step_passed_needs_one_check_that_ran():
    make = lambda status: ex.CheckResult("n", "e", "d", status, None, "")  # noqa: E731
    assert ex.step_passed([make("pass"), make("skip")])
    assert not ex.step_passed([make("skip")])
    assert not ex.step_passed([make("pass"), make("fail")])
    assert not ex.step_passed([])


def test_the_verdict_says_what_ran_and_what_was_skipped():
    """'all checks passed' only when nothing was skipped; else what ran (over what) and why the rest did not."""
    def make(status: str, on: str = "run", detail: str = "") -> ex.CheckResult:
        return ex.CheckResult("n", "e", "d", status, None, detail, on)

    no_tool = "rocprofv3 is not available here: rocprofv3 not found on PATH"
    assert ex.verdict([make("pass"), make("pass", "recorded")]) == "all checks passed"
    assert ex.verdict([make("skip", detail=no_tool), make("pass", "recorded"), make("pass", "recorded")]) == (
        f"2 of 3 checks ran and passed (over the recorded output); 1 skipped ({no_tool})")
    assert ex.verdict([make("pass"), make("pass", "recorded"), make("skip", detail="GPU-only: a"),
                       make("skip", detail="GPU-only: b")]) == (
        "2 of 4 checks ran and passed (1 over the recorded output); 2 skipped (each says why)")
    assert ex.verdict([make("fail"), make("pass"), make("skip", detail="GPU-only: a")]) == (
        "1 of 2 checks failed; 1 skipped (GPU-only: a)")
    assert ex.verdict([make("skip", detail="GPU-only: a")]) == "no check could run here: 1 skipped (GPU-only: a)"


# ------------------------------------------------------------------------------ compiled kernels
@pytest.fixture
def compiles(monkeypatch):
    from support.anatomy import fake_compiles

    return fake_compiles(monkeypatch)


def anatomy_step(*specs: tuple[str, str], baseline: dict | None = None) -> Step:
    checks = [CheckSpec(name, expr, f"description of {name}", False, "", "anatomy") for name, expr in specs]
    return Step(1, "t", "text", {"version": "v4"}, {}, baseline, checks, [], [])


def test_compiled_kernels_are_read_for_the_step_and_its_baseline(compiles):
    st = anatomy_step(
        ("regs", 'compiled_regs("attn_fwd", "gfx942") == 126 and baseline.compiled_lds("attn_fwd", "sm_90") == 28800'),
        ("spills", 'compiled_spills("attn_bwd_dkdv.2", "sm_90") > 0 and compiled_spills("attn_fwd", "sm_90") == 0'),
        ("limit", 'compiled_limiter("attn_fwd", "sm_90") == "registers" and compiled_occupancy("attn_fwd", "sm_90") == 8'),
        ("swept", 'compiled_regs("attn_fwd", "gfx942", "BLOCK_N", 128) > compiled_regs("attn_fwd", "gfx942")'),
        ("fails", 'compiled_regs("attn_fwd", "sm_90") < baseline.compiled_regs("attn_fwd", "sm_90")'),
        baseline={"version": "v3"},
    )
    configs = {"run": RunConfig(version="v4"), "baseline": RunConfig(version="v3")}
    got = {r.name: r for r in ex.evaluate_checks(st, None, None, False, compiled=configs)}
    assert {n: r.status for n, r in got.items()} == {"regs": "pass", "spills": "pass", "limit": "pass", "swept": "pass",
                                                     "fails": "fail"}
    assert got["swept"].detail == ('compiled_regs("attn_fwd", "gfx942", "BLOCK_N", 128)=166, '
                                   'compiled_regs("attn_fwd", "gfx942")=126')
    # one compile for both roles (same sizes), every target and kernel at once; one sweep
    assert compiles == [("analyze", "fp32", ("gfx942", "sm_90"), ("attn_bwd_dkdv.2", "attn_fwd")),
                        ("sweep", "attn_fwd", "BLOCK_N", (128,), ("gfx942",))]


def test_what_did_not_compile_fails_with_the_reason(compiles):
    st = anatomy_step(
        ("broken", 'compiled_regs("swiglu_fwd", "gfx950") > 0'),
        ("half", 'compiled_regs("attn_fwd", "gfx942", "BLOCK_N", 64.5) > 0'),
        ("v1", 'baseline.compiled_regs("attn_fwd", "gfx942") > 0'),
        baseline={"version": "v1"},
    )
    got = {r.name: r for r in ex.evaluate_checks(st, None, None, False, compiled={
        "run": RunConfig(version="v4"), "baseline": RunConfig(version="v1")})}
    assert got["broken"].detail == ("not measured: compiled_regs('swiglu_fwd', 'gfx950') "
                                    "(it does not compile for gfx950: LLVM ERROR: cannot select)")
    assert "BLOCK_N takes an integer, not 64.5" in got["half"].detail
    assert "no planned step launches what a v1 step" in got["v1"].detail
    assert all(r.status == "fail" for r in got.values())
    unknown = anatomy_step(("nope", 'compiled_regs("nope", "gfx942") > 0'))
    (result,) = ex.evaluate_checks(unknown, None, None, False, compiled={"run": RunConfig(version="v3")})
    assert result.status == "fail" and "unknown kernel 'nope'" in result.detail
    broken = anatomy_step(("crash", 'compiled_regs("crash", "gfx942") > 0'))
    (result,) = ex.evaluate_checks(broken, None, None, False, compiled={"run": RunConfig(version="v3")})
    assert result.status == "fail" and "compiling failed: RuntimeError: a planning worker died" in result.detail


def test_the_compiled_configs_are_the_presets_at_gpu_sizes(compiles):
    st = anatomy_step(("regs", 'compiled_regs("attn_fwd", "gfx942") > 0'), baseline={"version": "v3"})
    st.preset, st.cpu_preset = {"version": "v4", "precision": "bf16"}, {"hidden_dim": 64, "num_heads": 4}
    configs = ex.compiled_configs(st, {"seq_len": 256, "fault": "non-contiguous"})
    assert configs["run"].hidden_dim == 512 and configs["run"].seq_len == 256 and configs["run"].precision == "bf16"
    assert configs["run"].fault == "non-contiguous" and configs["baseline"].fault is None
    assert ex.compiled_configs(step(("x", "steps > 0", False)), {}) == {}

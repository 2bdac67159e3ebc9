"""The exercises (tinylab/exercises/): scenario files load, or each problem is reported as
FILE:LINE: problem and nothing runs; evaluate_checks over hand-written run folders (pass, fail,
skip, and values that were not measured); and progress per user, a JSON file written atomically
that survives failed attempts. The shipped scenarios themselves: tests/exercises/."""

from __future__ import annotations

import builtins
import dataclasses
import json
import textwrap

import pytest
from support.exercises import make_run

from tinylab import exercises as ex
from tinylab.exercises import checks
from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.exercises import CheckSpec, Step


# ------------------------------------------------------------------------------ scenario files
GOOD = '''\
id = "foo"
title = "A test scenario"
level = "beginner"
minutes = 10
summary = "Checks the loader."

[defaults]
preset = { version = "v1", num_steps = 6, warmup_steps = 2 }
cpu_preset = { hidden_dim = 64, num_layers = 2, num_heads = 4, num_kv_heads = 2 }

[[steps]]
title = "First"
text = "Some *markdown*."
preset = { fault = "missing-init" }
checks = [
  { name = "loss-high", expr = "initial_loss > 3 * ln(vocab_size)", description = "high" },
]
hints = ["one", "two"]

[[steps.questions]]
prompt = "Why?"
answer = "Because."

[[steps]]
title = "Second"
text_file = "foo/02.md"
baseline = { version = "v1" }

[[steps.checks]]
name = "faster"
expr = "samples_per_s > baseline.samples_per_s"
description = "faster"
needs_gpu = true
gpu_reason = "timing"
'''


def write(tmp_path, text: str, name: str = "foo"):
    root = tmp_path / "exercises"
    (root / "foo").mkdir(parents=True, exist_ok=True)
    (root / "foo" / "02.md").write_text("# Second step\n", encoding="utf-8")
    (root / f"{name}.toml").write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def problem(tmp_path, text: str) -> str:
    root = write(tmp_path, text)
    with pytest.raises(ex.ScenarioError) as info:
        ex.load_scenarios(root)
    assert isinstance(info.value, UserError)
    return str(info.value)


def test_good_file_loads(tmp_path):
    (scenario,) = ex.load_scenarios(write(tmp_path, GOOD))
    assert scenario.id == "foo" and scenario.minutes == 10 and len(scenario.steps) == 2
    first, second = scenario.steps
    assert first.number == 1 and first.preset["fault"] == "missing-init" and first.preset["version"] == "v1"
    assert first.cpu_preset["hidden_dim"] == 64 and first.baseline is None
    assert first.hints == ["one", "two"] and first.questions[0].answer == "Because."
    assert second.text == "# Second step\n"
    assert second.baseline["version"] == "v1" and "fault" not in second.baseline
    assert second.checks[0].needs_gpu and second.checks[0].gpu_reason == "timing"


def test_step_config_applies_cpu_preset_and_overrides(tmp_path):
    (scenario,) = ex.load_scenarios(write(tmp_path, GOOD))
    step = scenario.steps[0]
    cpu = ex.step_config(step, "cpu", {"num_steps": 8, "profilers": ["pytorch"], "device": "cuda"})
    assert (cpu.device, cpu.hidden_dim, cpu.num_steps, cpu.fault, cpu.profilers) == ("cpu", 64, 8, "missing-init", ["pytorch"])
    gpu = ex.step_config(step, "cuda", {})
    assert (gpu.device, gpu.hidden_dim) == ("cuda", 512)
    base = ex.baseline_config(scenario.steps[1], "cpu", {"fault": "missing-init", "batch_size": 2})
    assert base.fault is None and base.batch_size == 2 and base.hidden_dim == 64
    assert ex.baseline_config(step, "cpu", {}) is None


def line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(
    "old, new, where, message",
    [
        ('minutes = 10', 'minutes = "ten"', "minutes =", "minutes must be an integer, got a string 'ten'"),
        ('level = "beginner"', 'level = "expert"', "level =", "level 'expert' must be one of"),
        ('id = "foo"', 'id = "bar"', "id =", "id 'bar' must match the file name 'foo'"),
        ('summary = "Checks the loader."', 'summary = "x"\ncolour = "red"', "colour", "unknown key 'colour'"),
        ('hints = ["one", "two"]', 'hint = ["one"]', "hint =", "unknown key 'steps[1].hint' (did you mean 'hints'?)"),
        ('fault = "missing-init"', 'fault = "segfault"', "fault =", "unknown fault 'segfault'"),
        ('fault = "missing-init"', 'fault = "non-contiguous"', "fault =", "fault 'non-contiguous' applies to v3, v4, not v1"),
        ('version = "v1", num_steps', 'version = "v9", num_steps', "version =", "unknown version 'v9'"),
        ('preset = { fault = "missing-init" }', 'preset = { num_stepz = 3 }', "num_stepz", "unknown run setting 'num_stepz' in preset (did you mean 'num_steps'?)"),
        ('preset = { fault = "missing-init" }', 'preset = { batch_size = "8" }', "batch_size", "preset.batch_size must be an integer, got '8'"),
        ('preset = { fault = "missing-init" }', 'preset = { device = "cuda" }', "device", "preset may not set 'device'"),
        ('preset = { fault = "missing-init" }', 'preset = { num_heads = 5 }', "num_heads = 5", "--num-heads 5 must divide --hidden-dim 512"),
        ('preset = { fault = "missing-init" }', 'preset = { learning_rate = inf }', "learning_rate", "--learning-rate must be a finite number > 0 and <= 10, got inf"),
        ('preset = { fault = "missing-init" }', 'preset = { seed = 18446744073709551615 }', "seed", "--seed must be an integer from 0 to 4294967295"),
        ('preset = { fault = "missing-init" }', 'preset = { profilers = ["pytorch", "pytorch"] }', "profilers", "profiler 'pytorch' is asked for twice"),
        ('num_kv_heads = 2 }', 'num_kv_heads = 2, fault = "missing-init" }', "cpu_preset", "cpu_preset may not change 'fault'"),
        ('"initial_loss > 3 * ln(vocab_size)"', '"initial_loss > 3 * lnn(vocab_size)"', "loss-high", "check 'loss-high': column 20: unknown function 'lnn'"),
        ('"initial_loss > 3 * ln(vocab_size)"', '"initial_loss >"', "loss-high", "check 'loss-high': column 15: expected a value"),
        ('"initial_loss > 3 * ln(vocab_size)"', '"initial_loss + 1"', "loss-high", "gives a number, not true/false"),
        ('"initial_loss > 3 * ln(vocab_size)"', '"initial_loss > baseline.initial_loss"', "loss-high", "needs a baseline run"),
        ('"initial_loss > 3 * ln(vocab_size)"', """"__import__('os').system('touch /tmp/pwned') == 0\"""", "loss-high", "unexpected character '.'"),
        ('"initial_loss > 3 * ln(vocab_size)"', '"open(\\"x\\") == 1"', "loss-high", "unknown function 'open'"),
        ('expr = "samples_per_s > baseline.samples_per_s"', 'expr = "samples_per_s > baseline.samplez_per_s"', "expr = \"samples", "unknown name 'baseline.samplez_per_s'"),
        ('gpu_reason = "timing"', '', "needs_gpu = true", "check 'faster' needs a GPU: say why in `gpu_reason`"),
        ('name = "faster"', 'name = "Faster!"', 'name = "Faster!"', "check name 'Faster!' must be lower-case"),
        ('text_file = "foo/02.md"', 'text_file = "foo/03.md"', "text_file", "file 'foo/03.md' not found"),
        ('text_file = "foo/02.md"', 'text_file = "../../etc/passwd.md"', "text_file", "points outside the exercises folder"),
        ('text_file = "foo/02.md"', 'text_file = "foo/02.py"', "text_file", "must name a .md file"),
        ('text_file = "foo/02.md"', 'text_file = "foo/02.md"\ntext = "also"', 'text = "also"', "needs exactly one of `text`"),
        ('answer = "Because."', 'answer = 42', "answer = 42", "answer must be a string, got an integer 42"),
        ('prompt = "Why?"', 'promt = "Why?"', "promt", "unknown key 'steps[1].questions[1].promt'"),
        ('description = "faster"', '', "[[steps.checks]]", "missing required key 'steps[2].checks[1].description'"),
    ],
)
def test_problems_are_reported_with_file_and_line(tmp_path, old, new, where, message):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    got = problem(tmp_path, text)
    expected_line = line_of(text, where)
    assert got.startswith(f"exercises/foo.toml:{expected_line}: "), got
    if message is not None:
        assert message in got, got


def test_duplicate_check_names(tmp_path):
    text = GOOD.replace('name = "faster"', 'name = "dup"').replace(
        'gpu_reason = "timing"', 'gpu_reason = "timing"\n\n[[steps.checks]]\nname = "dup"\nexpr = "true"\ndescription = "x"'
    )
    got = problem(tmp_path, text)
    second = [i for i, line in enumerate(text.splitlines(), 1) if line == 'name = "dup"'][1]
    assert got == f"exercises/foo.toml:{second}: step 2 has two checks named 'dup'"


def test_toml_syntax_error_has_the_parser_line(tmp_path):
    text = GOOD.replace('title = "First"', 'title = "First')
    got = problem(tmp_path, text)
    line = line_of(text, 'title = "First')
    assert got.startswith(f"exercises/foo.toml:{line}: invalid TOML: "), got


def test_steps_must_exist_and_have_checks(tmp_path):
    got = problem(tmp_path, "steps = []\n" + GOOD[: GOOD.index("[[steps]]")])
    assert "at least one [[steps]]" in got
    no_checks = GOOD.replace('checks = [\n  { name = "loss-high", expr = "initial_loss > 3 * ln(vocab_size)", description = "high" },\n]\n', "")
    got = problem(tmp_path, no_checks)
    assert got.startswith(f"exercises/foo.toml:{line_of(no_checks, '[[steps]]')}: step 1 has no checks"), got


def test_markdown_with_toml_lookalikes_does_not_confuse_lines(tmp_path):
    text = GOOD.replace('text = "Some *markdown*."', 'text = """\n[not a table]\nfake = "key"\n"""')
    text = text.replace('hint = ', 'hint = ').replace('hints = ["one", "two"]', 'hintz = ["one"]')
    got = problem(tmp_path, text)
    assert got.startswith(f"exercises/foo.toml:{line_of(text, 'hintz')}: "), got


def test_loading_and_checking_never_call_eval_or_exec(tmp_path, monkeypatch):
    """Scenario data is parsed, never executed: loading and evaluating work with eval/exec gone."""
    from support.exercises import make_run

    root = write(tmp_path, GOOD)
    run = make_run(tmp_path, summary={"initial_loss": 62.0})
    ex.evaluate_checks(ex.load_scenarios(root)[0].steps[0], run.record(), None, on_gpu=False)  # imports done first

    def forbidden(*args, **kwargs):
        raise RuntimeError("eval/exec called")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    checks.parse.cache_clear()
    (scenario,) = ex.load_scenarios(root)
    results = ex.evaluate_checks(scenario.steps[0], run.record(), None, on_gpu=False)
    monkeypatch.undo()
    assert [r.status for r in results] == ["pass"]


def test_unknown_scenario_lists_the_ids(tmp_path):
    root = write(tmp_path, GOOD)
    with pytest.raises(UserError, match="unknown exercise 'nope': choose one of foo"):
        ex.find_scenario(ex.load_scenarios(root), "nope")
    with pytest.raises(UserError, match="foo has steps 1..2, not 3"):
        ex.get_step(ex.find_scenario(ex.load_scenarios(root), "foo"), 3)


TOOL_STEP = '''
[[steps]]
title = "Third"
text = "About rocprofv3."
preset = { profilers = ["rocprofv3"] }
tool = "rocprofv3"
recorded = { path = "foo/recorded.csv", about = "a recorded table" }
nvidia = "tinylab run --profile nsys"
checks = [
  { name = "run-side", expr = "kernel_count > 1", description = "run", needs_gpu = true, gpu_reason = "AMD kernels" },
  { name = "recorded-side", expr = "kernel_launches > 1", on = "recorded", description = "recorded" },
]
'''


def write_tool_step(tmp_path, old: str = "", new: str = ""):
    root = write(tmp_path, GOOD + TOOL_STEP.replace(old, new, 1))
    (root / "foo" / "recorded.csv").write_text('"Name","Calls","TotalDurationNs"\n"k",2,10\n', encoding="utf-8")
    return root


def test_a_tool_step_with_a_recorded_output_loads(tmp_path):
    (scenario,) = ex.load_scenarios(write_tool_step(tmp_path))
    step = scenario.steps[2]
    assert step.tool == "rocprofv3" and step.nvidia == "tinylab run --profile nsys"
    assert step.recorded.path.name == "recorded.csv" and step.recorded.about == "a recorded table"
    assert [c.on for c in step.checks] == ["run", "recorded"]


@pytest.mark.parametrize("old, new, message", [
    ('tool = "rocprofv3"', 'tool = "rocprof-sys"', "tool 'rocprof-sys' is not among its preset's profilers"),
    ('path = "foo/recorded.csv"', 'path = "foo/missing.csv"', "recorded output 'foo/missing.csv' not found"),
    ('path = "foo/recorded.csv"', 'path = "../../etc/passwd"', "points outside the exercises folder"),
    ('recorded = { path = "foo/recorded.csv", about = "a recorded table" }', "", "reads a recorded output: give the step a `recorded` table"),
    ('on = "recorded"', 'on = "elsewhere"', 'on must be "run", "recorded" or "anatomy"'),
    ('"kernel_launches > 1", on', '"samples_per_s > 1", on', "unknown name 'samples_per_s'"),
    ('on = "recorded", description = "recorded"', 'on = "recorded", description = "recorded", needs_gpu = true, gpu_reason = "x"',
     "reads a recorded output: it needs no GPU"),
])
def test_tool_step_problems(tmp_path, old, new, message):
    root = write_tool_step(tmp_path, old, new)
    with pytest.raises(ex.ScenarioError, match=None) as info:
        ex.load_scenarios(root)
    assert message in str(info.value) and str(info.value).startswith("exercises/foo.toml:")


ANATOMY_STEP = '''
[[steps]]
title = "Fourth"
text = "About registers."
baseline = { version = "v1" }
checks = [
  { name = "fewer", on = "anatomy", expr = "compiled_regs(\\"attn_fwd\\", \\"gfx942\\") < baseline.compiled_regs(\\"attn_fwd\\", \\"sm_90\\", \\"BLOCK_N\\", 32)", description = "compiled" },
]
'''


def test_a_step_over_compiled_kernels_loads(tmp_path):
    (scenario,) = ex.load_scenarios(write(tmp_path, GOOD + ANATOMY_STEP))
    (check,) = scenario.steps[2].checks
    assert check.on == "anatomy" and not check.needs_gpu


@pytest.mark.parametrize("old, new, message", [
    ('\\"gfx942\\") <', '\\"gfx1100\\") <', "compiled_regs() names target 'gfx1100': choose from gfx90a, gfx942"),
    ('description = "compiled"', 'description = "compiled", needs_gpu = true, gpu_reason = "x"',
     "reads kernels compiled on this machine: it needs no GPU"),
    ('on = "anatomy", ', '', "compiled_regs() reads compiled kernels: give the check on = \"anatomy\""),
    ('compiled_regs(\\"attn_fwd\\", \\"gfx942\\")', 'samples_per_s', "unknown name 'samples_per_s'"),
    ('compiled_regs(\\"attn_fwd\\", \\"gfx942\\")', 'kernel_calls(\\"attn\\")',
     "kernel_calls() reads a run: a check with on = \"anatomy\" reads only compiled kernels"),
    ('\\"BLOCK_N\\", 32)', '\\"BLOCK_N\\", 16 * 2)', "compiled_regs() takes literal arguments"),
    ('\\"BLOCK_N\\", 32)', '\\"BLOCK_N\\")', "takes (kernel, target) or (kernel, target, param, value), got 3"),
    ('baseline = { version = "v1" }\n', '', "needs a baseline run"),
])
def test_anatomy_step_problems(tmp_path, old, new, message):
    assert old in ANATOMY_STEP
    with pytest.raises(ex.ScenarioError) as info:
        ex.load_scenarios(write(tmp_path, GOOD + ANATOMY_STEP.replace(old, new, 1)))
    assert message in str(info.value) and str(info.value).startswith("exercises/foo.toml:"), str(info.value)


# ------------------------------------------------------------------------------ checks
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


def add_events(run, *events: dict) -> None:
    with open(run.dir / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps({"time": 4.0, **e}) + "\n" for e in events))


def test_a_step_spread_without_step_times_fails_the_check_only(tmp_path):
    """Ranks that recorded no median step: not measured, not a ValueError out of evaluate_checks."""
    run = make_run(tmp_path)
    add_events(run, {"event": "rank", "rank": 0, "fwd_ms_median": 20.0, "bwd_ms_median": 40.0},
               {"event": "rank", "rank": 1, "fwd_ms_median": 22.0, "bwd_ms_median": 41.0})
    st = step(("spread", "rank_step_spread < 1.2", False), ("fwd", "fastest_rank_fwd_ms == 20", False))
    got = results(st, run)
    assert got["spread"].status == "fail" and got["spread"].detail == (
        "not measured: rank_step_spread (no rank of the run recorded a median step time)")
    assert got["fwd"].status == "pass"
    timed = make_run(tmp_path, "timed")
    add_events(timed, {"event": "rank", "rank": 0, "step_ms_median": 80.0},
               {"event": "rank", "rank": 1, "step_ms_median": 100.0})
    assert results(st, timed)["spread"].value == 1.25


def test_a_trace_is_analyzed_once_for_all_the_checks_that_read_it(tmp_path, monkeypatch):
    """Each check is evaluated three ways (outcome, shown value, values): the trace is parsed once,
    and why there is none is said every time."""
    from support.paths import FIX

    from tinylab.analysis import timeline

    calls = []
    analyze = timeline.analyze
    monkeypatch.setattr(timeline, "analyze", lambda path, *a, **k: calls.append(path) or analyze(path, *a, **k))
    trace = FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz"
    st = step(("idle", "gpu_idle_pct > 90", False), ("busy", "gpu_idle_pct < 50", False))
    st.checks = [dataclasses.replace(c, on="recorded") for c in st.checks]
    st.recorded = ex.Recorded(trace, "test")
    got = {r.name: r for r in ex.evaluate_checks(st, None, None, False)}
    assert (got["idle"].status, got["busy"].status) == ("pass", "fail") and got["idle"].value == pytest.approx(95.05)
    assert calls == [trace]
    got = {r.name: r for r in ex.evaluate_checks(step(("idle", "gpu_idle_pct > 90", False)), make_run(tmp_path).record(),
                                                  None, False)}
    assert got["idle"].detail == ("not measured: gpu_idle_pct (the run has no PyTorch trace (profile it with "
                                  "--profile pytorch))") and calls == [trace]


def test_a_rocprof_compute_profile_is_read_once_for_all_its_checks(tmp_path, monkeypatch):
    """sol_* and top_* checks over one profile: its workload is found once, its analyzed kernels,
    dispatch times and each speed-of-light table read once, whatever the number of checks."""
    import shutil

    from support.paths import FIX

    from tinylab.analysis.formats import rocprof_compute as rc

    profile = tmp_path / "profile"
    shutil.copytree(FIX / "rocprof-compute" / "vcopy_MI200", profile / "workload")
    shutil.copytree(FIX / "rocprof-compute" / "vcopy_MI200_analyze", profile / "analyze")
    calls: list[str] = []
    for name in ("find_workload", "analyzed_kernels", "dispatch_times", "read_speed_of_light"):
        real = getattr(rc, name)
        monkeypatch.setattr(rc, name, lambda *a, _name=name, _real=real: calls.append(_name) or _real(*a))
    st = step(("l2", 'sol_pct("vecCopy", "L2 Cache BW") > 30', False),
              ("cus", 'sol_value("elementwise", "active cus") == 62', False),
              ("bound", 'top_bound("vecCopy") == "memory" and top_intensity("elementwise") >= 0', False))
    st.checks = [dataclasses.replace(c, on="recorded") for c in st.checks]
    st.recorded = ex.Recorded(profile, "test")
    got = {r.name: r.status for r in ex.evaluate_checks(st, None, None, False)}
    assert got == {"l2": "pass", "cus": "pass", "bound": "pass"}
    assert sorted(calls) == ["analyzed_kernels", "dispatch_times", "find_workload", "read_speed_of_light"]


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
    # checks over compiled kernels are not "over the run"
    assert ex.verdict([make("pass", "anatomy"), make("skip", detail="GPU-only: a")]) == (
        "1 of 2 checks ran and passed (over the compiled kernels); 1 skipped (GPU-only: a)")
    assert ex.verdict([make("pass"), make("pass", "anatomy"), make("pass", "recorded"), make("skip", detail="x")]) == (
        "3 of 4 checks ran and passed (1 over the recorded output, 1 over the compiled kernels); 1 skipped (x)")


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


def test_a_step_only_compiles_when_every_check_reads_compiled_kernels():
    assert anatomy_step(("regs", 'compiled_regs("attn_fwd", "gfx942") > 0')).compile_only
    mixed = anatomy_step(("regs", 'compiled_regs("attn_fwd", "gfx942") > 0'))
    mixed.checks.append(CheckSpec("steps", "steps > 0", "d", False))
    assert not mixed.compile_only and not step(("x", "steps > 0", False)).compile_only
    assert not Step(1, "t", "text", {}, {}, None, [], [], []).compile_only


# ------------------------------------------------------------------------------ progress
def result(name: str, status: str, value=1.5) -> ex.CheckResult:
    return ex.CheckResult(name, "expr", "description", status, value, "detail")


def test_records_attempts_and_keeps_the_first_pass(progress_file):
    assert ex.load_progress() == {"scenarios": {}}
    ex.record_progress("demo", 2, [result("a", "fail"), result("b", "pass")], ["r1"])
    step = ex.load_progress()["scenarios"]["demo"]["steps"]["2"]
    assert step["passed"] is False and step["passed_at"] is None and step["passed_checks"] == ["b"]
    assert step["run_ids"] == ["r1"] and step["checks"]["a"] == {"status": "fail", "value": 1.5, "detail": "detail"}

    ex.record_progress("demo", 2, [result("a", "pass"), result("b", "skip")], ["r2", "r3"])
    passed_at = ex.load_progress()["scenarios"]["demo"]["steps"]["2"]["passed_at"]
    assert passed_at is not None
    ex.record_progress("demo", 2, [result("a", "fail", value=object())], ["r4"])
    step = ex.load_progress()["scenarios"]["demo"]["steps"]["2"]
    assert step["passed"] is False and step["passed_at"] == passed_at and step["run_ids"] == ["r4"]
    assert isinstance(step["checks"]["a"]["value"], str)
    assert json.loads(progress_file.read_text())["scenarios"]["demo"]["steps"]["2"]["run_ids"] == ["r4"]
    assert not list(progress_file.parent.glob("*.tmp"))


def test_steps_done_counts_passed_steps(progress_file):
    scenario = ex.find_scenario(ex.load_scenarios(), "performance-debugging")
    ex.record_progress(scenario.id, 1, [result("a", "pass")], [])
    ex.record_progress(scenario.id, 3, [result("a", "skip")], [])
    assert ex.steps_done(ex.load_progress(), scenario) == 1


def test_unreadable_progress_is_empty(progress_file):
    progress_file.parent.mkdir(parents=True)
    progress_file.write_text("{not json", encoding="utf-8")
    assert ex.load_progress() == {"scenarios": {}}
    ex.record_progress("demo", 1, [result("a", "pass")], [])
    assert ex.load_progress()["scenarios"]["demo"]["steps"]["1"]["passed"] is True


def test_default_location_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(ex.PROGRESS_ENV)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert ex.progress_path() == tmp_path / "xdg" / "tinylab" / "progress.json"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert ex.progress_path() == tmp_path / "home" / ".local" / "share" / "tinylab" / "progress.json"


@pytest.mark.parametrize("kind", ["device", "fifo", "link-to-device"])
def test_a_progress_file_that_is_no_file_is_refused_not_read(progress_file, kind, tmp_path):
    """TINYLAB_PROGRESS_FILE=/dev/zero grew a reader to 7.6 GB; a FIFO would block it."""
    import os

    from tinylab.core.errors import UserError

    if kind == "device":
        os.environ[ex.PROGRESS_ENV] = "/dev/zero"
    elif kind == "fifo":
        progress_file.parent.mkdir(parents=True)
        os.mkfifo(progress_file)
    else:
        progress_file.parent.mkdir(parents=True)
        progress_file.symlink_to("/dev/zero")
    with pytest.raises(UserError, match="not a regular file; not read"):
        ex.load_progress()
    with pytest.raises(UserError, match="not a regular file; not read"):
        ex.record_progress("demo", 1, [result("a", "pass")], [])


@pytest.mark.parametrize("content", [
    {"scenarios": {"performance-debugging": {"steps": 3}}},
    {"scenarios": {"performance-debugging": {"steps": "all"}, "other": 7}},
    {"scenarios": {"performance-debugging": {"steps": {"1": "passed", "2": {"passed_at": 1.0}}}}},
])
def test_a_malformed_progress_file_loses_only_its_malformed_entries(progress_file, content):
    """Steps that were an int or a string raised AttributeError in `exercises list` and the lab."""
    from tinylab.cli import main

    progress_file.parent.mkdir(parents=True)
    progress_file.write_text(json.dumps(content), encoding="utf-8")
    scenario = ex.find_scenario(ex.load_scenarios(), "performance-debugging")
    assert ex.steps_done(ex.load_progress(), scenario) == (1 if "2" in str(content) else 0)
    assert main(["exercises", "list"]) == 0
    ex.record_progress(scenario.id, 1, [result("a", "pass")], [])
    assert ex.load_progress()["scenarios"][scenario.id]["steps"]["1"]["passed"] is True


def test_a_progress_file_nested_5000_deep_is_one_line(progress_file):
    from tinylab.core.errors import UserError

    progress_file.parent.mkdir(parents=True)
    progress_file.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    with pytest.raises(UserError, match="nested deeper than 64 levels"):
        ex.load_progress()


# ------------------------------------------------------------------------------ hidden settings
HIDES = GOOD.replace('hints = ["one", "two"]', 'hints = ["one", "two"]\nhidden = ["fault"]')


def test_a_step_hides_its_fault_until_it_is_named_or_its_answers_are_revealed(tmp_path):
    """performance-debugging's checks confirm the symptom, so a step passed the moment its run
    ended, and passing unmasked the fault: only naming it or revealing the answers does now."""
    (scenario,) = ex.load_scenarios(write(tmp_path, HIDES))
    assert scenario.steps[0].hidden == ("fault",) and scenario.steps[1].hidden == ()
    assert ex.hidden_fields(ex.load_progress(), scenario, 1) == {"fault"}
    assert ex.hidden_fields(ex.load_progress(), scenario, 2) == frozenset()
    ex.record_progress("foo", 1, [ex.CheckResult("a", "e", "d", "pass", 1, "")], [])
    assert ex.load_progress()["scenarios"]["foo"]["steps"]["1"]["passed_at"]
    assert ex.hidden_fields(ex.load_progress(), scenario, 1) == {"fault"}  # passed, and still to be found
    ex.record_answers_revealed("foo", 1)
    assert ex.hidden_fields(ex.load_progress(), scenario, 1) == frozenset()
    ex.record_progress("foo", 1, [ex.CheckResult("a", "e", "d", "fail", 1, "")], [])
    assert ex.load_progress()["scenarios"]["foo"]["steps"]["1"]["answers_at"]  # a later attempt keeps it
    assert ex.hidden_fields({"scenarios": {"foo": {"steps": {"1": {"passed_at": 5.0}}}}}, scenario, 1) == {"fault"}
    assert ex.hidden_fields({"scenarios": {"foo": {"steps": {"1": {"found_at": 5.0}}}}}, scenario, 1) == frozenset()
    assert ex.step_of_label("exercise foo step 1") == ("foo", 1)
    assert ex.step_of_label("exercise foo step 1 baseline") is None and ex.step_of_label("my run") is None


@pytest.mark.parametrize("hidden, message", [
    ('["batch_size"]', "step 1 hides 'batch_size', which its preset does not set"),
    ('["label"]', "hides 'label'"),
    ('"fault"', "hidden must be a list of strings"),
])
def test_hidden_names_a_setting_of_the_steps_preset(tmp_path, hidden, message):
    text = GOOD.replace('hints = ["one", "two"]', f'hints = ["one", "two"]\nhidden = {hidden}')
    got = problem(tmp_path, text)
    assert got.startswith(f"exercises/foo.toml:{line_of(text, 'hidden = ')}: ") and message in got, got


def test_a_check_may_not_read_what_its_step_hides(tmp_path):
    """A check's result lists the values it read (`fault=missing-init`): it would give the fault away."""
    text = HIDES.replace('expr = "initial_loss > 3 * ln(vocab_size)"',
                         'expr = "initial_loss > 3 * ln(vocab_size) and contains(fault, \\"init\\")"')
    with pytest.raises(ex.ScenarioError, match="check 'loss-high' reads 'fault', which step 1 hides: its result "
                                               "would show it"):
        ex.load_scenarios(write(tmp_path, text))


def test_a_step_keeps_the_runs_that_passed_it_through_a_failed_retry(tmp_path):
    """Reopening a passed step showed no run and its checks unevaluated: the latest attempt that
    passed keeps its runs and its checks as evaluated on them."""
    (scenario,) = ex.load_scenarios(write(tmp_path, GOOD))
    first, second = scenario.steps
    assert ex.kept_attempt(ex.load_progress(), "foo", 1) is None  # never tried
    ex.record_progress("foo", 2, [ex.CheckResult("faster", "e", "d", "fail", 1.0, "")], ["base-1", "run-1"])
    tried = ex.kept_attempt(ex.load_progress(), "foo", 2)
    assert not tried.passed and tried.runs(second) == {"baseline": "base-1", "run": "run-1"}
    ex.record_progress("foo", 2, [ex.CheckResult("faster", "e", "d", "pass", 2.0, "2 > 1")], ["base-2", "run-2"])
    ex.record_progress("foo", 2, [ex.CheckResult("faster", "e", "d", "fail", 0.5, "")], ["base-3", "run-3"])
    kept = ex.kept_attempt(ex.load_progress(), "foo", 2)
    assert kept.passed and kept.time and kept.runs(second) == {"baseline": "base-2", "run": "run-2"}
    (result,) = kept.results(second)
    assert (result.name, result.status, result.value, result.detail, result.description) == (
        "faster", "pass", 2.0, "2 > 1", "faster")
    assert ex.load_progress()["scenarios"]["foo"]["steps"]["2"]["run_ids"] == ["base-3", "run-3"]  # the latest too
    # a file from before passed_with: its latest attempt; one damaged by hand: what is well formed of it
    old = {"scenarios": {"foo": {"steps": {"1": {"passed": True, "time": 5.0, "run_ids": ["r"],
                                                 "checks": {"loss-high": {"status": "pass", "value": 9}}}}}}}
    assert ex.kept_attempt(old, "foo", 1).runs(first) == {"run": "r"} and ex.kept_attempt(old, "foo", 1).passed
    damaged = {"scenarios": {"foo": {"steps": {"1": {"passed_with": {"time": True, "run_ids": [3, "r"],
                                                                     "checks": {"loss-high": {"status": "bogus"}}}}}}}}
    kept = ex.kept_attempt(damaged, "foo", 1)
    assert kept.time is None and kept.run_ids == ("r",) and kept.results(first) == []


def test_the_faults_to_name_come_in_name_order_and_a_guess_is_judged_on_the_run(tmp_path):
    from support.runs import make_run

    (scenario,) = ex.load_scenarios(write(tmp_path, HIDES))
    step, plain = scenario.steps
    assert ex.hidden_fault(step) == "missing-init" and ex.hidden_fault(plain) is None and ex.suspects(plain) == ()
    # every fault v1 can run with on one process, sorted: the order says nothing of the answer
    assert ex.suspects(step) == ("missing-init", "unsynced-timing")
    run = make_run(tmp_path / "runs", "20260101-000000-aaaa", [
        {"event": "start", "time": 1.0, "device": "cpu", "config": {}},
        {"event": "summary", "time": 2.0, "initial_loss": 60.0}], fault="missing-init")
    right = ex.diagnose(scenario, step, "missing-init", run.record())
    assert right.right and right.lines()[0].startswith("✓ missing-init")
    wrong = ex.diagnose(scenario, step, "unsynced-timing", run.record())
    assert not wrong.right and wrong.lines()[0] == "✗ not unsynced-timing."  # no step here shows its symptoms
    assert wrong.lines()[1].startswith("unsynced-timing would show: fwd + bwd + opt is far below")  # the catalogue's
    assert wrong.lines()[2] == "This run shows: high (initial_loss=60, vocab_size=1000)"
    assert ex.diagnose(scenario, step, "unsynced-timing", None).lines()[-1] == (
        "Run the step to weigh a guess against its run.")

"""Malformed scenario files: each problem is reported as FILE:LINE: problem, and nothing runs."""

from __future__ import annotations

import builtins
import textwrap

import pytest

from tinylab import exercises as ex
from tinylab.errors import UserError

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
        ('preset = { fault = "missing-init" }', 'preset = { learning_rate = inf }', "learning_rate", "--learning-rate must be a finite number > 0, got inf"),
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
    ex._parsed.cache_clear()
    (scenario,) = ex.load_scenarios(root)
    results = ex.evaluate_checks(scenario.steps[0], run.record(), None, on_gpu=False)
    monkeypatch.undo()
    assert [r.status for r in results] == ["pass"]


def test_unknown_scenario_lists_the_ids(tmp_path):
    root = write(tmp_path, GOOD)
    with pytest.raises(UserError, match="unknown exercise 'nope': choose one of foo"):
        ex.get_scenario("nope", root)
    with pytest.raises(UserError, match="foo has steps 1..2, not 3"):
        ex.get_step(ex.get_scenario("foo", root), 3)


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

"""The check language: parsing, typing and evaluation, and that nothing but ExprError escapes."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinylab.exercises import checks
from tinylab.exercises.checks import BOOL, NUM, STR, ExprError, Missing

NAMES = {"initial_loss": NUM, "vocab_size": NUM, "fwd_ms": NUM, "step_ms": NUM, "top_kernel_category": STR,
         "sdpa": BOOL, "zero": NUM}  # fmt: skip
VALUES = {"initial_loss": 62.5, "vocab_size": 1000, "fwd_ms": 3.0, "step_ms": 10.0, "top_kernel_category": "gemm",
          "sdpa": True, "zero": 0, "baseline.fwd_ms": 1.0, "baseline.initial_loss": 6.9}  # fmt: skip


def lookup(name):
    if name not in VALUES:
        raise Missing(name, "not in this test")
    return VALUES[name]


def kernels(fname, *parts):
    if checks.base_name(fname) == "top_bound":
        return "memory"
    if checks.base_name(fname).startswith("sol_"):
        return {("gemm", "MFMA Utilization"): 40.0, ("_rmsnorm", "MFMA Utilization"): 0.0}[parts]
    values = {"kernel_calls": 7, "kernel_ms": 1.5, "kernel_pct": 12.0, "top_intensity": 0.5, "top_bw_pct": 62.0,
              "top_flops_pct": 0.1, "profile_files": 2}
    return values[checks.base_name(fname)] + (1 if fname.startswith("baseline.") else 0)


def run(expr, allow_baseline=True):
    tree = checks.parse(expr)
    kind = checks.check_types(tree, NAMES, allow_baseline)
    return kind, checks.evaluate(tree, lookup, kernels)


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("initial_loss > 5 * ln(vocab_size)", True),
        ("initial_loss > 10 * ln(vocab_size)", False),
        ("abs(fwd_ms - step_ms) / step_ms > 0.3", True),
        ("1 + 2 * 3 == 7 and (1 + 2) * 3 == 9", True),
        ("-fwd_ms + 3 == 0", True),
        ("0.5 < fwd_ms / step_ms < 0.4", False),
        ("0.1 < fwd_ms / step_ms < 0.4", True),
        ('top_kernel_category == "gemm"', True),
        ("top_kernel_category != 'gemm'", False),
        ('contains(top_kernel_category, "EM")', True),
        ("sdpa == true and not false", True),
        ("min(1, 2, fwd_ms) == 1 and max(1, 2, fwd_ms) == 3", True),
        ("sqrt(16) == 4 and 1e3 == 1000 and .5 == 0.5", True),
        ("fwd_ms > 2 * baseline.fwd_ms", True),
        ('kernel_calls("copy") > baseline.kernel_calls("copy")', False),
        ('kernel_ms("x") == 1.5 and kernel_pct("x") == 12', True),
        ("false or initial_loss > 1", True),
        ("not sdpa or fwd_ms > 100", False),
        ('top_bound("gemm") == "memory" and top_intensity("gemm") < 1', True),
        ('top_bw_pct("x") > 50 and top_flops_pct("x") < 1 and profile_files(".proto") == 2', True),
        ('baseline.profile_files(".proto") > profile_files(".proto")', True),
        ('sol_pct("gemm", "MFMA Utilization") > sol_pct("_rmsnorm", "MFMA Utilization")', True),
    ],
)
def test_evaluates(expr, expected):
    kind, value = run(expr)
    assert kind == BOOL
    assert value is expected


@pytest.mark.parametrize(
    "expr, fragment",
    [
        ("initial_loss >", "expected a value"),
        ("(initial_loss > 1", "expected ')'"),
        ("initial_loss > 1)", "unexpected ')'"),
        ("initial_loss = 1", "unexpected character '='"),
        ("initial_loss ** 2 > 1", "expected a value"),
        ("fwd > 1", "unknown name 'fwd'"),
        ("fwd_mss > 1", "did you mean 'fwd_ms'"),
        ("initial_loss.__class__ > 1", "unknown name 'initial_loss.__class__'"),
        ("__import__('os') == 1", "unknown function '__import__'"),
        ("__import__('os').system('true')", "unexpected character '.'"),
        ("eval('1') == 1", "unknown function 'eval'"),
        ("ln(1, 2) > 0", "ln() takes 1 argument(s), got 2"),
        ("min() > 0", "min() needs at least one argument"),
        ('"gemm" + 1 > 0', "'+' needs a number, got a text"),
        ('top_kernel_category > 1', "'>' needs a number, got a text"),
        ('top_kernel_category == 1', "'==' compares a text with a number"),
        ("sdpa and 1", "'and' needs a boolean, got a number"),
        ("not 1", "'not' needs a boolean, got a number"),
        ('kernel_calls(1) > 0', "kernel_calls() needs a text, got a number"),
        ('top_bound("gemm") > 1', "'>' needs a number, got a text"),
        ('top_intensity("gemm") == "memory"', "'==' compares a number with a text"),
        ('sol_pct("gemm") > 1', "sol_pct() takes 2 text arguments, got 1"),
        ('kernel_calls("a", "b") > 1', "kernel_calls() takes one text argument, got 2"),
        ('sol_value("gemm", 2) > 1', "sol_value() needs a text, got a number"),
        ("1e999 > 0", "too large"),
        ("and", "needs an operand"),
        ("", "expected a value"),
        ("x" * 600, "longer than"),
        ("(" * 100 + "1" + ")" * 100, "nested deeper"),
        ("-" * 100 + "1 > 0", "nested deeper"),
        ("not " * 100 + "true", "nested deeper"),
    ],
)
def test_rejects_with_a_message(expr, fragment):
    with pytest.raises(ExprError) as info:
        checks.check_types(checks.parse(expr), NAMES, True)
    assert fragment in str(info.value)


def test_error_column_points_at_the_problem():
    with pytest.raises(ExprError) as info:
        checks.check_types(checks.parse("initial_loss > 3 * lnn(vocab_size)"), NAMES, True)
    assert info.value.column == 20
    assert str(info.value).startswith("column 20: unknown function 'lnn'")


def test_baseline_names_need_a_baseline():
    with pytest.raises(ExprError, match="needs a baseline run"):
        checks.check_types(checks.parse("fwd_ms > baseline.fwd_ms"), NAMES, False)
    with pytest.raises(ExprError, match="needs a baseline run"):
        checks.check_types(checks.parse('baseline.kernel_calls("x") > 0'), NAMES, False)


@pytest.mark.parametrize(
    "expr, fragment",
    [
        ("fwd_ms / zero > 1", "division by zero"),
        ("ln(zero) > 1", "ln(0) is undefined"),
        ("sqrt(-fwd_ms) > 1", "sqrt(-3) is undefined"),
        ("1e300 * 1e300 > 1", "overflowed"),
    ],
)
def test_arithmetic_problems_are_expr_errors(expr, fragment):
    with pytest.raises(ExprError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        run(expr)


def test_missing_values_propagate_as_missing():
    tree = checks.parse("initial_loss > 1 and peak_mem_mb > 1")
    with pytest.raises(Missing) as info:
        checks.evaluate(tree, lookup, kernels)
    assert info.value.name == "peak_mem_mb"


def test_wrong_runtime_types_are_expr_errors():
    """A value of an unexpected type (a corrupt record) is an error message, not a TypeError."""
    tree = checks.parse("fwd_ms > 1")
    with pytest.raises(ExprError, match="expected a number, got a text"):
        checks.evaluate(tree, lambda name: "3", kernels)


def test_display_operand_and_leaves():
    tree = checks.parse('abs(fwd_ms - step_ms) / step_ms > 0.3 and kernel_calls("copy") > 1')
    assert checks.display_operand(tree) is None
    leaves = [checks.leaf_text(n) for n in checks.measured_leaves(tree)]
    assert leaves == ["fwd_ms", "step_ms", "step_ms", 'kernel_calls("copy")']
    left = checks.display_operand(checks.parse("fwd_ms / step_ms > 0.3"))
    assert checks.evaluate(left, lookup, kernels) == pytest.approx(0.3)


# ----------------------------------------------------------------------------- fuzzing
ALPHABET = st.sampled_from(
    ["initial_loss", "fwd_ms", "baseline.fwd_ms", "zero", "sdpa", "top_kernel_category", "peak_mem_mb", "ln", "abs",
     "min", "max", "sqrt", "contains", "kernel_calls", "baseline.kernel_ms", "__import__", "os.system", "and", "or",
     "not", "true", "false", "(", ")", ",", "+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "0", "1", "2.5",
     "1e308", '"gemm"', "'x'", ".", "=", "[", "]", "{", "lambda", ":"]
)  # fmt: skip


def _only_documented_errors(text: str) -> None:
    try:
        tree = checks.parse(text)
        checks.check_types(tree, NAMES, allow_baseline=True)
        value = checks.evaluate(tree, lookup, kernels)
    except (ExprError, Missing):
        return
    assert isinstance(value, (bool, int, float, str))
    if isinstance(value, float):
        assert math.isfinite(value)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ALPHABET, max_size=14).map(" ".join))
def test_fuzz_token_soup_raises_only_documented_errors(text):
    _only_documented_errors(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_fuzz_any_text_raises_only_documented_errors(text):
    _only_documented_errors(text)


def _expr(depth: int):
    leaf = st.sampled_from(["fwd_ms", "zero", "initial_loss", "1", "0", "2.5", "1e300", "baseline.fwd_ms",
                            'kernel_calls("a")', "peak_mem_mb"])  # fmt: skip
    if depth == 0:
        return leaf
    sub = _expr(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["abs", "ln", "sqrt", "-"]), sub).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(sub, sub).map(lambda t: f"min({t[0]}, {t[1]})"),
    )


@settings(max_examples=200, deadline=None)
@given(_expr(3), st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), _expr(3))
def test_fuzz_well_formed_arithmetic_evaluates_or_explains(left, op, right):
    """Typed, well-formed comparisons never raise anything but ExprError (math) or Missing."""
    _only_documented_errors(f"{left} {op} {right}")


def test_a_measured_integer_too_large_for_a_float_is_an_expr_error():
    tree = checks.parse("kernel_launches / 3 > 1")
    with pytest.raises(ExprError, match="too large to compute with"):
        checks.evaluate(tree, lambda name: 10**400, lambda fname, part: 0.0)



ANATOMY = frozenset(checks.ANATOMY_FUNCTIONS)


def compiled(fname, kernel, target, *swept):
    """Registers 100 (+50 with a swept value), 8 KiB of LDS, spills past 128, limited by VGPRs."""
    value = swept[1] if swept else 64
    table = {"compiled_regs": 100 + (50 if swept else 0), "compiled_lds": 8192, "compiled_spills": int(value > 128),
             "compiled_occupancy": 4, "compiled_limiter": "VGPRs"}
    value = table[checks.base_name(fname)]
    return value - 10 if fname.startswith("baseline.") and isinstance(value, int) else value


@pytest.mark.parametrize("expr, expected", [
    ('compiled_regs("attn_fwd", "gfx942") == 100 and compiled_lds("attn_fwd", "sm_90") == 8192', True),
    ('compiled_regs("attn_fwd", "gfx942", "BLOCK_N", 128) > compiled_regs("attn_fwd", "gfx942")', True),
    ('compiled_spills("attn_fwd", "gfx942", "BLOCK_N", 256) > 0 and compiled_spills("a", "b") == 0', True),
    ('compiled_limiter("attn_fwd", "gfx942") == "VGPRs" and compiled_occupancy("attn_fwd", "gfx942") < 4', False),
    ('baseline.compiled_regs("attn_fwd", "gfx942") < compiled_regs("attn_fwd", "gfx942")', True),
])
def test_anatomy_functions_evaluate(expr, expected):
    tree = checks.parse(expr)
    assert checks.check_types(tree, {}, True, ANATOMY) == BOOL
    assert checks.evaluate(tree, lookup, compiled) is expected


@pytest.mark.parametrize("expr, functions, fragment", [
    ('compiled_regs("attn_fwd", "gfx942") > 1', frozenset(checks.KERNEL_FUNCTIONS), 'give the check on = "anatomy"'),
    ('kernel_calls("x") > 1', ANATOMY, 'kernel_calls() reads a run'),
    ('compiled_regs("attn_fwd") > 1', ANATOMY, "takes (kernel, target) or (kernel, target, param, value), got 1"),
    ('compiled_regs("attn_fwd", "gfx942", "BLOCK_N", "64") > 1', ANATOMY, "compiled_regs() needs a number, got a text"),
    ('compiled_regs("attn_fwd", 942) > 1', ANATOMY, "compiled_regs() needs a text, got a number"),
    ('compiled_regs("attn" + "_fwd", "gfx942") > 1', ANATOMY, "'+' needs a number"),
    ('compiled_regs("attn_fwd", "gfx942", "BLOCK_N", 32 * 2) > 1', ANATOMY, "takes literal arguments"),
    ('compiled_limiter("attn_fwd", "gfx942") > 1', ANATOMY, "'>' needs a number, got a text"),
    ('comiled_regs("attn_fwd", "gfx942") > 1', ANATOMY, "unknown function 'comiled_regs': the functions are abs"),
])
def test_anatomy_functions_are_typed(expr, functions, fragment):
    with pytest.raises(ExprError, match=None) as info:
        checks.check_types(checks.parse(expr), {}, True, functions)
    assert fragment in str(info.value)


def test_anatomy_calls_and_their_leaves():
    tree = checks.parse('compiled_regs("k", "gfx942", "BLOCK_N", 128) > 2 * baseline.compiled_regs("k", "sm_90") '
                        'and abs(compiled_lds("k", "sm_90")) > 0')
    assert list(checks.anatomy_calls(tree)) == [
        ("compiled_regs", ("k", "gfx942", "BLOCK_N", 128.0)), ("baseline.compiled_regs", ("k", "sm_90")),
        ("compiled_lds", ("k", "sm_90"))]
    assert [checks.leaf_text(n) for n in checks.measured_leaves(tree)] == [
        'compiled_regs("k", "gfx942", "BLOCK_N", 128)', 'baseline.compiled_regs("k", "sm_90")', 'compiled_lds("k", "sm_90")']

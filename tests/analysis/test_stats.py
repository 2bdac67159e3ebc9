"""tinylab.analysis.stats: the interval on B/A over runs, its prior and what settles it."""

from __future__ import annotations

import math
import random

import pytest

from tinylab.analysis.stats import (
    ASSUMED,
    BUSY_SIGMA,
    RunValue,
    Variation,
    history_variation,
    mean_interval,
    ratio_interval,
    runs_needed,
    t_quantile,
)


def values(*figures: float, busy: bool = False) -> list[RunValue]:
    return [RunValue(f"r{i}", v, None, busy) for i, v in enumerate(figures)]


def test_t_quantiles_are_students():
    assert t_quantile(1) == pytest.approx(12.706) and t_quantile(2) == pytest.approx(4.303)
    assert t_quantile(11) == pytest.approx(2.228), "between tabulated values the wider one"
    assert t_quantile(500) == 1.96 and t_quantile(500, 0.99) == 2.576 and t_quantile(4, 0.99) == pytest.approx(4.604)
    with pytest.raises(ValueError):
        t_quantile(0)
    with pytest.raises(ValueError):
        t_quantile(5, 0.9)


def test_one_identical_pair_is_never_a_verdict():
    i = ratio_interval(values(100.0), values(125.0), -1)
    assert i.ratio == pytest.approx(1.25) and i.low < 1 < i.high and i.better is None and not i.sure
    assert i.runs == (1, 1) and i.dof == 2 and i.sigma == pytest.approx(ASSUMED.sigma)
    assert i.settle.startswith("spread ±11% between runs: `--repeat ")
    # the runs a side that would settle it: the one run given and the note's repeats
    assert i.settle.endswith(f"`--repeat {i.needed - 1}`") and i.to_json()["needed"] == i.needed
    assert i.text() == f"1.25x [{i.low:.2f}–{i.high:.2f}]"


def test_a_large_difference_gets_its_side_in_either_direction():
    slower = ratio_interval(values(100.0), values(300.0), -1)  # B's time is 3x: A better
    faster = ratio_interval(values(40.0), values(120.0), +1)  # B's rate is 3x: B better
    assert (slower.better, faster.better) == ("a", "b") and slower.settle is None


def test_busy_runs_widen_the_interval_but_never_turn_it():
    quiet = ratio_interval(values(100.0), values(300.0), -1)
    busy = ratio_interval(values(100.0, busy=True), values(300.0), -1)
    assert busy.sigma == pytest.approx(BUSY_SIGMA)
    assert busy.high / busy.low > quiet.high / quiet.low and busy.better in (None, "a")


def test_busy_repeats_never_look_steadier_than_contention_allows():
    """Three busy runs a side that happened to agree within 1 %: under contention runs are neither
    steady nor independent, so the spread stays at BUSY_SIGMA at least."""
    a, b = values(100.0, 101.0, 100.5, busy=True), values(108.0, 109.0, 108.5)
    i = ratio_interval(a, b, -1)
    assert i.sigma == pytest.approx(BUSY_SIGMA) and i.better is None


def test_secondary_rows_are_judged_at_99_percent():
    a, b = values(100.0, 104.0, 97.0), values(120.0, 124.0, 117.0)
    at95, at99 = ratio_interval(a, b, -1), ratio_interval(a, b, -1, level=0.99)
    assert at99.low < at95.low and at99.high > at95.high and at99.level == 0.99
    assert at99.to_json()["level"] == 0.99


def test_repeats_narrow_it_and_identical_repeats_name_no_one():
    rng = random.Random(7)
    a = values(*(100 * math.exp(rng.gauss(0, 0.15)) for _ in range(3)))
    b = values(*(100 * math.exp(rng.gauss(0, 0.15)) for _ in range(3)))
    assert ratio_interval(a, b, -1).better is None
    triple = values(*(300 * math.exp(rng.gauss(0, 0.15)) for _ in range(3)))
    assert ratio_interval(a, triple, -1).better == "a"


def test_a_tight_history_lets_a_small_gain_through_and_same_is_said():
    tight = Variation(0.01, 8, "test")
    assert ratio_interval(values(100.0), values(90.0), -1, tight).better == "b"
    assert ratio_interval(values(100.0), values(90.0), -1).better is None, "assumed spread: not sure"
    same = ratio_interval(values(100.0, 100.5, 99.6), values(100.2, 99.9, 100.4), -1, tight)
    assert same.same and same.sure and same.better is None and same.settle is None


def test_a_runs_own_step_noise_is_a_floor():
    noisy = [RunValue("a", 100.0, 0.4), RunValue("b", 100.0, 0.4)]
    i = ratio_interval(noisy[:1], noisy[1:], -1, Variation(0.01, 8, "test"))
    assert i.sigma == pytest.approx(0.4)
    repeated = [RunValue(f"a{k}", 100.0 + k, 0.4) for k in range(3)]  # repeats: their own spread is the data
    assert ratio_interval(repeated, repeated, -1, Variation(0.01, 8, "test")).sigma < 0.05
    assert RunValue.of("x", 100.0, 90.0, 110.0, 16, False).within == pytest.approx(
        1.2533 * math.log(110 / 90) / 2.5632 / 4)
    assert RunValue.of("x", 0.0, 90.0, 110.0, 16, False) is None and RunValue.of("x", None, None, None, None, False) is None
    stalled = RunValue.of("x", 100.0, 50.0, 700.0, 6, False).within  # one stalled step is not a step run backwards
    assert stalled == pytest.approx(1.2533 * math.log(14) / 2.5632 / math.sqrt(6)) and stalled < 0.6


def test_history_pools_repeated_configs_only():
    assert history_variation([[100.0]]) == ASSUMED
    v = history_variation([[100.0, 110.0], [50.0, 50.0, 50.0], [7.0]], "gpu")
    expected = math.sqrt(((math.log(110) - math.log(100)) ** 2 / 2) / 3)
    assert v.dof == 3 and v.sigma == pytest.approx(expected) and v.source == "5 runs of 2 repeated configs on gpu"
    assert history_variation([[5.0, 5.0]]).sigma == pytest.approx(ASSUMED.sigma / 10), "a floor, not certainty"


def test_a_near_tie_out_of_reach_says_so_rather_than_blame_the_machine():
    """An identical pair on a quiet machine ended "measure on a quieter machine" after 6 runs a side."""
    i = ratio_interval(values(100.0), values(101.0), -1)
    assert i.better is None and "the runs differ by 1%, but telling that from the same (±5%)" in i.settle
    far = ratio_interval(values(100.0), values(106.0), -1, Variation(0.5, 8, "test"))
    assert "too small to see in 12 runs a side" in far.settle
    assert i.needed is None and far.needed is None  # past MAX_SUGGESTED: no budget to ask for


def test_runs_needed_and_the_bench_interval():
    assert runs_needed(math.log(1.5), 0.1, 2) == 2
    assert runs_needed(math.log(1.001), 0.3, 2) is None
    mean, low, high = mean_interval([100.0, 110.0, 90.0])
    assert low < mean < high and mean == pytest.approx((100 * 110 * 90) ** (1 / 3))
    assert mean_interval([]) is None


def test_the_statistics_page_tells_the_intervals_the_code_computes():
    """docs/statistics.md's table of intervals around 1.00x, recomputed."""
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "statistics.md").read_text(encoding="utf-8")
    spread = [math.exp(d) for d in (-0.1, 0.0, 0.1)]  # three runs whose logs' SD is 10 %
    cases = {"| 1 | 10 % (assumed) |": (values(1.0), values(1.0)),
             "| 1 | 30 % (busy) |": (values(1.0, busy=True), values(1.0)),
             "| 3 | 10 % (their own) |": (values(*spread), values(*spread))}
    for row, (a, b) in cases.items():
        i = ratio_interval(a, b, -1)
        assert f"{row} {i.low:.2f}x – {i.high:.2f}x |" in page, row


@pytest.mark.parametrize("p10, p90, steps", [(1e-308, 1e308, 20), (-1e20, 1e20, 20), (90.0, 110.0, -1),
                                             (float("nan"), 110.0, 20), (90.0, 110.0, True)])
def test_hostile_figures_give_an_interval_or_nothing_never_a_traceback(p10, p90, steps):
    """A run's summary is a stranger's file: percentiles of ±1e308 and -1 steps raised OverflowError
    and ValueError in compare and report."""
    a = RunValue.of("a", 100.0, p10, p90, steps, False)
    b = RunValue.of("b", 1e308, p10, p90, steps, False)
    assert a is not None and a.within is None or math.isfinite(a.within)
    i = ratio_interval([a], [b], -1)
    assert i.better == "a" and math.isfinite(i.high) or i.high == math.exp(700)
    assert RunValue.of("x", float("inf"), 1.0, 2.0, 5, False) is None and RunValue.of("x", True, 1, 2, 5, False) is None

"""Issue 37: a timed row's verdict comes from an interval on B/A that sees between-run variation,
pooled over repeats, starting from the machine's own history of repeated configs."""

from __future__ import annotations

import itertools

import pytest
from support.runs import clone_run

from tinylab.analysis.compare import compare_runs, machine_variation
from tinylab.analysis.stats import ASSUMED
from tinylab.render.compare import format_compare
from tinylab.runs.store import Run


_ids = itertools.count(1)


def _run(base, path, ms: float, busy: bool = False, **config):
    """A copy of `base` with an id of its own whose summary says `ms` a step (and a load)."""
    load = dict(others_cpu_cores=2.0 if busy else 0.0, spare_cpu_cores=0.0)
    run = clone_run(base, path, config=config or None, edit=lambda e: e.update(
        step_ms_median=ms, step_ms_p10=ms * 0.99, step_ms_p90=ms * 1.01, samples_per_s=4000 / ms, **load)
        if e["event"] == "summary" else None)
    return Run(run.dir.rename(run.dir.with_name(f"20260101-000000-{next(_ids):04x}"))).record()


def test_one_pair_needs_a_difference_far_outside_the_run_to_run_spread(finished_pair, tmp_path):
    """Two runs of one config differed by 25 % on a busy node and got "A better". A lone pair has no
    between-run spread of its own: with none on record, 1.25x is "not sure" (and says what would
    settle it) while 3x is named; a busy side widens the interval but never turns the side."""
    def pair(ratio: float, busy: bool = False):
        tag = f"{ratio}{busy}"
        a = _run(finished_pair.v1, tmp_path / f"a{tag}", 100.0, busy)
        b = _run(finished_pair.v2, tmp_path / f"b{tag}", 100.0 / ratio)
        result = compare_runs(a, b)
        return result, result.row("samples_per_s")

    result, row = pair(1.25)
    assert row.better is None and row.not_sure and result.row("step_ms_median").better is None
    assert result.settled() is None
    text = format_compare(result)
    line = next(li for li in text.splitlines() if li.strip().startswith("samples/s"))
    assert "1.25x [" in line and line.endswith("? not sure") and "better" not in line
    assert "not sure: spread ±11% between runs: `--repeat" in " ".join(text.split())
    result, row = pair(3.0)
    assert row.better == result.row("step_ms_median").better == "b"
    assert result.settled() is None, "at 99% one pair of 3x is not enough: --repeat auto goes on"
    busy, busy_row = pair(3.0, busy=True)
    assert busy_row.interval.high / busy_row.interval.low > row.interval.high / row.interval.low
    assert busy_row.better in (None, "b"), "never the wrong side"
    assert any(n.startswith("the machine was busy during A: other processes") for n in busy.notes)


def test_repeats_are_pooled_and_a_stranger_is_left_out(finished_pair, tmp_path):
    """Three runs a side of a 3x pair: each side's geometric mean, an interval narrower than one
    pair's, `pooled` lists the ids; a run of another config is not pooled."""
    a = [_run(finished_pair.v1, tmp_path / f"a{i}", ms) for i, ms in enumerate((100.0, 110.0, 95.0))]
    b = [_run(finished_pair.v2, tmp_path / f"b{i}", ms) for i, ms in enumerate((34.0, 36.0, 31.0))]
    one = compare_runs(a[0], b[0]).row("samples_per_s").interval
    pooled = compare_runs(a[0], b[0], more_a=[*a[1:], b[2]], more_b=b[1:])
    row = pooled.row("samples_per_s")
    assert row.interval.runs == (3, 3) and row.better == "b"
    assert pooled.settled() == "the 99% interval excludes 1: B is better" and pooled.strict.level == 0.99
    assert row.a == pytest.approx((40 * 4000 / 110 * 4000 / 95) ** (1 / 3))
    assert row.interval.high / row.interval.low < one.high / one.low
    assert pooled.pooled == (tuple(r.id for r in a), tuple(r.id for r in b))
    assert any(f"run {b[2].id} is not a repeat of A's config" in n for n in pooled.notes)
    assert pooled.to_json()["pooled"] == {"a": list(pooled.pooled[0]), "b": list(pooled.pooled[1])}


def test_identical_repeats_name_no_winner(finished_pair, tmp_path):
    """The same config three times a side, figures spread 25 % as on a busy node: no winner."""
    a = [_run(finished_pair.v1, tmp_path / f"a{i}", ms) for i, ms in enumerate((100.0, 125.0, 90.0))]
    b = [_run(finished_pair.v1, tmp_path / f"b{i}", ms) for i, ms in enumerate((120.0, 95.0, 104.0))]
    row = compare_runs(a[0], b[0], more_a=a[1:], more_b=b[1:]).row("samples_per_s")
    assert row.interval.runs == (3, 3) and row.better is None


def test_the_machines_history_of_repeats_sets_the_prior(finished_pair, tmp_path):
    """Repeated configs of the same size on the same device give the spread; busy runs, profiled
    runs and other sizes do not count; with none, the spread is assumed."""
    like = _run(finished_pair.v1, tmp_path / "like", 100.0)
    assert machine_variation([like], like) == ASSUMED
    history = [_run(finished_pair.v1, tmp_path / f"h{i}", ms) for i, ms in enumerate((100.0, 101.0, 99.0, 100.5))]
    history += [_run(finished_pair.v1, tmp_path / "busy", 300.0, busy=True),
                _run(finished_pair.v1, tmp_path / "big", 900.0, num_layers=7),
                _run(finished_pair.v1, tmp_path / "prof", 500.0, profilers=["pytorch"])]
    variation = machine_variation(history, like)
    assert variation.dof == 3 and variation.sigma == pytest.approx(0.0085, abs=0.002)
    assert "4 runs of 1 repeated config" in variation.source
    quiet = compare_runs(like, _run(finished_pair.v2, tmp_path / "b", 90.0), variation=variation)
    assert quiet.row("samples_per_s").better == "b", "a 10 % gain is plain on a machine that repeats within 1 %"
    assert compare_runs(like, _run(finished_pair.v2, tmp_path / "b2", 90.0)).row("samples_per_s").better is None
    assert machine_variation(history, like, leave_out=[r.id for r in history[:3]]) == ASSUMED, \
        "the runs being compared are the data, not the prior"


def test_the_p90_and_the_phases_are_judged_at_99_percent(finished_pair, tmp_path):
    result = compare_runs(_run(finished_pair.v1, tmp_path / "a", 100.0), _run(finished_pair.v2, tmp_path / "b", 60.0))
    assert result.row("samples_per_s").interval.level == 0.95
    assert result.row("step_ms_p90").interval.level == 0.99

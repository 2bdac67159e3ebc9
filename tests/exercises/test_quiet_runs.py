"""A check that compares the timings of a step's run and its baseline judges them only when both
ran on a quiet machine (Summary.busy, from the load sampler): otherwise it is skipped and says
which run had no quiet machine. Checks within one run, and a spread with no load, are judged."""

from __future__ import annotations

from support.exercises import make_run

from tinylab import exercises as ex
from tinylab.exercises import CheckSpec, Step

BUSY = {"others_cpu_cores": 1.0, "spare_cpu_cores": 0.0}  # two busy loops on a 2-core machine the run filled
QUIET = {"others_cpu_cores": 0.1, "spare_cpu_cores": 0.0}
WIDE = {"step_ms_p10": 323.0, "step_ms_p90": 1701.0}  # a spread of ±82 %, no load measured
CHECKS = [("faster", "samples_per_s > 1.2 * baseline.samples_per_s"),  # timings of two runs
          ("phases", "abs(fwd_ms + bwd_ms + opt_ms - step_ms) / step_ms < 0.5"),  # timings of one run
          ("trains", "params_trained == params_total")]


def judged(tmp_path, run: dict, baseline: dict) -> dict:
    st = Step(1, "t", "text", {}, {}, {}, [CheckSpec(name, expr, name, False) for name, expr in CHECKS], [], [])
    got = ex.evaluate_checks(st, make_run(tmp_path, "run", summary={"samples_per_s": 300.0, **run}).record(),
                             make_run(tmp_path, "baseline", summary={"samples_per_s": 100.0, **baseline}).record(),
                             on_gpu=True)
    return {r.name: r for r in got}


def test_a_timing_check_over_a_busy_baseline_is_skipped_and_says_so(tmp_path):
    got = judged(tmp_path, QUIET, BUSY)
    assert (got["faster"].status, got["faster"].value) == ("skip", None)
    assert got["faster"].detail == ("no quiet run: the baseline run was on a busy machine (other processes used "
                                    "1.0 CPU cores, 0 were spare)")
    assert got["phases"].status == "pass" and got["trains"].status == "pass"  # one run's timings, and no timing
    assert ex.verdict(list(got.values())) == (
        f"2 of 3 checks ran and passed (over the run); 1 skipped ({got['faster'].detail})")


def test_both_runs_busy_are_both_named(tmp_path):
    got = judged(tmp_path, BUSY, {**BUSY, "others_cpu_cores": 1.4})
    assert got["faster"].detail == ("no quiet run: the run and the baseline run were on a busy machine (run: other "
                                    "processes used 1.0 CPU cores, 0 were spare; baseline run: other processes "
                                    "used 1.4 CPU cores, 0 were spare)")


def test_quiet_runs_and_runs_without_load_samples_are_judged(tmp_path):
    assert judged(tmp_path, QUIET, QUIET)["faster"].status == "pass"
    assert judged(tmp_path / "wide", WIDE, WIDE)["faster"].status == "pass"  # a spread alone is no busy machine

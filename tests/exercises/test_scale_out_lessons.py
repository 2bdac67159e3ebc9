"""The scaling and straggler scenarios' first steps on a CPU, run for real (`tinylab exercises check
... --device cpu`, one after the other): two gloo ranks stay in step and match one process's first loss,
and the straggler is found from the per-rank phases; and the straggler's checks can fail."""

from __future__ import annotations

import pytest
from support.exercises import check_steps
from support.runs import clone_run

from tinylab import exercises as ex

STEPS = [("scaling", 1), ("straggler", 1)]


@pytest.fixture(scope="module")
def lesson_runs(tmp_path_factory):
    # one after the other: the straggler step compares its two runs' step times, which a concurrent
    # scenario sharing the two cores would skew
    return check_steps(tmp_path_factory.mktemp("scale-out-lessons"), STEPS, at_once=False)


@pytest.mark.parametrize(("scenario", "number"), STEPS)
def test_cpu_steps_pass_on_cpu(lesson_runs, scenario, number):
    got = lesson_runs[(scenario, number)]
    assert got["rc"] == 0, got["stdout"] + got["stderr"]
    # the GPU-only checks are skipped on a CPU, and the verdict says so
    assert "checks ran and passed" in got["stdout"] and "skipped" in got["stdout"] and "FAIL" not in got["stdout"]
    assert all(r.status() == "finished" for r in got["runs"]) and len(got["runs"]) == 2


def test_the_straggler_checks_can_fail(lesson_runs, tmp_path):
    baseline, straggled = lesson_runs[("straggler", 1)]["runs"]
    assert straggled.config_dict["fault"] == "straggler" and baseline.config_dict["fault"] is None
    step = ex.get_step(ex.find_scenario(ex.load_scenarios(), "straggler"), 1)
    # the straggled run with every rank's forward alike, judged against itself: nothing to find. Both
    # copies read as quiet: on a busy machine the step-time check would be skipped, not failed
    # (tests/exercises/test_quiet_runs.py), and this test is about the checks themselves.
    def quiet(event: dict) -> None:
        if event["event"] == "summary":
            event.update(others_cpu_cores=0.0, spare_cpu_cores=0.0)

    def even_and_quiet(event: dict) -> None:
        quiet(event)
        if event["event"] == "rank":
            event.update(fwd_ms_median=20.0)

    even = clone_run(straggled, tmp_path / "even", edit=even_and_quiet)
    against = clone_run(straggled, tmp_path / "against", edit=quiet)
    results = {r.name: r.status for r in ex.evaluate_checks(step, even.record(), against.record(), on_gpu=False)}
    assert results["all-slower"] == "fail" and results["its-forward"] == "fail"


def test_the_baseline_is_one_rank(lesson_runs):
    baseline, two = lesson_runs[("scaling", 1)]["runs"]
    assert baseline.record().world_size == 1 and two.record().world_size == 2


def test_the_advisor_names_the_straggler_of_the_lessons_run(lesson_runs):
    """The fault catalogue as the advisor's test suite (tests/analysis/advice/test_faults.py): its
    two-rank fault, on the runs this lesson trained already."""
    from tinylab.analysis.advice import advise
    from tinylab.analysis.advice.facts import run_facts

    _, straggled = lesson_runs[("straggler", 1)]["runs"]
    busy = straggled.record().busy
    if busy:  # the other test worker shared the two cores: the ranks' forward times are not the fault's alone
        pytest.skip(f"the machine was busy during the straggled run ({busy}): its timings are not the fault's")
    item = next((i for i in advise(run_facts(straggled)) if i.rule == "straggler"), None)
    assert item is not None and "rank 1 forward" in item.measured.text and item.measured.value >= 1.5
    assert item.action.changes == {"fault": None}

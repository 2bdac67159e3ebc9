"""`tinylab exercises` end to end: list, show, and check with real runs of injected faults on a CPU."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from support.exercises import REPO

from tinylab import exercises as ex
from tinylab.runs.store import RunStore

SCENARIO = "performance-debugging"
STEP = {s.preset.get("fault"): s.number for s in ex.find_scenario(ex.load_scenarios(), SCENARIO).steps}


def tinylab(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "tinylab", "exercises", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env={**os.environ, **(env or {})})  # fmt: skip


def test_list_json_has_progress(progress_file):
    ex.record_progress("v1-baseline", 1, [ex.CheckResult("a", "e", "d", "pass", 1, "")], [])
    res = tinylab("list", "--json")
    assert res.returncode == 0, res.stderr
    rows = {r["id"]: r for r in json.loads(res.stdout)}
    assert rows["v1-baseline"]["progress"] == "1/3" and rows["v1-baseline"]["steps_done"] == 1
    assert rows[SCENARIO]["steps"] >= 6 and rows[SCENARIO]["minutes"] > 0 and rows[SCENARIO]["title"]
    text = tinylab("list")
    assert text.returncode == 0 and "performance-debugging" in text.stdout and "1/3" in text.stdout


def test_show_reveals_hints_one_at_a_time_and_hides_the_fault():
    overview = tinylab("show", SCENARIO)
    assert overview.returncode == 0 and "6. The fixed model" in overview.stdout
    one = tinylab("show", SCENARIO, "--step", str(STEP["non-contiguous"]), "--hints", "1")
    assert one.returncode == 0
    assert "Hints: 1 of 4 shown" in one.stdout and "column_major" not in one.stdout
    assert "non-contiguous" not in one.stdout and "fault=(hidden" in one.stdout
    assert "--answers reveals" in one.stdout and "-> " not in one.stdout
    full = tinylab("show", SCENARIO, "--step", str(STEP["non-contiguous"]), "--hints", "4", "--answers")
    assert "column_major" in full.stdout and "-> " in full.stdout
    data = json.loads(tinylab("show", SCENARIO, "--step", "1", "--json").stdout)
    assert data["hints"] == [] and data["hints_total"] == 4 and "answer" not in data["questions"][0]


def test_show_says_a_step_over_compiled_kernels_runs_nothing():
    compiled = tinylab("show", "v4-fusion", "--step", "6")
    assert compiled.returncode == 0, compiled.stderr
    assert "Compiled, no run" in compiled.stdout and "Run:" not in compiled.stdout
    assert "(compiled too, for comparison)" in compiled.stdout and "[compiled kernels]" in compiled.stdout
    ran = tinylab("show", "v4-fusion", "--step", "1")
    assert "Run:" in ran.stdout and "(run first, for comparison)" in ran.stdout and "[compiled kernels]" not in ran.stdout


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["show", "nope"], "unknown exercise 'nope': choose one of v1-baseline"),
        (["show", SCENARIO, "--step", "9"], "performance-debugging has steps 1..6, not 9"),
        (["check", SCENARIO, "--step", "1", "--device", "cpu", "--num-heads", "7"], "--num-heads 7 must divide --hidden-dim 64"),
        (["check", SCENARIO, "--step", "1", "--device", "cpu", "--fault", "nope"], "unknown fault 'nope'"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(args, fragment, tmp_path):
    res = tinylab(*args, "--runs-dir", str(tmp_path / "runs")) if args[0] == "check" else tinylab(*args)
    assert res.returncode == 2, res
    assert fragment in res.stderr and len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists()


def test_gpu_only_step_on_cpu_starts_no_run(tmp_path, progress_file):
    res = tinylab("check", SCENARIO, "--step", str(STEP["unsynced-timing"]), "--device", "cpu",
                  "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.returncode == 1
    assert "no run was started" in res.stdout and "SKIP  phases-dont-add-up" in res.stdout
    assert "GPU-only: on a CPU the work is synchronous, so unsynced timers still add up" in res.stdout
    assert "no check could run here" in res.stdout
    assert not (tmp_path / "runs").exists() and not progress_file.exists()


# ----------------------------------------------------------------------------- real runs
@pytest.fixture(scope="module")
def fault_runs(tmp_path_factory):
    """Steps missing-init, detached-backward and non-contiguous checked on a CPU, concurrently."""
    root = tmp_path_factory.mktemp("fault-runs")
    procs = {}
    for fault in ("non-contiguous", "missing-init", "detached-backward"):
        env = {**os.environ, ex.PROGRESS_ENV: str(root / f"{fault}.json")}
        args = ["check", SCENARIO, "--step", str(STEP[fault]), "--device", "cpu", "--runs-dir", str(root / fault)]
        procs[fault] = subprocess.Popen([sys.executable, "-m", "tinylab", "exercises", *args], cwd=REPO, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    out = {}
    for fault, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        runs = RunStore(root / fault).list()
        out[fault] = {"rc": proc.returncode, "stdout": stdout, "stderr": stderr, "runs": runs,
                      "progress": json.loads((root / f"{fault}.json").read_text()) if (root / f"{fault}.json").exists() else None}
    return out


@pytest.mark.parametrize("fault", ["missing-init", "detached-backward", "non-contiguous"])
def test_cpu_observable_fault_steps_pass_on_cpu(fault_runs, fault):
    got = fault_runs[fault]
    assert got["rc"] == 0, got["stdout"] + got["stderr"]
    # every check that ran passed (a GPU-only one is skipped on a CPU, and the verdict says so)
    assert re.search(r": (all checks passed|\d+ of \d+ checks ran and passed \(over the run\); \d+ skipped)",
                     got["stdout"]) and "FAIL" not in got["stdout"]
    step = str(STEP[fault])
    attempt = got["progress"]["scenarios"][SCENARIO]["steps"][step]
    assert attempt["passed"] and attempt["run_ids"] == [r.id for r in got["runs"]]
    labels = [r.config_dict["label"] for r in got["runs"]]  # visible in `tinylab runs` under these labels
    assert labels[-1] == f"exercise {SCENARIO} step {step}"
    assert all(r.status() == "finished" for r in got["runs"])


def _evaluate(fault_or_none, run, baseline=None):
    step = ex.get_step(ex.find_scenario(ex.load_scenarios(), SCENARIO), STEP[fault_or_none])
    return {r.name: r.status for r in ex.evaluate_checks(step, run.record(), baseline.record() if baseline else None, on_gpu=False)}


def test_fault_checks_fail_on_the_fixed_run(fault_runs):
    """Each CPU-observable fault's checks can fail: the fixed model (step 2's baseline) fails them."""
    fixed, noncontig = fault_runs["non-contiguous"]["runs"]
    assert fixed.config_dict["fault"] is None and noncontig.config_dict["fault"] == "non-contiguous"
    assert _evaluate("missing-init", fixed) == {"loss-starts-too-high": "fail"}
    assert _evaluate("detached-backward", fixed) == {"frozen-parameters": "fail", "empty-backward": "fail"}
    assert _evaluate("non-contiguous", fixed, fixed)["extra-copies"] == "fail"
    assert set(_evaluate(None, fixed).values()) == {"pass", "skip"}  # the fixed step passes on it


def test_each_fault_fails_the_fixed_steps_checks(fault_runs):
    (init_run,) = fault_runs["missing-init"]["runs"]
    (detached,) = fault_runs["detached-backward"]["runs"]
    assert _evaluate(None, init_run)["sane-first-loss"] == "fail"
    fixed_checks = _evaluate(None, detached)
    assert fixed_checks["every-parameter-trains"] == "fail" and fixed_checks["real-backward"] == "fail"
    assert _evaluate("missing-init", detached) == {"loss-starts-too-high": "fail"}
    assert _evaluate("detached-backward", init_run) == {"frozen-parameters": "fail", "empty-backward": "fail"}


def test_show_names_the_first_step_not_yet_passed_as_next(progress_file):
    """Steps 1 and 2 passed: `next` is step 3 (it said step 1), and the overview fits 80 columns."""
    passed = [ex.CheckResult("a", "e", "d", "pass", 1, "")]
    for step in (1, 2):
        ex.record_progress(SCENARIO, step, passed, [])
    res = tinylab("show", SCENARIO, env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.rstrip().endswith(f"next: tinylab exercises show {SCENARIO} --step 3")
    lines = res.stdout.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert [line.split()[-1] for line in lines if line.startswith(("  1.", "  2.", "  3."))] == ["done", "done", "checks"]


@pytest.mark.parametrize("scenario", [p.stem for p in sorted((REPO / "exercises").glob("*.toml"))])
def test_every_overview_and_step_fits_80_columns(scenario):
    """Prose is filled to the terminal; only indented code of a step's text, or a line holding a
    path too long to break, may be wider."""
    for args in (["show", scenario], *(["show", scenario, "--step", str(s.number), "--hints", "9", "--answers"]
                                       for s in ex.find_scenario(ex.load_scenarios(), scenario).steps)):
        res = tinylab(*args, env={"COLUMNS": "80"})
        assert res.returncode == 0, res.stderr
        wide = [line for line in res.stdout.splitlines() if len(line) > 80 and not line.startswith("    ")
                and max(map(len, line.split())) < 40]
        assert not wide, (args, wide)


@pytest.mark.parametrize("hints", ["-1", "x"])
def test_a_negative_or_non_numeric_hint_count_is_a_usage_error(capsys, hints):
    """--hints -1 showed every hint but the last, silently."""
    from tinylab.cli import main

    with pytest.raises(SystemExit) as done:
        main(["exercises", "show", SCENARIO, "--hints", hints])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"must be an integer >= 0, got '{hints}' (`tinylab exercises show --help` lists what it takes)")

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
    before, diagnosis = one.stdout.split("\nDiagnosis:\n")
    after = diagnosis[diagnosis.index("\nHints:"):]
    assert "non-contiguous" not in before + after and "fault=(hidden" in before
    # the faults to name it from, all of them, in an order that says nothing of the answer
    assert "FAULT, where FAULT is one of detached-backward, missing-init, naive-triton-swiglu, non-contiguous, unsynced-timing" \
        in " ".join(diagnosis.split())
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


# ----------------------------------------------------------------------------- naming the fault
def _summary(**values) -> dict:
    return {"event": "summary", "time": 3.0, "samples_per_s": 10.0, "step_ms_median": 40.0, "step_ms_p10": 39.0,
            "step_ms_p90": 41.0, "initial_loss": 62.5, "final_loss": 60.0, "params_trained": 14,
            "params_total": 14, "fwd_ms_median": 12.0, "bwd_ms_median": 22.0, "opt_ms_median": 6.0, **values}


@pytest.fixture
def passed_step(tmp_path, progress_file):
    """performance-debugging step 1 run and passed (its checks confirm the symptom), its fault not
    yet named; beside it a fixed run to compare with."""
    from support.runs import make_run

    root = tmp_path / "runs"
    start = {"event": "start", "time": 1.0, "device": "cpu", "device_name": "x86_64", "config": {}}
    fixed = make_run(root, "20260101-000000-aaaa", [start, _summary(initial_loss=6.9)], version="v3")
    faulty = make_run(root, "20260101-000000-bbbb", [{**start, "config": {"fault": "missing-init"}}, _summary()],
                      version="v3", fault="missing-init", label=f"exercise {SCENARIO} step 1")
    step = ex.get_step(ex.find_scenario(ex.load_scenarios(), SCENARIO), 1)
    ex.record_progress(SCENARIO, 1, ex.evaluate_checks(step, faulty.record(), None, on_gpu=False), [faulty.id])
    assert ex.load_progress()["scenarios"][SCENARIO]["steps"]["1"]["passed_at"]
    return root, fixed, faulty


def _main(capsys, monkeypatch, *argv: str) -> tuple[int, str, str]:
    from tinylab.cli import main

    monkeypatch.setenv("COLUMNS", "200")  # the runs table cuts its config column to the terminal
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_passed_step_hides_its_fault_in_every_command_until_it_is_named(passed_step, capsys, monkeypatch):
    """The step passed the moment its run ended, and passing unmasked the fault: `show last` (which
    the step's own text says to run), `runs` and compare's `differs:` printed fault=missing-init."""
    root, fixed, faulty = passed_step
    runs_dir = ["--runs-dir", str(root)]
    views = [["show", "last"], ["show", "last", "--json"], ["runs"], ["runs", "--json"],
             ["compare", fixed.id, faulty.id], ["compare", fixed.id, faulty.id, "--json"]]
    for argv in views:
        code, out, err = _main(capsys, monkeypatch, *argv, *runs_dir)
        assert code == 0, err
        assert "missing-init" not in out + err and "(hidden)" in out, (argv, out)
    _, compared, _ = _main(capsys, monkeypatch, "compare", fixed.id, faulty.id, *runs_dir)
    assert "fault=(hidden)" in next(line for line in compared.splitlines() if line.startswith("B "))
    code, out, err = _main(capsys, monkeypatch, "exercises", "answer", SCENARIO, "--step", "1", "missing-init",
                           *runs_dir)
    assert code == 0 and out.startswith("✓ missing-init: that is the fault this step injects"), out + err
    assert ex.load_progress()["scenarios"][SCENARIO]["steps"]["1"]["found_at"]
    for argv in (["show", "last"], ["runs"], ["compare", fixed.id, faulty.id]):
        assert "missing-init" in _main(capsys, monkeypatch, *argv, *runs_dir)[1], argv  # found: nothing left to hide


def test_a_wrong_guess_says_what_the_run_contradicts_and_records_nothing(passed_step, capsys, monkeypatch):
    root, _, faulty = passed_step
    code, out, err = _main(capsys, monkeypatch, "exercises", "answer", SCENARIO, "--step", "1", "detached-backward",
                           "--runs-dir", str(root))
    assert code == 1, err
    text = " ".join(out.split())
    assert text.startswith("✗ not detached-backward: the evidence contradicts it.")
    # step 4's checks (detached-backward's symptoms) measured on this run, and false there
    assert ("detached-backward would show: some parameter tensors never changed during training; this run has "
            "params_trained=14, params_total=14") in text
    assert "This run shows: the first loss is more than 3x ln(vocab)" in text and "(hidden)" not in text
    # a symptom that needs a GPU: nothing here contradicts it, and the answer says why
    code, out, _ = _main(capsys, monkeypatch, "exercises", "answer", SCENARIO, "--step", "1", "unsynced-timing",
                         "--runs-dir", str(root))
    assert code == 1 and "Nothing in this run contradicts it, because the run cannot show it: GPU-only" in " ".join(out.split())
    code, out, _ = _main(capsys, monkeypatch, "exercises", "answer", SCENARIO, "--step", "1", "non-contiguous",
                         "--json", "--runs-dir", str(root))
    got = json.loads(out)
    assert code == 1 and got["right"] is False and "baseline run, which this step does not make" in " ".join(got["verdict"])
    assert "found_at" not in ex.load_progress()["scenarios"][SCENARIO]["steps"]["1"]
    assert "missing-init" not in _main(capsys, monkeypatch, "show", "last", "--runs-dir", str(root))[1]
    # the kept run looked for in another store: the answer says it cannot weigh the guess, and why
    (root.parent / "elsewhere").mkdir()
    code, out, _ = _main(capsys, monkeypatch, "exercises", "answer", SCENARIO, "--step", "1", "detached-backward",
                         "--runs-dir", str(root.parent / "elsewhere"))
    assert code == 1 and (f"The step's run cannot be read to weigh the guess: its run {faulty.id} is not in this run store "
                        "(--runs-dir names the one it ran in)") in " ".join(out.split())


@pytest.mark.parametrize("args, fragment", [
    ([SCENARIO, "--step", "1", "bogus"], "'bogus' is not a fault step 1's run could have: choose one of "
                                         "detached-backward, missing-init, naive-triton-swiglu"),
    ([SCENARIO, "--step", "1", "straggler"], "'straggler' is not a fault step 1's run could have"),  # one rank
    ([SCENARIO, "--step", "6", "missing-init"], "performance-debugging step 6 hides no fault: there is nothing to name"),
    (["v1-baseline", "--step", "1", "missing-init"], "v1-baseline step 1 hides no fault"),
    ([SCENARIO, "--step", "9", "missing-init"], "performance-debugging has steps 1..6, not 9"),
    (["nope", "--step", "1", "missing-init"], "unknown exercise 'nope'"),
])
def test_an_answer_that_names_nothing_to_judge_is_one_line_and_exit_2(args, fragment, tmp_path, progress_file):
    (tmp_path / "runs").mkdir()
    res = tinylab("answer", *args, "--runs-dir", str(tmp_path / "runs"))
    assert res.returncode == 2, res
    assert fragment in res.stderr and len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert not progress_file.exists() and not any((tmp_path / "runs").iterdir())


def test_the_help_and_the_step_say_how_to_answer(passed_step, capsys, monkeypatch):
    code, out, _ = _main(capsys, monkeypatch, "exercises", "show", SCENARIO, "--step", "1")
    text = " ".join(out.split())
    assert code == 0 and (f"name the fault: tinylab exercises answer {SCENARIO} --step 1 FAULT, where FAULT is one "
                          "of detached-backward, missing-init") in text
    with pytest.raises(SystemExit):
        _main(capsys, monkeypatch, "exercises", "--help")
    assert re.search(r"answer +name the fault a step hides", capsys.readouterr().out)
    with pytest.raises(SystemExit):
        _main(capsys, monkeypatch, "exercises", "answer", "--help")
    usage = " ".join(capsys.readouterr().out.split())
    assert "tinylab exercises answer performance-debugging --step 1 FAULT" in usage and "0 right, 1 wrong" in usage


def test_a_passed_step_names_the_runs_it_keeps(passed_step, capsys, monkeypatch):
    """v1-baseline 1/3 reopened showed `no run for this step yet`: a step keeps the runs that passed
    it, through a failed retry too."""
    _, _, faulty = passed_step
    ex.record_progress(SCENARIO, 1, [ex.CheckResult("loss-starts-too-high", "e", "d", "fail", 6.9, "")],
                       ["20260101-000000-cccc"])
    code, out, _ = _main(capsys, monkeypatch, "exercises", "show", SCENARIO, "--step", "1")
    assert code == 0 and re.search(rf"\nPassed \d{{4}}-\d\d-\d\d \d\d:\d\d with run {faulty.id}\n", out), out
    assert "cccc" not in out

"""Issue 38's CLI consistency: a store named on purpose that is not there, what `advise` reads,
`compare` of a run with itself, and `hotspots last` naming the run it shows."""

from __future__ import annotations

import json

import pytest
from support.runs import make_run
from support.tables import run_with_events, table_of

from tinylab.cli import main
from tinylab.core.eventlog import EventWriter
from tinylab.core.events import ProfileEvent
from tinylab.profilers.base import CollectResult, write_kernel_table
from tinylab.runs.store import ENV_RUNS_DIR

READERS = [["runs"], ["show", "last"], ["follow", "last"], ["cancel", "last"], ["rm", "last"],
           ["compare", "a", "b"], ["report", "last"], ["roofline", "last"], ["timeline", "last"],
           ["advise", "last"], ["hotspots", "last"]]


@pytest.mark.parametrize("argv", READERS, ids=lambda argv: argv[0])
def test_a_missing_store_named_by_runs_dir_is_an_error_naming_it(argv, tmp_path, capsys):
    """`runs --runs-dir /nonexistent/dir` said "no runs" and exited 0: a typo went unnoticed."""
    missing = tmp_path / "nonexistent" / "dir"
    assert main([*argv, "--runs-dir", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == (f"tinylab: error: there is no run store {missing} (named by --runs-dir): no such folder; "
                   "check the name (a run launched there creates it)\n")


def test_a_missing_store_named_by_the_environment_is_an_error_and_the_default_is_no_runs_yet(
        tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV_RUNS_DIR, str(tmp_path / "typo"))
    assert main(["runs"]) == 2
    assert "named by $TINYLAB_RUNS_DIR" in capsys.readouterr().err
    monkeypatch.delenv(ENV_RUNS_DIR)
    assert main(["runs"]) == 0  # ./tinylab_runs not made yet: a learner's first look
    assert capsys.readouterr().out == "no runs in tinylab_runs\n"
    assert not (tmp_path / "tinylab_runs").exists()


def test_advise_of_a_file_that_is_no_run_says_it_also_reads_traces(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.csv").write_text("a,b\n")
    for ref in ("x.csv", "./x.csv"):
        assert main(["advise", ref]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.endswith(
            "; advise reads a run or a PyTorch profiler trace file (.json / .json.gz)\n"), err


def test_compare_of_a_run_with_itself_is_refused(tmp_path, capsys):
    root = tmp_path / "runs"
    run = make_run(root, "20260101-000000-aaaa", [{"event": "start", "time": 1.0}])
    for a, b in (("last", "last"), ("last", run.id), ("20260101", "last")):
        for repeat in ([], ["--repeat", "2"]):  # refused before any repeat is launched
            assert main(["compare", a, b, "--runs-dir", str(root), *repeat]) == 2
            assert capsys.readouterr().err == (f"tinylab: error: A and B are both run {run.id}: compare two runs "
                                               "(`tinylab runs` lists them)\n")


def test_hotspots_last_names_the_run_it_shows(tmp_path, capsys):
    run = run_with_events(tmp_path, [])
    with EventWriter(run / "events.jsonl") as ev:
        ev.emit(ProfileEvent(**write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 3, 30.0)]),
                                                                                None, "pytorch-operators"))))
    assert main(["hotspots", "last", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert capsys.readouterr().out.startswith(f"{run.name}  [pytorch-operators]")
    assert main(["hotspots", "last", "--json", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == run.name

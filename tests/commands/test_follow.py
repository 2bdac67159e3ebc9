"""`tinylab follow`: its last word on a run is the one `runs` and `show` give."""

from __future__ import annotations

from support.runs import make_run

from tinylab.cli import main


def test_follow_names_a_damaged_run_as_runs_does(tmp_path, capsys):
    run = make_run(tmp_path, "20260101-000000-aaaa", [])
    (run.dir / "config.json").write_text("{not json")
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    assert "damaged" in capsys.readouterr().out
    assert main(["follow", run.id, "--runs-dir", str(tmp_path)]) == 3  # lost: nothing recorded an end
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"run {run.id} damaged (lost): config.json")


def test_follow_of_a_dry_run_returns_at_once(tmp_path, capsys):
    run = make_run(tmp_path, "20260101-000000-aaaa")
    (run.dir / "job.sbatch").write_text("#!/bin/bash\n")
    assert main(["follow", run.id, "--runs-dir", str(tmp_path)]) == 4
    assert capsys.readouterr().err.splitlines()[-1] == f"run {run.id} dry-run"

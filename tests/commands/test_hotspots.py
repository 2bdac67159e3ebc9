"""`tinylab hotspots`: JSON, CSV and text output, run folders and ids, one-line errors."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from support import samples
from support.paths import FIX, deny
from support.runs import kernels_csv
from support.tables import run_with_events, table_of

from tinylab.core.kernel_table import (
    KERNEL_COLUMNS,
)
from tinylab.cli import main
from tinylab.core.eventlog import EventWriter
from tinylab.core.events import ProfileEvent
from tinylab.profilers.base import CollectResult, write_kernel_table
from tinylab.runs.store import mark_run


def test_cli_json_on_a_native_file(capsys):
    path = FIX / "rocprofv3/hpctraining-pytorch-resnet/pid_kernels_kernel_stats.mpi_rank.csv"
    code, out, _ = run_cli(capsys, str(path), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["source"] == str(path) and data["format"] == "rocprofv3-kernel-stats"
    assert set(data) >= {"source", "format", "total_ns", "kernels"}
    kernels = data["kernels"]
    assert len(kernels) == 9 and all(set(k) == set(KERNEL_COLUMNS) for k in kernels)
    assert [k["total_ns"] for k in kernels] == sorted((k["total_ns"] for k in kernels), reverse=True)
    assert data["total_ns"] == sum(k["total_ns"] for k in kernels) == 997540814
    assert any(k["name"].endswith("at::detail::Array<char*, 2>)") for k in kernels)  # full, untruncated
    assert math.isclose(sum(k["pct"] for k in kernels), 100, abs_tol=1e-3)


def test_cli_csv_top_and_text(capsys):
    path = str(FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz")
    code, out, _ = run_cli(capsys, path, "--csv", "--top", "3")
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and rows[0] == KERNEL_COLUMNS and len(rows) == 4
    code, out, _ = run_cli(capsys, path, "--category", "gemm")
    assert code == 0
    lines = out.splitlines()
    assert "[pytorch-trace]" in lines[0] and "52 kernels" in lines[0]
    assert all("gemm" in line for line in lines[2:-1]) and lines[-1].startswith("by category: elementwise 54.8%")


def test_cli_counts_only_says_so(capsys, tmp_path):
    path = tmp_path / "timestamps.csv"
    path.write_text(samples.rounded_compute_timestamps())
    code, out, _ = run_cli(capsys, str(path), "--json")
    data = json.loads(out)
    assert data["total_ns"] is None and data["kernels"][0]["calls"] == 3 and "rounded" in data["note"]
    code, out, _ = run_cli(capsys, str(path))
    assert "no durations" in out.splitlines()[0] and "note: timestamps are rounded" in out


def test_cli_run_folder_and_run_id(capsys, tmp_path):
    run = run_with_events(tmp_path, [])
    with EventWriter(run / "events.jsonl") as ev:
        ev.emit(ProfileEvent(**write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 3, 30.0)]), None, "pytorch-operators"))))
    for ref in (str(run), "20260101", "last"):
        code, out, err = run_cli(capsys, ref, "--json", "--runs-dir", str(tmp_path / "runs"))
        assert code == 0, err
        assert json.loads(out)["kernels"][0]["name"] == "aten::mm" and json.loads(out)["format"] == "pytorch-operators"


def test_cli_errors(capsys, tmp_path):
    empty_run = run_with_events(tmp_path, [{"event": "start"}])
    code, _, err = run_cli(capsys, str(empty_run))
    assert code == 2 and "this run has no kernel table" in err
    code, _, err = run_cli(capsys, "nope", "--runs-dir", str(tmp_path / "runs"))
    assert code == 2 and "no run matches 'nope'" in err
    code, _, err = run_cli(capsys, str(tmp_path / "missing.csv"))
    assert code == 2 and err == f"tinylab: error: {tmp_path / 'missing.csv'}: no such file or folder\n"
    with pytest.raises(SystemExit):
        main(["hotspots", "x", "--top", "0"])


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["hotspots", *args])
    out, err = capsys.readouterr()
    return code, out, err


def two_rank_run(tmp_path):
    """A run of two ranks, each rank's table recorded apart: rank 1 spends longer in aten::mm."""
    run = run_with_events(tmp_path, [])
    with EventWriter(run / "events.jsonl") as ev:
        for rank, mm in ((0, 60.0), (1, 90.0)):
            rows = [("aten::mm", 3, mm), ("c10d::allreduce_", 1, 10.0)]
            ev.emit(ProfileEvent(**write_kernel_table(run, "pytorch", CollectResult({}, table_of(rows), None,
                                                                                    "pytorch-operators"), rank)))
    return run


def test_cli_a_run_of_two_ranks_shows_rank_0_and_says_so(capsys, tmp_path):
    run = str(two_rank_run(tmp_path))
    code, out, _ = run_cli(capsys, run)
    lines = out.splitlines()
    assert code == 0 and lines[1] == "rank 0 of 2; --rank N for another, --rank all for one row per kernel and rank"
    assert "70 ns total kernel time" in lines[0] and "communication" in lines[4]  # rank 0's, not 170 ns of both
    assert "per rank (each rank's whole table):" in lines
    assert "spread between ranks: kernel time +42.9% (rank 1 most, rank 0 least)" in out
    data = json.loads(run_cli(capsys, run, "--rank", "1", "--json")[1])
    assert (data["rank"], data["ranks"], data["total_ns"]) == (1, [0, 1], 100)
    assert [r["communication_ns"] for r in data["per_rank"]] == [10, 10]
    rows = list(csv.reader(io.StringIO(run_cli(capsys, run, "--rank", "all", "--csv")[1])))
    assert rows[0] == ["rank", *KERNEL_COLUMNS]
    assert [(r[0], r[1]) for r in rows[1:]] == [("1", "aten::mm"), ("0", "aten::mm"), ("0", "c10d::allreduce_"),
                                               ("1", "c10d::allreduce_")]
    rows = list(csv.reader(io.StringIO(run_cli(capsys, run, "--csv")[1])))
    assert {r[0] for r in rows[1:]} == {"0"}  # one rank's table still says whose it is
    code, out, _ = run_cli(capsys, run, "--rank", "all")
    assert code == 0 and out.splitlines()[2].startswith("  #  rank ")


def test_cli_bad_rank_is_a_one_line_error_naming_the_ranks(capsys, tmp_path):
    run = str(two_rank_run(tmp_path))
    code, _, err = run_cli(capsys, run, "--rank", "7")
    assert code == 2 and err == "tinylab: error: --rank 7: 20260101-000000-abcd has ranks 0, 1 (or --rank all)\n"
    path = str(FIX / "rocprofv3/hpctraining-pytorch-resnet/pid_kernels_kernel_stats.mpi_rank.csv")
    code, _, err = run_cli(capsys, path, "--rank", "0")
    assert code == 2 and err == f"tinylab: error: --rank 0: {path} has no ranks (one process, one table)\n"
    with pytest.raises(SystemExit):
        main(["hotspots", run, "--rank", "-1"])
    assert "must be a rank from 0 to 2047 or 'all', got '-1'" in capsys.readouterr().err


def test_a_store_folder_is_refused_naming_how_many_runs_and_one_to_pick(capsys, tmp_path):
    """`tinylab hotspots DIR` merged every profile below DIR, other runs' too, without a word."""
    for run_id in ("20260101-000000-aaaa", "20260101-000100-bbbb"):
        run = tmp_path / "store" / run_id
        run.mkdir(parents=True)
        mark_run(run)
        (run / "config.json").write_text("{}")
        write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 3, 30.0)]), None, "pytorch-operators"))
    store = tmp_path / "store"
    code, out, err = run_cli(capsys, str(store))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{store} holds 2 runs, whose profiles would be mixed: name one " in err
    assert f"(tinylab hotspots 20260101-000100-bbbb --runs-dir {store})" in err


# ------------------------------------------------------------------------------ folders that cannot be read
def test_cli_on_a_system_folder_is_a_one_line_error(capsys):
    """`tinylab hotspots /proc/1` ended in a PermissionError traceback (an entry it cannot stat)."""
    code, out, err = run_cli(capsys, "/proc/1")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("tinylab: error: /proc/1"), err


def test_cli_on_a_folder_with_an_unreadable_entry(capsys, tmp_path, monkeypatch):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "kernels.csv").write_text(kernels_csv([("gemm", 2, 20.0)]))
    (tmp_path / "theirs").mkdir()
    deny(monkeypatch, tmp_path / "theirs")
    code, out, err = run_cli(capsys, str(tmp_path), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["kernels"][0]["name"] == "gemm" and "could not be read" in data["note"] and "theirs" in data["note"]
    (tmp_path / "mine" / "kernels.csv").unlink()
    code, _, err = run_cli(capsys, str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "could not be read" in err, err


def test_cli_on_a_path_below_an_unreadable_folder(capsys, tmp_path, monkeypatch):
    (tmp_path / "theirs").mkdir()
    deny(monkeypatch, tmp_path / "theirs")
    for path in (tmp_path / "theirs" / "results.db", tmp_path / "theirs" / "sub"):
        code, _, err = run_cli(capsys, str(path))
        assert code == 2 and err == f"tinylab: error: {path}: cannot read: Permission denied\n", err


def test_cli_on_a_store_with_an_unreadable_entry(capsys, tmp_path, monkeypatch):
    run = run_with_events(tmp_path, [])
    with EventWriter(run / "events.jsonl") as ev:
        ev.emit(ProfileEvent(**write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 3, 30.0)]), None, "pytorch-operators"))))
    (run.parent / "20260102-000000-ffff").mkdir()
    deny(monkeypatch, run.parent / "20260102-000000-ffff")
    code, out, err = run_cli(capsys, "last", "--json", "--runs-dir", str(run.parent))
    assert code == 0 and json.loads(out)["kernels"][0]["name"] == "aten::mm", err


def test_kernel_and_file_names_reach_the_terminal_without_escape_sequences(tmp_path, capsys):
    from tinylab.cli import main

    evil = "\x1b]52;c;ZXZpbA==\x07\x1b[2J"
    path = tmp_path / f"k{evil}ernel_stats.csv"
    path.write_text("Name,Calls,TotalDurationNs,AverageNs,Percentage,MinNs,MaxNs\n"
                    f'"{evil}gemm_kernel",10,1000,100,100.0,90,110\n')
    assert main(["hotspots", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "?]52;c;ZXZpbA==?" in out


@pytest.mark.parametrize("where", ["absolute", "dotdot", "profiles-link"])
def test_a_kernel_table_outside_the_run_folder_is_never_read(tmp_path, capsys, where):
    """A neighbour's secret CSV was shown as the run's kernel table: through an absolute or `../`
    path in a profile event, or a `profiles/` folder that is a link to their folder."""
    from support.runs import make_run

    from tinylab.cli import main

    secret_dir = tmp_path / "neighbour"
    secret_dir.mkdir()
    (secret_dir / "kernels.csv").write_text("Name,Calls,TotalDurationNs,AverageNs,Percentage,MinNs,MaxNs\n"
                                            "SECRET_kernel,1,1000,1000,100.0,1000,1000\n")
    store = tmp_path / "runs"
    paths = {"absolute": str(secret_dir / "kernels.csv"), "dotdot": "../../neighbour/kernels.csv",
             "profiles-link": "profiles/pytorch/kernels.csv"}
    run = make_run(store, "20260101-000000-aaaa", [
        {"event": "profile", "time": 1.0, "tool": "pytorch", "artifacts": {}, "kernel_table": paths[where]}])
    if where == "profiles-link":
        (secret_dir / "pytorch").mkdir()
        (secret_dir / "pytorch" / "kernels.csv").write_text((secret_dir / "kernels.csv").read_text())
        (run.dir / "profiles").symlink_to(secret_dir)
    code = main(["hotspots", run.id, "--runs-dir", str(store)])
    captured = capsys.readouterr()
    assert "SECRET" not in captured.out + captured.err
    assert code == 2 and captured.err.count("\n") == 1

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

from tinylab.analysis.kernel_table import (
    KERNEL_COLUMNS,
)
from tinylab.cli import main
from tinylab.events import EventWriter
from tinylab.profilers import CollectResult, write_kernel_table


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
        ev.emit("profile", **write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 3, 30.0)]), None, "pytorch-operators")))
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
        ev.emit("profile", **write_kernel_table(run, "pytorch", CollectResult({}, table_of([("aten::mm", 3, 30.0)]), None, "pytorch-operators")))
    (run.parent / "20260102-000000-ffff").mkdir()
    deny(monkeypatch, run.parent / "20260102-000000-ffff")
    code, out, err = run_cli(capsys, "last", "--json", "--runs-dir", str(run.parent))
    assert code == 0 and json.loads(out)["kernels"][0]["name"] == "aten::mm", err

"""`tinylab timeline` on hostile inputs: devices, FIFOs, gzip bombs and escape sequences in names."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys

import pytest

from tinylab.cli import main


def _trace(kernel_name: str) -> dict:
    def x(name, ts, dur, cat, pid=1, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": 1, "ts": ts, "dur": dur, "args": args}

    return {"traceEvents": [x("ProfilerStep#5", 0, 100, "user_annotation"), x("forward", 0, 60, "user_annotation"),
                            x("cudaLaunchKernel", 5, 2, "cuda_runtime", correlation=1),
                            x(kernel_name, 10, 30, "kernel", pid=0, device=0, stream=7, correlation=1)]}


def test_names_from_the_files_reach_the_terminal_without_escape_sequences(tmp_path, capsys):
    evil = "\x1b]52;c;ZXZpbA==\x07\x1b[2J"
    path = tmp_path / f"trace{evil}.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(_trace(f"gemm{evil}_kernel"), fh)
    assert main(["timeline", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "?]52;c;" in out


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_device_or_a_fifo_is_refused_at_once(tmp_path, capsys, kind):
    path = "/dev/zero" if kind == "device" else tmp_path / "trace.json"
    if kind == "fifo":
        os.mkfifo(path)
    assert main(["timeline", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not a regular file" in err and err.count("\n") == 1


def test_a_gzip_bomb_is_refused_in_bounded_memory(tmp_path):
    """A few hundred KB that gunzip to more than the trace limit: refused after reading no more
    than the limit, in a process that stays far below 500 MB."""
    bomb = tmp_path / "bomb.json.gz"
    member = gzip.compress(b"{}," * (1 << 20), 9)  # 3 MB of JSON in ~3 KB; gzip members simply concatenate
    bomb.write_bytes(gzip.compress(b'{"traceEvents": [') + member * 48 + gzip.compress(b"{}]}"))  # 150 MB
    assert bomb.stat().st_size < 400_000
    probe = ("import resource, subprocess, sys; "
             f"p = subprocess.run([sys.executable, '-m', 'tinylab', 'timeline', {str(bomb)!r}], capture_output=True, text=True); "
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(p.stderr, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    code, peak_kb = map(int, done.stdout.split())
    assert code == 2 and re.search(r"decompresses to more than [\d,]+ MiB from [\d,]+ bytes: a gzip bomb", done.stderr), done.stderr
    assert peak_kb < 500 * 1024, f"{peak_kb / 1024:.0f} MB"


def test_a_trace_of_millions_of_values_that_are_not_events_is_one_line(tmp_path, capsys):
    path = tmp_path / "many.json"
    path.write_bytes(b'{"traceEvents": [' + b"0," * 8_000_001 + b"0]}")
    assert main(["timeline", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"tinylab: error: {path}: the trace holds no timed events"


@pytest.mark.parametrize("where", ["absolute", "dotdot", "profiles-link"])
def test_a_trace_outside_the_run_folder_is_never_read(tmp_path, capsys, where):
    from support.runs import make_run

    neighbour = tmp_path / "neighbour"
    (neighbour / "pytorch").mkdir(parents=True)
    for path in (neighbour / "secret.trace.json.gz", neighbour / "pytorch" / "secret.trace.json.gz"):
        with gzip.open(path, "wt") as fh:
            json.dump(_trace("SECRET_kernel"), fh)
    rel = {"absolute": str(neighbour / "secret.trace.json.gz"), "dotdot": "../../neighbour/secret.trace.json.gz",
           "profiles-link": "profiles/pytorch/secret.trace.json.gz"}[where]
    store = tmp_path / "runs"
    run = make_run(store, "20260101-000000-aaaa", [
        {"event": "profile", "time": 1.0, "tool": "pytorch", "artifacts": {"secret.trace.json.gz": rel},
         "kernel_table": None}])
    if where == "profiles-link":
        (run.dir / "profiles").symlink_to(neighbour)
    code = main(["timeline", run.id, "--runs-dir", str(store)])
    captured = capsys.readouterr()
    assert "SECRET" not in captured.out + captured.err
    assert code == 2 and ("leads outside the run folder" in captured.err or "is a link" in captured.err)

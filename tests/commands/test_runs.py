"""The run commands as a user types them: bad RUN arguments, --detach speed, runs/show output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from support.paths import deny
from support.runs import TINY_FLAGS, cli, clone_run, make_run, profile_tables, world_of

from tinylab.cli import main
from tinylab.runs.record import short_id
from tinylab.runs.store import RunStore

#: Every command that takes RUN references, with the arguments that surround them.
RUN_COMMANDS = {
    "show": lambda ref: ["show", ref],
    "follow": lambda ref: ["follow", ref],
    "cancel": lambda ref: ["cancel", ref],
    "rm": lambda ref: ["rm", ref],
    "compare-a": lambda ref: ["compare", ref, "last"],
    "compare-b": lambda ref: ["compare", "last", ref],
    "report": lambda ref: ["report", ref],
}


@pytest.fixture(scope="module")
def two_run_store(tmp_path_factory) -> RunStore:
    root = tmp_path_factory.mktemp("refs")
    make_run(root, "20260101-000000-aaaa", [])
    make_run(root, "20260101-000000-aabb", [])
    return RunStore(root)


def assert_one_line_error(proc, *fragments: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("tinylab: error: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize("command", RUN_COMMANDS)
@pytest.mark.parametrize("ref, fragment", [
    ("nosuchrun", "no run matches 'nosuchrun'"),
    ("20260101-000000-a", "is ambiguous: 2 runs match"),
])
def test_bad_run_reference_is_a_one_line_error(two_run_store, command, ref, fragment):
    proc = cli(*RUN_COMMANDS[command](ref), "--runs-dir", str(two_run_store.root))
    assert_one_line_error(proc, fragment)
    assert len(two_run_store.list()) == 2, "nothing may be removed on a bad reference"


@pytest.mark.parametrize("command", RUN_COMMANDS)
def test_an_empty_reference_is_refused_and_nothing_is_done(tmp_path, command):
    """`RUN=""; tinylab rm "$RUN"`: an empty prefix matched every run, and the only run of a store."""
    root = tmp_path / "one"
    make_run(root, "20260101-000000-aaaa", [])
    proc = cli(*RUN_COMMANDS[command](""), "--runs-dir", str(root))
    assert_one_line_error(proc, "the run reference is empty: nothing done")
    assert len(RunStore(root).list()) == 1


def test_every_command_takes_the_short_id_the_lab_shows(two_run_store, capsys):
    """The Runs and Exercises screens show 0101-0000-aabb; `tinylab show` said "no run matches"."""
    root = str(two_run_store.root)
    for argv in (["show", "0101-0000-aabb"], ["compare", "0101-0000-aaaa", "0101-0000-aabb"],
                 ["report", "0101-0000-aabb"], ["hotspots", "0101-0000-aabb"]):
        code = main([*argv, "--runs-dir", root])
        out, err = capsys.readouterr()
        assert "no run matches" not in err and "ambiguous" not in err, (argv, err)
        assert code in (0, 2) and (code == 0 or "no kernel table" in err), (argv, err)
    assert main(["show", "0101-0000-aabb", "--json", "--runs-dir", root]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "20260101-000000-aabb"


@pytest.mark.parametrize("command", RUN_COMMANDS)
def test_last_in_an_empty_store_is_a_one_line_error(tmp_path, command):
    (tmp_path / "empty").mkdir()  # a store named by --runs-dir that is not there is an error of its own
    proc = cli(*RUN_COMMANDS[command]("last"), "--runs-dir", str(tmp_path / "empty"))
    assert_one_line_error(proc, "no runs in")


def test_runs_dir_comes_from_the_environment(two_run_store, monkeypatch):
    monkeypatch.setenv("TINYLAB_RUNS_DIR", str(two_run_store.root))
    proc = cli("runs", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in json.loads(proc.stdout)] == ["20260101-000000-aabb", "20260101-000000-aaaa"]


def test_cancel_of_a_finished_run_says_it_is_not_running(finished_pair):
    proc = cli("cancel", finished_pair.v1.id, "--runs-dir", str(finished_pair.store.root))
    assert_one_line_error(proc, f"run {finished_pair.v1.id} is not running (status: finished)")
    assert finished_pair.v1.cancel_record is None


def test_detach_returns_at_once(finished_pair):
    """`tinylab run --detach` must not wait for torch or the run: the session's two runs were
    launched that way, and each launch is timed there."""
    print(f"tinylab run --detach took {', '.join(f'{s:.2f} s' for s in finished_pair.launch_seconds)}")
    assert max(finished_pair.launch_seconds) < 5.0


def test_runs_and_show_describe_finished_runs(finished_pair):
    root = str(finished_pair.store.root)
    rows = json.loads(cli("runs", "--json", "--runs-dir", root).stdout)
    by_id = {r["id"]: r for r in rows}
    for run, version in ((finished_pair.v1, "v1"), (finished_pair.v2, "v2")):
        assert by_id[run.id]["status"] == "finished" and by_id[run.id]["version"] == version
        assert by_id[run.id]["samples_per_s"] == pytest.approx(run.events().last("summary")["samples_per_s"])
    table = cli("runs", "--runs-dir", root).stdout
    # the session's runs share the machine with the tests: they may be marked busy (tests/test_events.py)
    status = "busy" if finished_pair.v1.record().busy else "finished"
    assert any(line.startswith(short_id(finished_pair.v1.id)) and f" {status} " in line for line in table.splitlines())
    shown = json.loads(cli("show", finished_pair.v2.id, "--json", "--runs-dir", root).stdout)
    assert shown["status"] == "finished" and shown["summary"]["steps"] == 8 and shown["corrupt_lines"] == []
    text = cli("show", "last", "--runs-dir", root).stdout
    assert "status   finished" in text and "samples/s" in text


def test_show_at_80_columns_wraps_at_spaces_and_formats_numbers(finished_pair):
    from tinylab.config import PROFILER_SETTINGS

    """`show` wrapped its config line mid-word and printed raw floats (loss 5.665811538696289)."""
    run = finished_pair.v2
    res = cli("show", run.id, "--runs-dir", str(finished_pair.store.root), env={**os.environ, "COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert all(len(line) <= 80 or max(map(len, line.split())) > 40 for line in lines), res.stdout  # only a long path
    first = next(i for i, line in enumerate(lines) if line.startswith("config   "))
    end = next(i for i in range(first + 1, len(lines)) if not lines[i].startswith(" " * 9))
    config = [line[9:] for line in lines[first:end]]
    assert len(config) > 1  # wrapped
    stored = json.loads((run.dir / "config.json").read_text())
    assert " ".join(" ".join(config).split()) == " ".join(
        f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in sorted(stored.items())
        if v not in (None, "", []) and k not in PROFILER_SETTINGS)  # every key=value whole, in order; no
    # setting of a profiler the run did not use (it was not profiled)
    summary = run.events().last("summary")
    assert f"  final loss         {summary['final_loss']:.4f}" in lines
    assert f"  step median        {summary['step_ms_median']:.2f} ms" in lines
    assert re.search(r"^progress step 8/8  loss \d+\.\d{4}$", res.stdout, flags=re.M)


def test_runs_fits_80_columns_and_shows_which_run_was_profiled(tmp_path):
    root = tmp_path / "runs"
    make_run(root, "20260101-000000-aaaa", [], version="v2")
    make_run(root, "20260101-000100-bbbb", [], version="v2", profilers=["pytorch"])
    make_run(root, "20260101-000200-cccc", [], version="v1", label="exercise v1-baseline step 1")
    res = cli("runs", "--runs-dir", str(root), env={**os.environ, "COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    rows = res.stdout.splitlines()
    assert len(rows) == 4 and max(map(len, rows)) <= 80, res.stdout
    by_id = {row.split()[0]: row for row in rows[1:]}
    assert list(by_id) == ["0101-0002-cccc", "0101-0001-bbbb", "0101-0000-aaaa"]  # newest first, as in the lab
    assert "prof=" in by_id["0101-0001-bbbb"] and "prof=" not in by_id["0101-0000-aaaa"]


@pytest.mark.parametrize("damage, expect", [
    ("partial_tail", "status   finished"),
    ("corrupt_middle", "events.jsonl has 1 unreadable line(s): [3]"),
    ("binary", "events.jsonl has 2 unreadable line(s)"),
    ("missing", "status   lost"),
    ("bad_types", "events.jsonl has 2 unreadable line(s)"),
])
def test_show_reports_damaged_event_logs(finished_pair, tmp_path, damage, expect):
    run = clone_run(finished_pair.v1, tmp_path)
    path = run.dir / "events.jsonl"
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    if damage == "partial_tail":
        path.write_bytes(data[:-7])
    elif damage == "corrupt_middle":
        path.write_bytes(b"".join(lines[:2] + [b'{"event": "step", "st\n'] + lines[3:]))
    elif damage == "binary":
        path.write_bytes(b"".join(lines[:4] + [b"\x00\xff\xfe garbage\n", b"\x89PNG\r\n"] + lines[4:]))
    elif damage == "missing":
        path.unlink()
    elif damage == "bad_types":  # parseable records whose fields have the wrong types
        path.write_bytes(data + b'{"event": "step", "step": "x", "loss": [1]}\n{"event": "exit", "returncode": "?"}\n')
    proc = cli("show", str(run.dir), "--runs-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert expect in proc.stdout
    assert "Traceback" not in proc.stderr
    assert cli("show", str(run.dir), "--json", "--runs-dir", str(tmp_path)).returncode == 0


# ------------------------------------------------------------------------------ rm and friends stay in the store
def tinylab_in(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinylab", *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd)


@pytest.mark.parametrize("command", ["rm", "show", "cancel", "follow"])
@pytest.mark.parametrize("ref", ["v", ".", "./v"])
def test_a_folder_holding_a_config_json_is_not_a_run(tmp_path, command, ref):
    """`mkdir v && echo '{}' > v/config.json && tinylab rm v` deleted v (and `rm .` a whole project)."""
    project = tmp_path / "project"
    (project / "v").mkdir(parents=True)
    for folder in (project, project / "v"):
        (folder / "config.json").write_text("{}")
        (folder / "data.txt").write_text("important")
    proc = tinylab_in(project / "v" if ref == "." else project, command, ref,
                      "--runs-dir", str(tmp_path / "store"))
    assert_one_line_error(proc)
    assert (project / "data.txt").read_text() == "important" and (project / "v" / "data.txt").read_text() == "important"


def test_rm_never_follows_a_symlinked_run_folder(tmp_path):
    elsewhere = make_run(tmp_path / "elsewhere", "20260101-000000-aaaa", [])
    (elsewhere.dir / "data.txt").write_text("important")
    store = tmp_path / "store"
    store.mkdir()
    (store / elsewhere.id).symlink_to(elsewhere.dir, target_is_directory=True)
    for ref in (elsewhere.id, str(store / elsewhere.id)):
        proc = cli("rm", ref, "--runs-dir", str(store))
        assert_one_line_error(proc)
    assert (elsewhere.dir / "data.txt").read_text() == "important"


def main_in(capsys, monkeypatch, cwd, *args: str) -> tuple[int, str, str]:
    """tinylab.cli.main in this process (fast), run from `cwd`: (exit code, stdout, stderr)."""
    monkeypatch.chdir(cwd)
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error_in(code, err, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("tinylab: error: "), (code, err)
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _id_shaped_outside(tmp_path):
    """An unrelated folder outside the store that only looks like an old run (id-shaped, config.json,
    process.json) and holds someone's work."""
    folder = tmp_path / "outside" / "20250101-000000-abcd"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "process.json").write_text("{}")
    return folder


def _marked_outside(tmp_path):
    folder = tmp_path / "outside" / "proj2"
    folder.mkdir(parents=True)
    (folder / ".tinylab-run").write_text(json.dumps({"id": "proj2"}))
    return folder


def _run_of_another_store(tmp_path):
    return make_run(tmp_path / "other-store", "20260101-000000-aaaa", []).dir


def _empty_marker_in_store(tmp_path):
    folder = tmp_path / "store" / "20260101-000000-bbbb"
    folder.mkdir(parents=True)
    (folder / ".tinylab-run").write_bytes(b"")
    return folder


def _marker_of_another_id_in_store(tmp_path):
    folder = tmp_path / "store" / "20260101-000000-cccc"
    folder.mkdir(parents=True)
    (folder / ".tinylab-run").write_text(json.dumps({"id": "20260101-000000-aaaa"}))
    return folder


def _symlinked_run_in_store(tmp_path):
    elsewhere = make_run(tmp_path / "elsewhere", "20260101-000000-dddd", [])
    (tmp_path / "store" / elsewhere.id).symlink_to(elsewhere.dir, target_is_directory=True)
    return tmp_path / "store" / elsewhere.id


NOT_RUNS = {
    "id-shaped-outside": (_id_shaped_outside, "inside the run store"),
    "marked-outside": (_marked_outside, "inside the run store"),
    "run-of-another-store": (_run_of_another_store, "inside the run store"),
    "empty-marker": (_empty_marker_in_store, "not a run folder tinylab created"),
    "marker-of-another-id": (_marker_of_another_id_in_store, "not a run folder tinylab created"),
    "symlinked-run": (_symlinked_run_in_store, "not a run folder tinylab created"),
}


@pytest.mark.parametrize("command", ["rm", "show", "cancel", "follow"])
@pytest.mark.parametrize("case", NOT_RUNS)
def test_a_path_that_is_not_a_run_of_the_store_is_refused(tmp_path, capsys, monkeypatch, command, case):
    """`tinylab rm ./20250101-000000-abcd` removed an unrelated folder outside the store with the
    thesis in it; `rm ./proj2` a folder holding an empty marker."""
    make_run(tmp_path / "store", "20260101-000000-aaaa", [])
    make, fragment = NOT_RUNS[case]
    folder = make(tmp_path)
    (folder / "thesis.tex").write_text("precious")
    before = sorted(p.name for p in folder.iterdir())
    for ref in (str(folder), f"./{folder.name}"):
        code, out, err = main_in(capsys, monkeypatch, folder.parent, command, ref, "--runs-dir", str(tmp_path / "store"))
        assert_one_line_error_in(code, err, fragment, "nothing done")
        assert "removed" not in out
    assert (folder / "thesis.tex").read_text() == "precious" and sorted(p.name for p in folder.iterdir()) == before
    assert (tmp_path / "store" / "20260101-000000-aaaa").is_dir()


@pytest.mark.parametrize("command", ["rm", "show", "cancel"])
def test_dot_inside_a_run_folder_is_refused(tmp_path, capsys, monkeypatch, command):
    run = make_run(tmp_path / "store", "20260101-000000-aaaa", [])
    code, _, err = main_in(capsys, monkeypatch, run.dir, command, ".", "--runs-dir", str(tmp_path / "store"))
    assert_one_line_error_in(code, err, "nothing done")
    assert run.dir.is_dir()


def test_rm_of_a_run_of_the_store_by_its_path_removes_it(tmp_path, capsys, monkeypatch):
    run = make_run(tmp_path / "store", "20260101-000000-aaaa", [])
    code, out, _ = main_in(capsys, monkeypatch, tmp_path / "store", "rm", "./20260101-000000-aaaa",
                           "--runs-dir", str(tmp_path / "store"))
    assert code == 0 and out.strip() == "removed 20260101-000000-aaaa" and not run.dir.exists()


def test_cancel_acts_on_the_run_it_resolved(tmp_path, capsys, monkeypatch):
    """`cancel PATH` looked the folder's name up again as an id or prefix in the store."""
    from tinylab.runs import launcher

    run = make_run(tmp_path / "store", "20260101-000000-aaaa", [])
    resolved, cancelled = [], []
    real_resolve = RunStore.resolve
    monkeypatch.setattr(RunStore, "resolve", lambda self, ref: resolved.append(ref) or real_resolve(self, ref))
    monkeypatch.setattr(launcher, "cancel", lambda r: cancelled.append(r) or True)
    code, out, err = main_in(capsys, monkeypatch, tmp_path, "cancel", str(run.dir), "--runs-dir", str(tmp_path / "store"))
    assert code == 0, err
    assert resolved == [str(run.dir)] and [r.dir for r in cancelled] == [run.dir]


# ------------------------------------------------------------------------------ a store that cannot be used
@pytest.mark.parametrize("where, message", [
    ("afile", "is not a folder"),
    ("afile/sub", "a file is in its path"),
    ("/dev/null", "is not a folder"),
    ("n" * 300, "File name too long"),
])
@pytest.mark.parametrize("command", [["runs"], ["run", "--detach", *TINY_FLAGS]])
def test_a_store_that_cannot_be_used_is_a_one_line_error(tmp_path, where, message, command):
    (tmp_path / "afile").write_text("x")
    proc = tinylab_in(tmp_path, *command, "--runs-dir", where)
    assert_one_line_error(proc, message)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_store_is_a_one_line_error(tmp_path):
    (tmp_path / "ro").mkdir(mode=0o555)
    proc = tinylab_in(tmp_path, "run", "--detach", *TINY_FLAGS, "--runs-dir", "ro/store")
    assert_one_line_error(proc, "Permission denied")


# ------------------------------------------------------------------------------ damaged records
DAMAGE = {
    "version-list": lambda run: _config(run, version=[1, 2]),
    "precision-int": lambda run: _config(run, precision=16),
    "profilers-ints": lambda run: _config(run, profilers=[1, 2]),
    "config-to-dev-zero": lambda run: _replace(run.dir / "config.json", lambda p: p.symlink_to("/dev/zero")),
    "config-fifo": lambda run: _replace(run.dir / "config.json", os.mkfifo),
    "events-to-dev-zero": lambda run: _replace(run.dir / "events.jsonl", lambda p: p.symlink_to("/dev/zero")),
    "events-fifo": lambda run: _replace(run.dir / "events.jsonl", os.mkfifo),
}


def _config(run, **values) -> None:
    cfg = json.loads((run.dir / "config.json").read_text())
    (run.dir / "config.json").write_text(json.dumps({**cfg, **values}))


def _replace(path, make) -> None:
    path.unlink()
    make(path)


@pytest.mark.parametrize("damage", DAMAGE)
def test_one_damaged_record_shows_in_its_own_row_and_the_rest_lists(finished_pair, tmp_path, damage):
    root = tmp_path / "runs"
    damaged = clone_run(finished_pair.v1, root)
    clone_run(finished_pair.v2, root)
    DAMAGE[damage](damaged)
    text = cli("runs", "--runs-dir", str(root), timeout=30)
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    rows = {line.split()[0]: line for line in text.stdout.splitlines()[1:]}
    status = "busy" if finished_pair.v2.record().busy else "finished"  # the session's runs may be busy
    assert " damaged " in rows[short_id(damaged.id)] and f" {status} " in rows[short_id(finished_pair.v2.id)]
    listed = {r["id"]: r for r in json.loads(cli("runs", "--json", "--runs-dir", str(root), timeout=30).stdout)}
    assert listed[damaged.id]["problem"] and listed[finished_pair.v2.id]["problem"] is None
    for command in (["show", damaged.id], ["report", damaged.id, finished_pair.v2.id]):
        proc = cli(*command, "--runs-dir", str(root), timeout=30)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr and "damaged" in proc.stdout, proc.stderr
    damaged_only = json.loads(cli("runs", "--json", "--status", "damaged", "--runs-dir", str(root), timeout=30).stdout)
    assert [r["id"] for r in damaged_only] == [damaged.id]


def test_follow_never_prints_a_file_the_log_links_to(finished_pair, tmp_path):
    run = clone_run(finished_pair.v1, tmp_path / "runs")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    _replace(run.dir / "output.log", lambda p: p.symlink_to(secret))
    proc = cli("follow", run.id, "--runs-dir", str(tmp_path / "runs"), timeout=30)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith("output.log: is a symbolic link; not followed")
    assert "TOP SECRET" not in proc.stdout + proc.stderr


def test_runs_status_must_be_a_status(two_run_store):
    proc = cli("runs", "--status", "bogus", "--runs-dir", str(two_run_store.root))
    assert proc.returncode == 2 and "invalid choice: 'bogus'" in proc.stderr


def test_control_characters_in_a_stored_label_do_not_reach_the_terminal(finished_pair, tmp_path):
    run = clone_run(finished_pair.v1, tmp_path / "runs")
    _config(run, label="evil\x1b[2J\nsecond line")
    out = cli("runs", "--runs-dir", str(tmp_path / "runs")).stdout
    assert "\x1b" not in out and len(out.strip().splitlines()) == 2


def test_show_lists_the_ranks_of_a_run_of_several(tmp_path, capsys):
    from tinylab.cli import main

    run = profile_tables(world_of(tmp_path, "20260101-000000-0002", 2, 180.0, comm_ms=3.5, comm_hidden=0.4),
                         {0: [("aten::mm", 3, 60.0)], 1: [("aten::mm", 3, 90.0)]})
    assert main(["show", str(run.dir), "--runs-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("ranks    2 under ddp  ✓ weights in sync on all 2 ranks")
    assert lines[at + 1].split() == ["rank", "host", "device", "step", "ms", "p90", "ms", "fwd/bwd/opt", "ms", "peak",
                                     "MB", "collectives", "ms", "weights"]
    assert lines[at + 3].split() == ["1", "slowest", "gpu-node-07", "cpu", "40.80", "44.00", "15.60/22.00/6.00", "-",
                                     "7.20", "(64%", "hidden)", "✓", "in", "sync"]
    assert "profile  pytorch rank 1: kernel table profiles/pytorch/rank1/kernels.csv" in lines
    assert main(["show", str(world_of(tmp_path, "20260101-000000-0001", 1, 100.0).dir), "--runs-dir", str(tmp_path)]) == 0
    assert "ranks " not in capsys.readouterr().out  # one process: no rank table


# ------------------------------------------------------------------------------ entries that cannot be read
def test_runs_of_a_system_folder_is_no_traceback(capsys, monkeypatch, tmp_path):
    """`tinylab runs --runs-dir /proc/1` ended in a PermissionError traceback."""
    code, out, err = main_in(capsys, monkeypatch, tmp_path, "runs", "--runs-dir", "/proc/1")
    assert code == 0 and out.strip() == "no runs in /proc/1", (out, err)
    assert all(line.startswith("note: skipped ") for line in err.strip().splitlines()), err
    code, _, err = main_in(capsys, monkeypatch, tmp_path, "show", "last", "--runs-dir", "/proc/1")
    assert_one_line_error_in(code, err, "no runs in /proc/1")


def test_an_unreadable_entry_of_the_store_is_skipped_with_a_note(capsys, monkeypatch, tmp_path):
    """A neighbour's `chmod 000` folder in a shared store broke runs, show, rm and hotspots for all."""
    store = tmp_path / "store"
    make_run(store, "20260101-000000-aaaa", [])
    make_run(store, "20260101-000000-bbbb", [])
    (store / "20260102-000000-ffff").mkdir()
    deny(monkeypatch, store / "20260102-000000-ffff")
    code, out, err = main_in(capsys, monkeypatch, tmp_path, "runs", "--runs-dir", str(store))
    assert code == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["0101-0000-bbbb", "0101-0000-aaaa"]
    assert err == (f"note: skipped 1 entry of {store} that could not be read (permission denied): "
                   "20260102-000000-ffff\n")
    code, out, err = main_in(capsys, monkeypatch, tmp_path, "runs", "--json", "--runs-dir", str(store))
    assert code == 0 and len(json.loads(out)) == 2 and err.startswith("note: skipped 1 entry")
    code, out, _ = main_in(capsys, monkeypatch, tmp_path, "show", "last", "--runs-dir", str(store))
    assert code == 0 and out.startswith("run      0101-0000-bbbb  (20260101-000000-bbbb)")
    code, _, err = main_in(capsys, monkeypatch, tmp_path, "rm", str(store / "20260102-000000-ffff"), "--runs-dir", str(store))
    assert_one_line_error_in(code, err, "permission denied: nothing done")
    code, out, err = main_in(capsys, monkeypatch, tmp_path, "rm", "20260101-000000-a", "--runs-dir", str(store))
    assert code == 0 and out == "removed 20260101-000000-aaaa\n", err


@pytest.mark.parametrize("status", ["failed", "damaged"])
def test_runs_with_a_status_and_no_match_names_the_status(two_run_store, capsys, monkeypatch, tmp_path, status):
    code, out, _ = main_in(capsys, monkeypatch, tmp_path, "runs", "--status", status, "--runs-dir", str(two_run_store.root))
    assert code == 0 and out == f"no {status} runs in {two_run_store.root}\n"


def test_show_prints_no_control_character_of_a_run_file(tmp_path, capsys, monkeypatch):
    """`show` printed the label (`label=^[[31mRED` then a split line) and the error event raw (an OSC
    that retitles the terminal, a screen clear, then `fake line`)."""
    from support.runs import write_events

    run = make_run(tmp_path / "store", "20260101-000000-aaaa", label="x")
    config = json.loads((run.dir / "config.json").read_text())
    (run.dir / "config.json").write_text(json.dumps({**config, "label": "\x1b[31mRED\nrow"}))
    write_events(run.dir, [
        {"event": "start", "pid": 1, "device": "cpu\x1b[2J", "device_name": "x86\x07", "config": {}},
        {"event": "step", "step": 0, "loss": 6.9},
        {"event": "error", "type": "X\x1b]0;pwned\x07", "message": "evil\x1b[2J\nfake line",
         "traceback": "Traceback\n  \x9b31m boom"},
        {"event": "exit", "returncode": 1, "signal": None}])
    code, out, err = main_in(capsys, monkeypatch, tmp_path, "show", run.id, "--runs-dir", str(tmp_path / "store"))
    assert code == 0, err
    assert not any(ord(c) < 32 and c != "\n" or 0x7f <= ord(c) <= 0x9f for c in out), repr(out)
    assert "label=?[31mRED?row" in out and "error    X?]0;pwned?: evil?[2J?fake line" in out
    assert "  Traceback\n    ?31m boom" in out and "device x86? (cpu?[2J)" in out
    assert "damaged  config.json: --label must be text" in out


@pytest.mark.parametrize("num_steps", [None, "x", True])
def test_show_of_a_damaged_config_never_prints_none(tmp_path, capsys, monkeypatch, num_steps):
    from support.runs import write_events

    run = make_run(tmp_path / "store", "20260101-000000-aaaa")
    config = json.loads((run.dir / "config.json").read_text())
    (run.dir / "config.json").write_text(json.dumps({**config, "num_steps": num_steps}))
    write_events(run.dir, [{"event": "step", "step": 2, "loss": None}])
    code, out, err = main_in(capsys, monkeypatch, tmp_path, "show", run.id, "--runs-dir", str(tmp_path / "store"))
    assert code == 0, err
    progress = next(line for line in out.splitlines() if line.startswith("progress"))
    assert progress == "progress step 3/?  loss -" and "=None" not in out


def test_show_and_runs_never_print_the_fault_a_step_hides(tmp_path, capsys):
    """performance-debugging step 1 hides its fault; `show last` and `runs` printed fault=missing-init."""
    root = str(tmp_path / "runs")
    make_run(tmp_path / "runs", "20260101-000000-aaaa", [], fault="missing-init", version="v3",
             label="exercise performance-debugging step 1")
    for argv in (["show", "last"], ["show", "last", "--json"], ["runs"], ["runs", "--json"]):
        assert main([*argv, "--runs-dir", root]) == 0
        out = capsys.readouterr().out
        assert "missing-init" not in out and "(hidden)" in out, (argv, out)
    assert main(["exercises", "show", "performance-debugging", "--step", "1", "--answers"]) == 0
    capsys.readouterr()
    assert main(["show", "last", "--runs-dir", root]) == 0
    assert "fault=missing-init" in capsys.readouterr().out  # the answers are out: nothing left to hide

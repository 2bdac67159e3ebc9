"""The run commands as a user types them: bad RUN arguments, --detach speed, runs/show output."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.runs import cli, clone_run, make_run

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
def test_last_in_an_empty_store_is_a_one_line_error(tmp_path, command):
    proc = cli(*RUN_COMMANDS[command]("last"), "--runs-dir", str(tmp_path / "empty"))
    assert_one_line_error(proc, "no runs in")


def test_runs_dir_comes_from_the_environment(two_run_store, monkeypatch):
    monkeypatch.setenv("TINYLAB_RUNS_DIR", str(two_run_store.root))
    proc = cli("runs", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in json.loads(proc.stdout)] == ["20260101-000000-aaaa", "20260101-000000-aabb"]


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
    assert finished_pair.v1.id in table and "finished" in table
    shown = json.loads(cli("show", finished_pair.v2.id, "--json", "--runs-dir", root).stdout)
    assert shown["status"] == "finished" and shown["summary"]["steps"] == 8 and shown["corrupt_lines"] == []
    text = cli("show", "last", "--runs-dir", root).stdout
    assert "status   finished" in text and "samples_per_s" in text


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
    proc = cli("show", str(run.dir))
    assert proc.returncode == 0, proc.stderr
    assert expect in proc.stdout
    assert "Traceback" not in proc.stderr
    assert cli("show", str(run.dir), "--json").returncode == 0


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

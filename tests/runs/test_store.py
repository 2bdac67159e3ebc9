"""The run store without processes: status derived from files, pid reuse, RUN resolution, readers."""

from __future__ import annotations

import json
import os

import pytest
from support.paths import deny
from support.runs import make_run, tiny_config

from tinylab.core.errors import UserError
from tinylab.core.eventlog import EventTail, read_events
from tinylab.runs.record import short_id
from tinylab.runs.store import MARKER, Run, RunStore, is_run_dir, new_run_id, run_dir_state

START = {"event": "start", "pid": 1, "device": "cpu", "device_name": "x86_64", "config": {}}
STEP = {"event": "step", "step": 0, "loss": 6.9, "step_ms": 10.0, "samples_per_s": 400.0, "warmup": False}
SUMMARY = {"event": "summary", "samples_per_s": 400.0, "final_loss": 6.8, "params_trained": 20, "params_total": 20}
ERROR = {"event": "error", "type": "RuntimeError", "message": "boom", "traceback": ""}


def exit_event(code: int, sig: str | None = None) -> dict:
    return {"event": "exit", "returncode": code, "signal": sig}


@pytest.mark.parametrize(
    "events, status",
    [
        ([START, STEP, SUMMARY, exit_event(0)], "finished"),
        ([START, STEP, SUMMARY], "finished"),  # supervisor killed after the trainer's summary
        ([START, STEP, ERROR, exit_event(1)], "failed"),
        ([START, STEP, ERROR], "failed"),
        ([START, STEP, exit_event(-9, "SIGKILL")], "failed"),  # trainer killed: only the supervisor spoke
        ([START, STEP, SUMMARY, exit_event(1)], "failed"),  # non-zero exit after a summary
        ([START, STEP], "lost"),  # everything killed: nobody recorded an end
        ([], "lost"),
        (None, "lost"),  # no events.jsonl at all
    ],
)
def test_status_from_events_of_a_run_without_process(tmp_path, events, status):
    run = make_run(tmp_path, "20260101-000000-aaaa", events)
    assert run.status() == status


def test_cancel_record_wins_once_the_process_is_gone(tmp_path):
    run = make_run(tmp_path, "20260101-000000-aaaa", [START, STEP, ERROR, exit_event(130)])
    (run.dir / "cancel.json").write_text(json.dumps({"time": 0}))
    assert run.status() == "cancelled"


@pytest.mark.parametrize("record_file", ["process.json", "trainer.json"])
def test_running_needs_pid_and_start_time_to_match(tmp_path, own_process_record, record_file):
    """pid reuse: a live pid whose start time differs is another process, so the run is not running."""
    run = make_run(tmp_path, "20260101-000000-aaaa", [START, STEP])
    (run.dir / "cancel.json").write_text("{}")  # a cancel in progress: still running while alive
    path = run.dir / record_file

    path.write_text(json.dumps(own_process_record))
    assert run.is_alive() and run.status() == "running"

    path.write_text(json.dumps({**own_process_record, "start_time": own_process_record["start_time"] - 3600}))
    assert not run.is_alive()
    assert run.status() == "cancelled"


@pytest.mark.parametrize("record", [
    {"pid": 2**22 + 12345, "start_time": 1.0},  # above pid_max: no such process
    {"pid": -1, "start_time": 1.0},
    {"pid": "1", "start_time": 1.0},
    {"pid": os.getpid(), "start_time": "yesterday"},
    {"pid": os.getpid()},
    [1, 2, 3],
])
def test_bad_or_dead_process_records_are_not_running(tmp_path, record):
    run = make_run(tmp_path, "20260101-000000-aaaa", [START, STEP])
    (run.dir / "process.json").write_text(json.dumps(record))
    assert run.status() == "lost"


@pytest.mark.parametrize("launched_at, started", [(1.5e9, 1.5e9), (1e300, 1.6e9), ("soon", 1.6e9), (None, 1.6e9)])
def test_start_time_shown_is_one_the_clock_can_show(tmp_path, launched_at, started):
    run = make_run(tmp_path, "20260101-000000-aaaa", [{**START, "time": 1.6e9}])
    (run.dir / "process.json").write_text(json.dumps({"launched_at": launched_at}))
    assert run.record().started == started


def test_process_json_that_is_not_json(tmp_path):
    run = make_run(tmp_path, "20260101-000000-aaaa", [START, STEP, SUMMARY])
    (run.dir / "process.json").write_bytes(b'{"pid": 12')
    assert run.status() == "finished"
    assert run.record().pid is None


def test_run_ids_sort_by_time_and_stay_unique_within_a_second(tmp_path):
    assert new_run_id(1_000_000) < new_run_id(1_000_001) < new_run_id(2_000_000)
    store = RunStore(tmp_path)
    cfg = tiny_config()
    ids = [store.create(cfg).id for _ in range(60)]  # well past the birthday bound of 4 hex digits
    assert len(set(ids)) == 60
    assert [r.id for r in store.list()] == sorted(ids)


class TestResolve:
    @pytest.fixture
    def populated(self, tmp_path) -> RunStore:
        for run_id in ("20260101-000000-aaaa", "20260101-000000-aabb", "20260102-000000-cccc"):
            make_run(tmp_path, run_id, [])
        (tmp_path / "not-a-run").mkdir()  # no config.json: ignored
        return RunStore(tmp_path)

    def test_full_id_prefix_last_and_path(self, populated):
        assert populated.resolve("20260101-000000-aaaa").id == "20260101-000000-aaaa"
        assert populated.resolve("20260102").id == "20260102-000000-cccc"
        assert populated.resolve("last").id == "20260102-000000-cccc"
        assert populated.resolve(str(populated.root / "20260101-000000-aabb")).id == "20260101-000000-aabb"

    def test_the_short_id_the_lab_shows_and_its_prefixes(self, populated):
        """The lab shows 0102-0000-cccc; `tinylab show 0102-0000-cccc` said "no run matches"."""
        assert short_id("20260102-000000-cccc") == "0102-0000-cccc" and short_id("run-1") == "run-1"
        assert populated.resolve("0102-0000-cccc").id == "20260102-000000-cccc"
        assert populated.resolve(" 0101-0000-aabb ").id == "20260101-000000-aabb"
        assert populated.resolve("0102").id == "20260102-000000-cccc"

    def test_exact_id_wins_over_longer_ids_it_prefixes(self, tmp_path):
        make_run(tmp_path, "run-1", [])
        make_run(tmp_path, "run-10", [])
        assert RunStore(tmp_path).resolve("run-1").id == "run-1"

    @pytest.mark.parametrize("ref, message", [
        ("20260101-000000-a", "ambiguous: 2 runs match"),
        ("2099", "no run matches '2099'"),
        ("", "the run reference is empty: nothing done"),
        ("  ", "the run reference is empty: nothing done"),
        ("0101-0000-a", r"ambiguous: 2 runs match: 0101-0000-aaaa \(20260101-000000-aaaa\), 0101-0000-aabb"),
    ])
    def test_bad_refs_raise_user_errors(self, populated, ref, message):
        with pytest.raises(UserError, match=message):
            populated.resolve(ref)

    def test_last_in_an_empty_or_missing_store(self, tmp_path):
        for root in (tmp_path, tmp_path / "missing"):
            with pytest.raises(UserError, match="no runs in"):
                RunStore(root).resolve("last")


class TestReaders:
    """events.jsonl as a crash, a full disk or a stray editor leaves it."""

    def test_partial_last_line_is_left_for_later(self, tmp_path):
        path = tmp_path / "events.jsonl"
        full = json.dumps(STEP) + "\n"
        path.write_text(full + full[:17])
        log = read_events(path)
        assert len(log.events) == 1 and log.partial_tail and log.corrupt_lines == []

    def test_corrupt_and_binary_lines_are_counted_not_fatal(self, tmp_path):
        path = tmp_path / "events.jsonl"
        lines = [json.dumps(START).encode(), b"{not json", b"\xff\xfe\x00garbage\x80", b"[1, 2]", b'{"no_event": 1}',
                 b"", json.dumps(STEP).encode()]
        path.write_bytes(b"\n".join(lines) + b"\n")
        log = read_events(path)
        assert [e["event"] for e in log.events] == ["start", "step"]
        assert log.corrupt_lines == [2, 3, 4, 5]

    def test_tail_resumes_a_line_once_it_is_complete(self, tmp_path):
        path = tmp_path / "events.jsonl"
        tail = EventTail(path)
        assert tail.poll() == []  # no file yet
        line = json.dumps(STEP) + "\n"
        path.write_text(line[:10])
        assert tail.poll() == []
        with open(path, "a") as fh:
            fh.write(line[10:] + "garbage\n" + line)
        assert [e["event"] for e in tail.poll()] == ["step", "step"]
        assert tail.corrupt_lines == [2]

    def test_run_info_survives_damaged_files(self, tmp_path):
        run = make_run(tmp_path, "20260101-000000-aaaa")
        (run.dir / "events.jsonl").write_bytes(b"\x00\x01\x02" * 100)  # no newline at all
        (run.dir / "config.json").write_text("{half")
        record = run.record()
        assert record.status == "lost" and record.config == {} and record.summary is None
        with pytest.raises(UserError, match="config.json is not valid JSON"):
            run.config()


def test_remove_refuses_a_running_run(tmp_path, own_process_record):
    run = make_run(tmp_path, "20260101-000000-aaaa", [START])
    (run.dir / "process.json").write_text(json.dumps(own_process_record))
    store = RunStore(tmp_path)
    with pytest.raises(UserError, match="is running"):
        store.remove(run)
    assert run.dir.exists()
    (run.dir / "process.json").unlink()
    store.remove(run)
    assert not run.dir.exists()


def test_runs_in_a_store_are_only_folders_with_a_config(tmp_path):
    make_run(tmp_path, "20260101-000000-aaaa", [])
    (tmp_path / "20260101-000000-bbbb").mkdir()
    (tmp_path / "stray.txt").write_text("x")
    assert [r.id for r in RunStore(tmp_path).list()] == ["20260101-000000-aaaa"]
    assert isinstance(RunStore(tmp_path).list()[0], Run)


def test_a_cancel_that_comes_after_the_summary_leaves_the_run_finished(tmp_path):
    """The trainer wrote its summary, then a cancel arrived while the supervisor collected the profile."""
    run = make_run(tmp_path, "20260101-000000-aaaa", [START, STEP, SUMMARY])
    (run.dir / "cancel.json").write_text(json.dumps({"time": 1.0, "by_pid": 1}))
    assert run.status() == "finished"
    early = make_run(tmp_path, "20260101-000000-bbbb", [START, STEP])
    (early.dir / "cancel.json").write_text(json.dumps({"time": 1.0, "by_pid": 1}))
    assert early.status() == "cancelled"


def test_a_full_disk_at_creation_leaves_no_half_run(tmp_path, monkeypatch):
    import errno

    from tinylab.core.safeio import os as safeio_os

    def full(*_):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safeio_os, "posix_fallocate", full)
    store = RunStore(tmp_path / "runs")
    with pytest.raises(UserError, match="cannot create a run in .*: the disk is full"):
        store.create(tiny_config())
    assert list((tmp_path / "runs").iterdir()) == []


# ------------------------------------------------------------------------------ Slurm runs
def slurm_run(tmp_path, events: list[dict] | None, job: dict | None = None) -> Run:
    run = make_run(tmp_path, "20260101-000000-5aaa", events)
    (run.dir / "job.json").write_text(json.dumps(job or {"job_id": "77", "submitted": 1.7e9, "host": "login1"}))
    return run


@pytest.mark.parametrize("squeue, sacct, events, status", [
    ("PENDING", "PENDING", None, "queued"),
    ("RUNNING", "RUNNING", [START, STEP], "running"),
    ("COMPLETING", "COMPLETED", [START, STEP, SUMMARY], "running"),
    (None, "CANCELLED by 1000", [START, STEP], "cancelled"),
    (None, "CANCELLED by 1000", [START, STEP, SUMMARY], "finished"),  # cancelled after its summary
    (None, "NODE_FAIL", [START, STEP], "failed"),
    (None, "COMPLETED", [START, STEP, ERROR], "failed"),
    (None, "COMPLETED", [START, STEP], "lost"),  # the job ended and nobody recorded how
    (None, None, [START, STEP], "lost"),  # Slurm has forgotten the job
])
def test_a_slurm_runs_status_comes_from_slurm_until_its_exit_event(tmp_path, fake_slurm, squeue, sacct, events,
                                                                   status):
    run = slurm_run(tmp_path, events)
    fake_slurm.job("77", squeue=squeue, sacct=sacct)
    assert run.status() == status
    assert fake_slurm.calls("squeue")[0]["argv"] == ["-h", "-j", "77", "-o", "%T"]


def test_a_slurm_run_that_recorded_its_end_asks_slurm_nothing(tmp_path, fake_slurm):
    run = slurm_run(tmp_path, [START, STEP, SUMMARY, exit_event(0)])
    fake_slurm.job("77", squeue="RUNNING", sacct="RUNNING")
    assert run.status() == "finished"
    assert fake_slurm.calls() == []


def test_a_failed_slurm_runs_record_names_slurms_state(tmp_path, fake_slurm):
    run = slurm_run(tmp_path, [START, STEP, dict(ERROR, type="KeyboardInterrupt", message="SIGTERM")])
    fake_slurm.job("77", squeue=None, sacct="OUT_OF_MEMORY")
    record = run.record()
    assert record.status == "failed" and record.job.state == "OUT_OF_MEMORY"
    assert (record.error.type, record.error.message) == ("SlurmJob", "Slurm job 77 ended OUT_OF_MEMORY: a node ran "
                                                         "out of host memory")
    assert record.started == 1.7e9  # submitted: the run has no process.json of this host
    assert record.to_json()["job"]["id"] == "77"


def test_a_job_json_without_a_job_id_is_no_slurm_run(tmp_path, fake_slurm):
    run = slurm_run(tmp_path, [START, STEP], {"job_id": "--help"})
    assert run.job is None and run.status() == "lost"
    assert fake_slurm.calls() == []


# ------------------------------------------------------------------------------ what counts as a run
def _legacy(root, run_id: str = "20250101-000000-abcd"):
    """A run folder of a tinylab before the marker: id-shaped, config.json and process.json."""
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(tiny_config().resolved().to_json())
    (folder / "process.json").write_text("{}")
    return folder


@pytest.mark.parametrize("marker, counts", [
    (None, False),                                          # no marker, not id-shaped
    (b"", False),                                           # an empty marker (touch .tinylab-run)
    (b"{half", False),                                      # not JSON
    (b'["20260101-000000-aaaa"]', False),                   # JSON, not an object
    (b'{"id": "20260101-000000-bbbb"}', False),             # another run's marker, copied
    (b'{"created": 1}', False),                             # no id
    (b'{"id": "20260101-000000-aaaa", "created": 1}', True),
])
def test_a_run_folder_holds_a_marker_naming_itself(tmp_path, marker, counts):
    folder = tmp_path / "20260101-000000-aaaa"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    if marker is not None:
        (folder / MARKER).write_bytes(marker)
    assert is_run_dir(folder) is counts
    assert [r.id for r in RunStore(tmp_path).list()] == (["20260101-000000-aaaa"] if counts else [])


def test_a_marker_that_is_a_link_or_a_folder_does_not_count(tmp_path):
    real = make_run(tmp_path / "a", "20260101-000000-aaaa", [])
    linked = tmp_path / "b" / "20260101-000000-aaaa"
    linked.mkdir(parents=True)
    (linked / MARKER).symlink_to(real.dir / MARKER)
    assert is_run_dir(real.dir) and not is_run_dir(linked)
    (real.dir / MARKER).unlink()
    (real.dir / MARKER).mkdir()
    assert not is_run_dir(real.dir)


def test_legacy_run_folders_count_only_where_the_caller_allows(tmp_path):
    folder = _legacy(tmp_path)
    assert is_run_dir(folder) and not is_run_dir(folder, legacy=False)
    assert [r.id for r in RunStore(tmp_path).list()] == [folder.name]
    (folder / "process.json").unlink()
    (folder / "process.json").symlink_to(folder / "config.json")
    assert not is_run_dir(folder), "a linked record file does not make a run"


class TestRunAtAPath:
    """`rm`/`show`/`cancel PATH` reach only run folders directly inside the store."""

    @pytest.fixture
    def store(self, tmp_path) -> RunStore:
        make_run(tmp_path / "store", "20260101-000000-aaaa", [])
        return RunStore(tmp_path / "store")

    def refused(self, store, path, *fragments):
        with pytest.raises(UserError) as caught:
            store.resolve(str(path))
        assert "nothing done" in str(caught.value) and "\n" not in str(caught.value)
        for fragment in fragments:
            assert fragment in str(caught.value)

    def test_a_run_of_the_store_by_its_path(self, store):
        run = store.resolve(str(store.root / "20260101-000000-aaaa"))
        assert run.dir == store.root / "20260101-000000-aaaa"

    def test_a_legacy_shaped_folder_outside_the_store(self, store, tmp_path):
        folder = _legacy(tmp_path / "outside")
        self.refused(store, folder, "not a run folder inside the run store")
        self.refused(store, folder.parent / "." / folder.name, "inside the run store")

    def test_a_marked_folder_or_a_run_of_another_store(self, store, tmp_path):
        other = make_run(tmp_path / "other", "20260101-000000-aaaa", [])
        self.refused(store, other.dir, "inside the run store")
        project = tmp_path / "proj2"
        project.mkdir()
        (project / MARKER).write_text(json.dumps({"id": "proj2"}))
        self.refused(store, project, "inside the run store")

    @pytest.mark.parametrize("marker", [b"", b'{"id": "20260101-000000-aaaa"}'])
    def test_a_store_entry_with_an_empty_or_foreign_marker(self, store, marker):
        folder = store.root / "20260101-000000-bbbb"
        folder.mkdir()
        (folder / MARKER).write_bytes(marker)
        self.refused(store, folder, "not a run folder tinylab created")
        with pytest.raises(UserError, match="no run matches"):
            store.resolve("20260101-000000-bbbb")

    def test_a_symlinked_run_folder(self, store, tmp_path):
        elsewhere = make_run(tmp_path / "elsewhere", "20260101-000000-cccc", [])
        (store.root / elsewhere.id).symlink_to(elsewhere.dir, target_is_directory=True)
        self.refused(store, store.root / elsewhere.id, "not a run folder tinylab created")
        self.refused(store, elsewhere.dir, "inside the run store")
        assert [r.id for r in store.list()] == ["20260101-000000-aaaa"]

    def test_a_store_reached_through_a_link_is_the_same_store(self, store, tmp_path):
        (tmp_path / "alias").symlink_to(store.root, target_is_directory=True)
        assert store.resolve(str(tmp_path / "alias" / "20260101-000000-aaaa")).dir == store.root / "20260101-000000-aaaa"

    @pytest.mark.parametrize("ref", [".", "..", "./"])
    def test_dot_and_dot_dot(self, store, monkeypatch, ref):
        monkeypatch.chdir(store.root / "20260101-000000-aaaa")
        self.refused(store, ref)

    def test_remove_deletes_nothing_outside_the_store(self, store, tmp_path):
        folder = _legacy(tmp_path / "outside")
        (folder / "thesis.tex").write_text("precious")
        with pytest.raises(UserError):
            store.remove(Run(folder))
        assert (folder / "thesis.tex").read_text() == "precious"


def test_an_unreadable_store_entry_is_skipped_with_a_note(tmp_path, monkeypatch):
    make_run(tmp_path, "20260101-000000-aaaa", [])
    (tmp_path / "20260101-000000-bbbb").mkdir()
    deny(monkeypatch, tmp_path / "20260101-000000-bbbb")
    store = RunStore(tmp_path)
    assert [r.id for r in store.list()] == ["20260101-000000-aaaa"]
    assert store.unreadable == ["20260101-000000-bbbb"]
    assert "skipped 1 entry" in store.unreadable_note() and "permission denied" in store.unreadable_note()
    assert run_dir_state(tmp_path / "20260101-000000-bbbb") is None
    with pytest.raises(UserError, match="permission denied: nothing done"):
        store.resolve(str(tmp_path / "20260101-000000-bbbb"))


# ------------------------------------------------------------------------------ a hostile neighbour's files
DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize("name", ["events.jsonl", "config.json", "process.json", "trainer.json", "cancel.json",
                                  "job.json", "ranks/rank0.json", MARKER])
def test_json_nested_5000_deep_in_any_record_costs_that_run_at_most(tmp_path, capsys, name):
    """One such file made `runs` list no run at all (RecursionError): now the other runs list, and
    the damaged one lists as damaged or not at all (a marker that does not parse is no run)."""
    from tinylab.cli import main

    make_run(tmp_path, "20260101-000000-aaaa", [START, STEP, SUMMARY, exit_event(0)])
    bad = make_run(tmp_path, "20260101-000000-bbbb", [START, STEP, SUMMARY, exit_event(0)])
    (bad.dir / name).parent.mkdir(exist_ok=True)
    with open(bad.dir / name, "a" if name == "events.jsonl" else "w") as fh:
        fh.write("[" * 2040 + "]" * 2040 if name == MARKER else DEEP + "\n")  # a marker holds at most 4 KB
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out  # `runs` names each run by its short id
    assert "0101-0000-aaaa" in out
    assert ("0101-0000-bbbb" in out) == (name != MARKER)
    if name != MARKER:
        assert main(["show", "20260101-000000-bbbb", "--runs-dir", str(tmp_path)]) in (0, 2)
        assert "Traceback" not in capsys.readouterr().err


def test_a_400_digit_integer_in_a_summary_is_a_corrupt_line(tmp_path, capsys):
    from tinylab.cli import main

    run = make_run(tmp_path, "20260101-000000-aaaa", [START, STEP])
    with open(run.dir / "events.jsonl", "a") as fh:
        fh.write('{"event": "summary", "time": 1.0, "samples_per_s": ' + "9" * 400 + "}\n")
    assert run.record().corrupt_lines == (3,)
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    assert "0101-0000-aaaa" in capsys.readouterr().out  # `runs` names each run by its short id


def test_a_store_others_may_write_into_is_a_warning(tmp_path, capsys):
    from tinylab.cli import main

    store = tmp_path / "runs"
    make_run(store, "20260101-000000-aaaa", [START, STEP, SUMMARY, exit_event(0)])
    store.chmod(0o755)
    assert main(["runs", "--runs-dir", str(store)]) == 0
    assert "warning" not in capsys.readouterr().err
    store.chmod(0o777)
    try:
        assert main(["runs", "--runs-dir", str(store)]) == 0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "writable by its group and everyone" in err and "chmod go-w" in err
    finally:
        store.chmod(0o755)


@pytest.mark.parametrize("events", [
    [START, STEP, SUMMARY, exit_event(-2, "SIGINT")],
    [START, STEP, SUMMARY, {**ERROR, "type": "KeyboardInterrupt", "message": "interrupted by SIGINT"}, exit_event(130)],
])
def test_a_cancel_landing_after_the_summary_leaves_the_run_finished_whatever_it_interrupted(tmp_path, events):
    """The one case of the last pass still failing: the cancel's SIGINT reached the trainer after its
    summary (during the profile's export) and the exit code -2 made the run `failed`."""
    run = make_run(tmp_path, "20260101-000000-aaaa", events)
    (run.dir / "cancel.json").write_text(json.dumps({"time": 1.0, "by_pid": 1}))
    assert run.status() == "finished"
    other = make_run(tmp_path, "20260101-000000-bbbb", [START, STEP, SUMMARY, ERROR, exit_event(1)])
    (other.dir / "cancel.json").write_text(json.dumps({"time": 1.0, "by_pid": 1}))
    assert other.status() == "failed"  # a real error after the summary is still a failure


def test_a_dry_run_submission_is_listed_as_a_dry_run(tmp_path):
    from tinylab.runs.slurm import JOB_FILE, SCRIPT_FILE

    run = make_run(tmp_path, "20260101-000000-aaaa")
    (run.dir / SCRIPT_FILE).write_text("#!/bin/bash\n")
    assert run.status() == "dry-run"
    (run.dir / JOB_FILE).write_text('{"job_id": "12"}')  # the supervisor records the job once it starts
    assert run.status() != "dry-run"


def test_rm_of_one_run_named_twice_removes_it_once(tmp_path, capsys):
    from tinylab.cli import main

    make_run(tmp_path, "20260101-000000-aaaa", [START, STEP, SUMMARY, exit_event(0)])
    assert main(["rm", "20260101-000000-aaaa", "20260101-000000-aaaa", "--runs-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "removed 20260101-000000-aaaa\n"
    assert RunStore(tmp_path).list() == []

"""`tinylab report -o`: an output file is replaced whole or not at all."""

from __future__ import annotations

import contextlib
import resource
import signal

import pytest
from support.runs import make_run

from tinylab.cli import main

START = {"event": "start", "time": 1.0, "pid": 1, "device": "cpu", "device_name": "x86_64", "config": {}}
STEP = {"event": "step", "time": 2.0, "step": 0, "loss": 6.9, "step_ms": 10.0, "samples_per_s": 400.0}
SUMMARY = {"event": "summary", "time": 3.0, "samples_per_s": 400.0, "final_loss": 6.8, "step_ms_median": 10.0}


@contextlib.contextmanager
def file_size_limit(limit: int):
    """Writes past `limit` bytes fail (EFBIG), as on a full disk; the soft limit only, restored after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


@pytest.fixture
def runs(tmp_path):
    make_run(tmp_path / "runs", "20260101-000000-aaaa", [START, STEP, SUMMARY, {"event": "exit", "time": 4.0,
                                                                                "returncode": 0}])
    return tmp_path / "runs"


def test_a_report_that_cannot_be_written_leaves_the_old_one_whole(tmp_path, runs, capsys):
    old = tmp_path / "OLD.md"
    old.write_text("the previous report\n")
    with file_size_limit(200):
        code = main(["report", "last", "--runs-dir", str(runs), "-o", str(old)])
    err = capsys.readouterr().err
    assert old.read_text() == "the previous report\n"  # it was truncated to its first 200 bytes before
    assert code == 2 and err.startswith(f"tinylab: error: cannot write -o {old}") and "(it is unchanged)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["OLD.md", "runs"]  # no temporary file left
    assert main(["report", "last", "--runs-dir", str(runs), "-o", str(old)]) == 0
    assert old.read_text().startswith("#")


def test_an_output_that_is_a_folder_or_has_no_folder_is_refused(tmp_path, runs, capsys):
    for target, message in ((tmp_path, "is a folder"), (tmp_path / "nowhere" / "r.md", "no folder")):
        assert main(["report", "last", "--runs-dir", str(runs), "-o", str(target)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1

"""Progress per user: a JSON file, written atomically, that survives failed attempts."""

from __future__ import annotations

import pytest

import json

from tinylab import exercises as ex


def result(name: str, status: str, value=1.5) -> ex.CheckResult:
    return ex.CheckResult(name, "expr", "description", status, value, "detail")


def test_records_attempts_and_keeps_the_first_pass(progress_file):
    assert ex.load_progress() == {"scenarios": {}}
    ex.record_progress("demo", 2, [result("a", "fail"), result("b", "pass")], ["r1"])
    step = ex.load_progress()["scenarios"]["demo"]["steps"]["2"]
    assert step["passed"] is False and step["passed_at"] is None and step["passed_checks"] == ["b"]
    assert step["run_ids"] == ["r1"] and step["checks"]["a"] == {"status": "fail", "value": 1.5, "detail": "detail"}

    ex.record_progress("demo", 2, [result("a", "pass"), result("b", "skip")], ["r2", "r3"])
    passed_at = ex.load_progress()["scenarios"]["demo"]["steps"]["2"]["passed_at"]
    assert passed_at is not None
    ex.record_progress("demo", 2, [result("a", "fail", value=object())], ["r4"])
    step = ex.load_progress()["scenarios"]["demo"]["steps"]["2"]
    assert step["passed"] is False and step["passed_at"] == passed_at and step["run_ids"] == ["r4"]
    assert isinstance(step["checks"]["a"]["value"], str)
    assert json.loads(progress_file.read_text())["scenarios"]["demo"]["steps"]["2"]["run_ids"] == ["r4"]
    assert not list(progress_file.parent.glob("*.tmp"))


def test_steps_done_counts_passed_steps(progress_file):
    scenario = ex.get_scenario("performance-debugging")
    ex.record_progress(scenario.id, 1, [result("a", "pass")], [])
    ex.record_progress(scenario.id, 3, [result("a", "skip")], [])
    assert ex.steps_done(ex.load_progress(), scenario) == 1


def test_unreadable_progress_is_empty(progress_file):
    progress_file.parent.mkdir(parents=True)
    progress_file.write_text("{not json", encoding="utf-8")
    assert ex.load_progress() == {"scenarios": {}}
    ex.record_progress("demo", 1, [result("a", "pass")], [])
    assert ex.load_progress()["scenarios"]["demo"]["steps"]["1"]["passed"] is True


def test_default_location_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(ex.PROGRESS_ENV)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert ex.progress_path() == tmp_path / "xdg" / "tinylab" / "progress.json"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert ex.progress_path() == tmp_path / "home" / ".local" / "share" / "tinylab" / "progress.json"


@pytest.mark.parametrize("kind", ["device", "fifo", "link-to-device"])
def test_a_progress_file_that_is_no_file_is_refused_not_read(progress_file, kind, tmp_path):
    """TINYLAB_PROGRESS_FILE=/dev/zero grew a reader to 7.6 GB; a FIFO would block it."""
    import os

    from tinylab.errors import UserError

    if kind == "device":
        os.environ[ex.PROGRESS_ENV] = "/dev/zero"
    elif kind == "fifo":
        progress_file.parent.mkdir(parents=True)
        os.mkfifo(progress_file)
    else:
        progress_file.parent.mkdir(parents=True)
        progress_file.symlink_to("/dev/zero")
    with pytest.raises(UserError, match="not a regular file; not read"):
        ex.load_progress()
    with pytest.raises(UserError, match="not a regular file; not read"):
        ex.record_progress("demo", 1, [result("a", "pass")], [])


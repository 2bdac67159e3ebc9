"""`tinylab bench`'s flags: refused before any case runs, in one line."""

from __future__ import annotations

import pytest

from tinylab.cli import main


@pytest.fixture
def no_bench(monkeypatch):
    """A bench that reaches its cases fails the test at once (it would run for minutes)."""
    from tinylab.training import bench

    def ran(*_, **__):
        raise AssertionError("the bench started although its flags were bad")

    monkeypatch.setattr(bench, "run_cases", ran)


@pytest.mark.parametrize("out, message", [(".", "is a folder; name a file"), ("nowhere/x.json", "no folder")])
def test_an_out_file_that_cannot_be_written_is_refused_before_the_bench(tmp_path, capsys, no_bench, out, message):
    assert main(["bench", "--device", "cpu", "--out", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("content, message", [(b"[" * 5000 + b"]" * 5000, "nested deeper than 64 levels"),
                                              (b'{"rows": [1, {"case": []}], "environment": []}', None)],
                         ids=["deep", "malformed"])
def test_a_baseline_nested_too_deep_or_malformed_is_no_traceback(tmp_path, capsys, no_bench, content, message):
    baseline = tmp_path / "base.json"
    baseline.write_bytes(content)
    if message is None:  # a damaged row compares nothing: the bench would run
        with pytest.raises(AssertionError, match="the bench started"):
            main(["bench", "--device", "cpu", "--baseline", str(baseline)])
        return
    assert main(["bench", "--device", "cpu", "--baseline", str(baseline)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_baseline_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path, capsys, no_bench):
    import os

    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "fifo", "/dev/zero"):
        assert main(["bench", "--device", "cpu", "--baseline", str(path)]) == 2
        assert "not a regular file" in capsys.readouterr().err


def test_a_list_flag_that_does_not_parse_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as done:
        main(["bench", "--seq-lens", "abc"])
    assert done.value.code == 2
    assert "expected a comma-separated list of int, got 'abc' (`tinylab bench --help`" in capsys.readouterr().err.splitlines()[-1]

"""Reading files a neighbour could have tampered with: no links, no FIFOs or devices, bounded sizes."""

from __future__ import annotations

import errno
import gzip
import os

import pytest

from tinylab.core.errors import UserError
from tinylab.core.safeio import (
    RESERVE,
    JSONLimit,
    UnsafeFile,
    exposed,
    inside,
    is_plain_dir,
    is_plain_file,
    loads_json,
    open_append,
    open_regular,
    read_bounded,
    read_gzip_bounded,
    read_json,
    release_space,
    reserve_space,
    write_atomic,
)


def test_regular_files_open_and_read_within_bounds(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b"x" * 10)
    with open_regular(path) as fh:
        assert fh.read() == b"x" * 10
    assert read_bounded(path, 10) == b"x" * 10
    with pytest.raises(UnsafeFile, match="larger than"):
        read_bounded(path, 9)


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device", "folder"])
def test_links_fifos_devices_and_folders_are_refused_at_once(tmp_path, kind):
    path = tmp_path / "events.jsonl"
    if kind == "symlink":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)  # opening it for reading would block without O_NONBLOCK
    elif kind == "folder":
        path.mkdir()
    else:
        path = "/dev/zero"
    with pytest.raises(UnsafeFile, match="symbolic link|FIFO|device|folder"):
        open_regular(path)
    with pytest.raises(UnsafeFile):
        read_bounded(path)


def test_follow_links_only_where_the_user_typed_the_path(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("a\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert read_bounded(link, follow_links=True) == b"a\n"
    (tmp_path / "to-fifo").symlink_to("/dev/zero")
    with pytest.raises(UnsafeFile, match="device"):
        read_bounded(tmp_path / "to-fifo", follow_links=True)


def test_scans_see_only_plain_files_and_folders(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "lf").symlink_to(tmp_path / "f")
    (tmp_path / "ld").symlink_to(tmp_path / "d")
    assert is_plain_file(tmp_path / "f") and not is_plain_file(tmp_path / "lf") and not is_plain_file(tmp_path / "d")
    assert is_plain_dir(tmp_path / "d") and not is_plain_dir(tmp_path / "ld") and not is_plain_dir(tmp_path / "nope")


def test_the_reserve_is_made_and_released(tmp_path):
    reserve_space(tmp_path)
    assert (tmp_path / RESERVE).stat().st_size > 0
    assert release_space(tmp_path) and not (tmp_path / RESERVE).exists()
    assert not release_space(tmp_path)


def test_reserve_on_a_full_disk_raises_enospc(tmp_path, monkeypatch):
    def full(*_):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(OSError) as info:
        reserve_space(tmp_path)
    assert info.value.errno == errno.ENOSPC


# ------------------------------------------------------------------------------ bounded JSON and gzip
DEEP = b"[" * 5000 + b"]" * 5000


def test_deep_json_is_a_value_error_not_a_recursion_error():
    with pytest.raises(JSONLimit, match="nested deeper than 64 levels"):
        loads_json(DEEP)
    with pytest.raises(JSONLimit, match="nested"):
        loads_json('{"a": ' * 100 + "1" + "}" * 100)
    # brackets inside strings do not count, and ordinary documents parse as json.loads does
    assert loads_json(b'{"name": "' + b"[" * 5000 + b'", "n": [1, [2]]}') == {"name": "[" * 5000, "n": [1, [2]]}
    assert loads_json('[{"a": "x\\"]["}]') == [{"a": 'x"]['}]
    # escaped backslashes and quotes end strings where JSON ends them; alternating brackets count each
    assert loads_json(b'["\\\\", "\\"", "' + b"[" * 100 + b'"]') == ["\\", '"', "[" * 100]
    assert loads_json(b'{"a": [' * 32 + b"1" + b"]}" * 32) is not None  # 64 levels
    with pytest.raises(JSONLimit, match="nested deeper than 64"):
        loads_json(b'{"a": [' * 32 + b"[1]" + b"]}" * 32)
    assert loads_json(b"[" * 30 + b"]" * 30) is not None


def test_integers_past_int64_are_refused_and_the_value_budget_holds():
    with pytest.raises(JSONLimit, match="400 digits"):
        loads_json(b'{"event": "summary", "steps": ' + b"9" * 400 + b"}")
    assert loads_json(b"[-12345678901234567890]") == [-12345678901234567890]
    with pytest.raises(JSONLimit, match="more than 10 values"):
        loads_json(b"[" + b"0," * 20 + b"0]", max_values=10)


def test_read_json_is_one_line_for_every_bad_file(tmp_path):
    path = tmp_path / "cancel.json"
    path.write_bytes(DEEP)
    with pytest.raises(UnsafeFile, match="cancel.json: JSON nested deeper than 64 levels"):
        read_json(path)
    path.write_bytes(b"{nope")
    with pytest.raises(UserError, match="is not valid JSON"):
        read_json(path)
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "missing.json")


def test_a_gzip_bomb_stops_at_its_bound(tmp_path):
    bomb = tmp_path / "trace.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b"0," * (1 << 20) + b"0]", 6))  # 2 MB of JSON in ~10 KB
    assert bomb.stat().st_size < 20_000
    with pytest.raises(UnsafeFile, match="decompresses to more than 1 MiB"):
        read_gzip_bounded(bomb, 1 << 20)
    small = tmp_path / "small.json.gz"
    small.write_bytes(gzip.compress(b"[1]") + gzip.compress(b""))  # two members, as gzip allows
    assert read_gzip_bounded(small, 1 << 20) == b"[1]"
    small.write_bytes(gzip.compress(b"[1, 2, 3]" * 100)[:-12])
    with pytest.raises(UserError, match="truncated"):
        read_gzip_bounded(small, 1 << 20)


# ------------------------------------------------------------------------------ writing, paths
def test_write_atomic_replaces_a_planted_link_and_never_writes_through_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    (run / "cancel.json").symlink_to(victim)
    write_atomic(run / "cancel.json", b"{}")
    assert victim.read_text() == "precious"
    assert (run / "cancel.json").read_bytes() == b"{}" and not (run / "cancel.json").is_symlink()
    assert sorted(p.name for p in run.iterdir()) == ["cancel.json"]  # no temporary file left


def test_write_atomic_refuses_a_run_folder_that_is_a_link(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run").symlink_to(elsewhere)
    with pytest.raises(UnsafeFile, match="symbolic link"):
        write_atomic(tmp_path / "run" / "cancel.json", b"{}", follow_dir_link=False)
    assert list(elsewhere.iterdir()) == []


def test_write_atomic_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "report.md"
    path.write_text("old report")

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError):
        write_atomic(path, b"new report")
    monkeypatch.undo()
    assert path.read_text() == "old report" and sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_open_append_refuses_links_and_fifos(tmp_path):
    (tmp_path / "events.jsonl").symlink_to(tmp_path / "victim")
    with pytest.raises(OSError):  # ELOOP: O_NOFOLLOW
        open_append(tmp_path / "events.jsonl")
    assert not (tmp_path / "victim").exists()
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnsafeFile, match="not a regular file"):
        open_append(tmp_path / "fifo")


def test_recorded_paths_stay_inside_the_run_folder(tmp_path):
    run = tmp_path / "run"
    (run / "profiles" / "pytorch").mkdir(parents=True)
    assert inside(run, "profiles/pytorch/kernels.csv") == run / "profiles" / "pytorch" / "kernels.csv"
    for bad in ("/etc/passwd", "../../secret.csv", "profiles/../../x"):
        with pytest.raises(UnsafeFile, match="outside the run folder"):
            inside(run, bad)
    neighbour = tmp_path / "neighbour"
    neighbour.mkdir()
    (neighbour / "secret.csv").write_text("x")
    (run / "linked").symlink_to(neighbour)
    with pytest.raises(UnsafeFile, match="link or not a folder"):
        inside(run, "linked/secret.csv")
    (run / "profiles" / "pytorch" / "kernels.csv").symlink_to(neighbour / "secret.csv")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        inside(run, "profiles/pytorch/kernels.csv")


def test_a_folder_others_may_write_is_named(tmp_path):
    tmp_path.chmod(0o755)
    assert exposed(tmp_path) is None
    tmp_path.chmod(0o777)
    assert exposed(tmp_path) == "its group and everyone"
    tmp_path.chmod(0o775)
    assert exposed(tmp_path) == "its group"
    tmp_path.chmod(0o755)

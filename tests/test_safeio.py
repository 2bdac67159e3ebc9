"""Reading files a neighbour could have tampered with: no links, no FIFOs or devices, bounded sizes."""

from __future__ import annotations

import errno
import os

import pytest

from tinylab.safeio import (
    RESERVE,
    UnsafeFile,
    is_plain_dir,
    is_plain_file,
    open_regular,
    read_bounded,
    release_space,
    reserve_space,
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

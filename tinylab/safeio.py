"""Reading files a neighbour could have tampered with: never through a link, never a FIFO or a
device, never more than a bound.

Run folders often live on shared scratch space. A run's events.jsonl symlinked to /dev/zero, its
output.log to /etc/shadow, or a FIFO where a profiler output should be, must not make a reader
hang, print someone else's file, or eat the machine's memory: each ends in a one-line error
naming the file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from tinylab.errors import UserError

#: The most any record file (config.json, process.json, cancel.json ...) may hold.
RECORD_LIMIT = 1 << 20


class UnsafeFile(UserError):
    """A link, a FIFO, a device, or a file over its bound."""


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = False) -> BinaryIO:
    """Open a regular file for reading; a link (unless follow_links), FIFO or device is refused.

    FileNotFoundError passes through: for most readers a missing file is simply "not yet written".
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(f"{path}: is a symbolic link; not followed") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else "a device or special file"
        raise UnsafeFile(f"{path}: is {kind}, not a regular file; not read")
    return os.fdopen(fd, "rb")


def read_bounded(path: str | os.PathLike[str], limit: int = RECORD_LIMIT, *, follow_links: bool = False) -> bytes:
    """The whole file, if it is a regular file of at most `limit` bytes."""
    with open_regular(path, follow_links=follow_links) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise UnsafeFile(f"{path}: larger than {limit // 1024:,} KiB; not read")
    return data


def read_tail(path: str | os.PathLike[str], size: int) -> bytes:
    """The last `size` bytes of a regular file (all of a smaller one)."""
    with open_regular(path) as fh:
        end = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, end - size))
        return fh.read(size)


def is_plain_file(path: Path) -> bool:
    """A regular file reached without a link (what folder scans may open)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def is_plain_dir(path: Path) -> bool:
    """A folder reached without a link (what folder scans may descend into)."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


#: Bytes set aside in every run folder at creation and released when a write fails for lack of
#: space, so that a run on a full disk still records why it failed (error and exit events).
RESERVE = ".reserve"
RESERVE_BYTES = 256 << 10


def reserve_space(run_dir: Path) -> None:
    """Set RESERVE_BYTES aside in a new run folder (ENOSPC when even that does not fit)."""
    with open(run_dir / RESERVE, "wb") as fh:
        try:
            os.posix_fallocate(fh.fileno(), 0, RESERVE_BYTES)
        except (AttributeError, OSError) as exc:  # no fallocate on this filesystem: write the bytes
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise
            fh.write(b"\0" * RESERVE_BYTES)
        fh.flush()
        os.fsync(fh.fileno())


def release_space(run_dir: Path) -> bool:
    """Free the run's reserve (on a full disk); True when there was one to free."""
    try:
        (run_dir / RESERVE).unlink()
        return True
    except OSError:
        return False


FULL_DISK = (errno.ENOSPC, errno.EDQUOT)

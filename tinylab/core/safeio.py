"""Reading and writing files a neighbour could have tampered with: never through a link, never a
FIFO or a device, never more than a bound, never outside the run folder.

Run folders often live on shared scratch space. A run's events.jsonl symlinked to /dev/zero, its
output.log to /etc/shadow, or a FIFO where a profiler output should be, must not make a reader
hang, print someone else's file, or eat the machine's memory: each ends in a one-line error
naming the file. The same holds for what tinylab writes: a `cancel.json` planted as a link to a
victim file is replaced, never written through (write_atomic), and a path a run records is
followed only inside that run's folder (inside).

JSON is parsed with a depth cap and a value budget (loads_json): Python's parser recurses, so
5,000 nested brackets raise RecursionError, and a few MB of `[0,0,0,...]` become GBs of objects.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import zlib
from pathlib import Path
from typing import Any, BinaryIO

from tinylab.core.errors import UserError

#: The most any record file (config.json, process.json, cancel.json ...) may hold.
RECORD_LIMIT = 1 << 20
#: The most a JSON document a user names may hold (a bench baseline, ceilings: a full bench matrix
#: with kernels is ~100 KB).
DOCUMENT_LIMIT = 16 << 20


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


def read_gzip_bounded(path: str | os.PathLike[str], limit: int, *, follow_links: bool = False) -> bytes:
    """A file's bytes, gunzipped when it starts with gzip's magic, at most `limit` bytes either way:
    a 400 KB gzip bomb stops at the bound, after decompressing no more than it."""
    data = read_bounded(path, limit, follow_links=follow_links)
    return gunzip_bounded(data, limit, str(path)) if data[:2] == b"\x1f\x8b" else data


def gunzip_bounded(data: bytes, limit: int, name: str) -> bytes:
    """gzip data (one member or several) decompressed to at most `limit` bytes; UnsafeFile past it,
    UserError for corrupt or truncated data."""
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            pending = data
            while pending and not inflater.eof:
                out += inflater.decompress(pending, limit + 1 - len(out))
                if len(out) > limit:
                    raise UnsafeFile(f"{name}: decompresses to more than {limit >> 20:,} MiB; not read")
                pending = inflater.unconsumed_tail
        except zlib.error as exc:
            raise UserError(f"{name}: corrupt gzip data ({exc})") from None
        if not inflater.eof:
            raise UserError(f"{name}: truncated gzip data")
        data = inflater.unused_data.lstrip(b"\0")  # gzip allows zero padding after the last member
    return bytes(out)


#: How deep JSON that tinylab reads may nest (its own records nest 3 or 4 levels; a trace 5).
JSON_DEPTH = 64
#: The most digits an integer may have (int64 has 19): a 400-digit "step" is no number tinylab wrote,
#: and one would overflow every float conversion that reads it.
JSON_INT_DIGITS = 20


class JSONLimit(ValueError):
    """JSON beyond a bound (depth, integer size, value count): a ValueError, like invalid JSON."""


#: bytes.translate tables: keep only what delimits strings and containers; digits as b"0", all else b".".
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_DIGITS = bytes(0x30 if 0x30 <= c <= 0x39 else 0x2E for c in range(256))
_INNERMOST = re.compile(rb"\[\]|\{\}")


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > JSON_INT_DIGITS:
        raise JSONLimit(f"an integer of {len(text.lstrip('-'))} digits (at most {JSON_INT_DIGITS})")
    return int(text)


def deeper_than(data: bytes, limit: int) -> bool:
    """Whether containers nest more than `limit` deep outside strings, in C-speed passes: the
    brackets outside strings (escaped backslashes and quotes dropped first, then every other
    byte), emptied of their innermost pairs once a level."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    kept = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    brackets = b"".join(kept.split(b'"')[::2])
    for _ in range(limit):
        shorter = _INNERMOST.sub(b"", brackets)
        if len(shorter) == len(brackets):  # empty, or unbalanced: json.loads says what is wrong
            return False
        brackets = shorter
    return bool(brackets)


#: A JSON escape of a UTF-16 surrogate (`\ud800`): the only way a lone one gets into a string.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def loads_json(data: bytes | str, *, max_depth: int = JSON_DEPTH, max_values: int | None = None) -> Any:
    """json.loads, refusing (JSONLimit, a ValueError) what nests deeper than `max_depth`, integers of
    more than JSON_INT_DIGITS digits and, with `max_values`, more values than that (each costs
    tens of bytes once parsed, however short its text). The checks cost a few ms a MB.

    A lone surrogate (`"\ud800"` unpaired) comes back as U+FFFD: no UTF-8 can hold one, so every
    print or write of the text would raise UnicodeEncodeError, far from the file that held it."""
    import json

    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if max_values is not None and raw.count(b",") + raw.count(b"[") + raw.count(b"{") > max_values:
        raise JSONLimit(f"more than {max_values:,} values")
    if deeper_than(raw, max_depth):
        raise JSONLimit(f"nested deeper than {max_depth} levels")
    long_digits = b"0" * (JSON_INT_DIGITS + 1) in raw.translate(_DIGITS)  # in a string too: then look closer
    try:
        value = json.loads(data, parse_int=_parse_int) if long_digits else json.loads(data)
    except RecursionError:  # pragma: no cover - deeper_than refuses such nesting first
        raise JSONLimit(f"nested deeper than {max_depth} levels") from None
    return _whole_text(value) if _SURROGATE_ESCAPE.search(raw) else value


def _whole_text(value: Any) -> Any:
    """`value` with every lone surrogate of its strings and keys as U+FFFD (a pair json.loads
    joined already); its depth is loads_json's bound."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_whole_text(v) for v in value]
    if isinstance(value, dict):
        return {_whole_text(k): _whole_text(v) for k, v in value.items()}
    return value


def read_json(path: str | os.PathLike[str], limit: int = RECORD_LIMIT, *, follow_links: bool = False,
              max_values: int | None = None) -> Any:
    """A JSON file through read_bounded and loads_json. FileNotFoundError passes through; anything
    else wrong is a UserError of one line naming the file (UnsafeFile for links, FIFOs, sizes)."""
    data = read_bounded(path, limit, follow_links=follow_links)
    try:
        return loads_json(data, max_values=max_values)
    except JSONLimit as exc:
        raise UnsafeFile(f"{path}: JSON {exc}; not read") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} is not valid JSON ({str(exc)[:100]})") from None


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


# ----------------------------------------------------------------------------- writing
def write_atomic(path: str | os.PathLike[str], data: bytes, *, follow_dir_link: bool = True) -> None:
    """Write `data` to a new file beside `path`, then rename it over `path`: a reader never sees half
    a file, a failure (a full disk) leaves the old file as it was, and a link planted at `path` (or
    at the temporary name) is replaced, never written through. With follow_dir_link=False the
    folder itself must not be a link either (a run folder; a path the user typed may pass through
    one). OSError passes through, with nothing left behind."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_dir_link:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        dir_fd = os.open(path.parent, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and not follow_dir_link:
            raise UnsafeFile(f"{path.parent}: is a symbolic link or not a folder; nothing written there") from None
        raise
    try:
        tmp = f".{path.name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o666, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.close(fd)
            fd = -1
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    finally:
        os.close(dir_fd)


def open_append(path: str | os.PathLike[str], *, truncate: bool = False) -> int:
    """A descriptor appending to `path` (created if missing; emptied first with `truncate`), never
    through a link, never a FIFO or a device (what a neighbour may have planted in a run folder
    before its writer starts)."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), 0o644)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UnsafeFile(f"{path}: is not a regular file; not written")
    os.set_blocking(fd, True)
    if truncate:
        os.ftruncate(fd, 0)
    return fd


# ----------------------------------------------------------------------------- paths a run records
def inside(folder: Path, relative: str | os.PathLike[str]) -> Path:
    """`folder / relative` for a path a run recorded (a profile artifact), refused unless it stays in
    the folder: not absolute, no `..`, and no link on the way (a `profiles/` planted as a link to
    a neighbour's folder); UnsafeFile otherwise. The file itself is opened with open_regular."""
    rel = Path(relative)
    shown = str(relative)[:200]
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise UnsafeFile(f"{folder.name}: recorded path {shown!r} leads outside the run folder; not read")
    here = folder
    for part in rel.parts[:-1]:
        here = here / part
        if not is_plain_dir(here):
            raise UnsafeFile(f"{folder.name}: recorded path {shown!r}: {part} is a link or not a folder; not read")
    target = folder / rel
    if os.path.islink(target):
        raise UnsafeFile(f"{folder.name}: recorded path {shown!r} is a symbolic link; not followed")
    return target


def exposed(folder: Path) -> str | None:
    """Who besides its owner may write into `folder` ("its group and everyone"), or None (also for
    anything that is not a folder)."""
    try:
        mode = folder.stat().st_mode
    except OSError:
        return None
    if not stat.S_ISDIR(mode):
        return None
    who = [name for bit, name in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "everyone")) if mode & bit]
    return " and ".join(who) or None

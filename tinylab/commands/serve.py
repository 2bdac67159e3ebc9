"""`tinylab serve`: the same lab in a browser, for its owner only, through textual-serve (an extra).

The printed URL holds a secret token (as Jupyter's does): share it with nobody. The default
listens on this machine only; from a laptop, forward the port over SSH.

The token is printed once, at start. Each request's line in the access log shows it masked
(`token=[secret]`, as Jupyter's log does): the page and its files are asked for with it in the URL
and the Referer, so an unmasked log held it a dozen times. `tinylab serve > serve.log` leaves a
file that holds the token: when the output goes to a file of the caller's, it is made readable by
its owner only (mode 0600), whatever the umask made of it.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import sys

from tinylab.commands._common import add_runs_dir, integer

#: The token in a request line, a Referer or a query, up to where the value ends.
_TOKEN = re.compile(r"(token=)[^&\s\"']+")


def add_arguments(p) -> None:
    add_runs_dir(p)
    p.add_argument("--host", default="localhost", help="interface to listen on (default: localhost only)")
    p.add_argument("--port", type=integer(0, 65535), default=8000,
                   help="port to listen on, 0 to 65535, 0 for any free one (default 8000)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a --host beyond this machine (the token then travels unencrypted)")


def run(args) -> int:
    from tinylab.tui.serve import serve  # Textual's world lives under tinylab/tui

    mask_token_in_access_log()
    owner_only(sys.stdout)
    serve(args.runs_dir, args.host, args.port, allow_remote=args.allow_remote)
    return 0


class _MaskToken(logging.Filter):
    """aiohttp's access log with the token of each line masked (aiohttp formats the line before
    it logs it: the message is the whole line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _TOKEN.sub(r"\1[secret]", record.getMessage())
        record.args = ()
        return True


def mask_token_in_access_log() -> None:
    """Mask the token in every line of aiohttp's access log, once a process."""
    access = logging.getLogger("aiohttp.access")
    if not any(isinstance(f, _MaskToken) for f in access.filters):
        access.addFilter(_MaskToken())


def owner_only(stream) -> None:
    """Mode 0600 for `stream` when it is a regular file its user owns (the shell made it, under
    the umask, before tinylab started): the token printed into it is no one else's to read."""
    try:
        fd = stream.fileno()
        info = os.fstat(fd)
    except (AttributeError, OSError, ValueError):  # no file behind it (a pipe is a FIFO: not regular)
        return
    if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077:
        os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o600)
        print("tinylab: the output file now has mode 0600: it holds the lab's token", file=sys.stderr)

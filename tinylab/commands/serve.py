"""`tinylab serve`: the same lab in a browser on localhost, through textual-serve (an extra)."""

from __future__ import annotations

import shlex
import sys

from tinylab.commands._common import add_runs_dir
from tinylab.errors import UserError


def add_arguments(p) -> None:
    add_runs_dir(p)
    p.add_argument("--host", default="localhost", help="interface to listen on (default: localhost only)")
    p.add_argument("--port", type=int, default=8000)


def run(args) -> int:
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UserError("tinylab serve needs textual-serve: pip install -e '.[serve]'") from None
    command = [sys.executable, "-m", "tinylab", "lab"]
    if args.runs_dir:
        command += ["--runs-dir", args.runs_dir]
    Server(shlex.join(command), host=args.host, port=args.port, title="tinylab").serve()
    return 0

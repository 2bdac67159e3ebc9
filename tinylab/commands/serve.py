"""`tinylab serve`: the same lab in a browser on localhost, through textual-serve (an extra)."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir


def add_arguments(p) -> None:
    add_runs_dir(p)
    p.add_argument("--host", default="localhost", help="interface to listen on (default: localhost only)")
    p.add_argument("--port", type=int, default=8000)


def run(args) -> int:
    from tinylab.tui.serve import serve  # Textual's world lives under tinylab/tui

    serve(args.runs_dir, args.host, args.port)
    return 0

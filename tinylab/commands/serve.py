"""`tinylab serve`: the same lab in a browser, for its owner only, through textual-serve (an extra).

The printed URL holds a secret token (as Jupyter's does): share it with nobody. The default
listens on this machine only; from a laptop, forward the port over SSH.
"""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir


def add_arguments(p) -> None:
    add_runs_dir(p)
    p.add_argument("--host", default="localhost", help="interface to listen on (default: localhost only)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on, 0 for any free one (default 8000)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a --host beyond this machine (the token then travels unencrypted)")


def run(args) -> int:
    from tinylab.tui.serve import serve  # Textual's world lives under tinylab/tui

    serve(args.runs_dir, args.host, args.port, allow_remote=args.allow_remote)
    return 0

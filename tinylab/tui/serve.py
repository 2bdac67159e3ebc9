"""The lab in a browser on localhost, through textual-serve (an optional extra).

textual-serve starts one `tinylab lab` child per browser session; like every Python child tinylab
starts, it runs with `-P` (tinylab.childproc), so a `tinylab/`, `torch.py` or `models/` folder
where `tinylab serve` was started is never imported. It keeps the caller's working folder: the
default run store (./tinylab_runs) and any path typed in the lab are relative to it.
"""

from __future__ import annotations

import shlex

from tinylab import childproc
from tinylab.errors import UserError


def lab_command(runs_dir: str | None) -> list[str]:
    """argv of the lab that each browser session runs."""
    command = childproc.python("-m", "tinylab", "lab")
    if runs_dir:
        command += ["--runs-dir", runs_dir]
    return command


def serve(runs_dir: str | None, host: str, port: int) -> None:
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UserError("tinylab serve needs textual-serve: pip install -e '.[serve]'") from None
    # textual-serve takes one command string; shlex.join quotes every argument of the list
    Server(shlex.join(lab_command(runs_dir)), host=host, port=port, title="tinylab").serve()

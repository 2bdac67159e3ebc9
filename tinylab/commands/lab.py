"""`tinylab` / `tinylab lab`: open the Textual lab on a run store."""

from __future__ import annotations

import os
import sys

from tinylab.commands._common import add_runs_dir
from tinylab.core.errors import UserError


def add_arguments(p) -> None:
    add_runs_dir(p)


def run(args) -> int:
    # Textual draws on a terminal and reads keys from one; without one (`tinylab < /dev/null | cat`,
    # a cron job) it would wait forever. textual-serve's sessions name a driver of their own.
    if "TEXTUAL_DRIVER" not in os.environ and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError("the lab needs a terminal, and stdin or stdout is not one: run `tinylab` in a terminal, "
                        "`tinylab serve` for a browser, or a command (tinylab --help lists them)")
    from tinylab.tui.app import run_app

    return run_app(args.runs_dir)

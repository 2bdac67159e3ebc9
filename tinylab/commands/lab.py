"""`tinylab` / `tinylab lab`: open the Textual lab on a run store."""

from __future__ import annotations

from tinylab.commands._common import add_runs_dir


def add_arguments(p) -> None:
    add_runs_dir(p)


def run(args) -> int:
    from tinylab.tui.app import run_app

    return run_app(args.runs_dir)

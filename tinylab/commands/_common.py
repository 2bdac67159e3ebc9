"""Helpers shared by the sub-commands (argument snippets, the Lab, printing)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from tinylab.service.lab import Lab


def add_runs_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs-dir", default=None,
                   help="run store folder (default: $TINYLAB_RUNS_DIR or ./tinylab_runs)")


def lab_from(args: argparse.Namespace) -> Lab:
    return Lab(getattr(args, "runs_dir", None))


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def terminal_width(pipe: int) -> int:
    """Columns to lay text out in: $COLUMNS when set (`COLUMNS=80 tinylab runs`), else the
    terminal's width, else `pipe`: a pipe gets lines that nothing cuts."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        return pipe

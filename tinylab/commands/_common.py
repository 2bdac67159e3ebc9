"""Helpers shared by the sub-commands (argument snippets, the Lab, printing)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from tinylab.core.errors import UserError
from tinylab.core.safeio import write_atomic
from tinylab.service.lab import ENV_RUNS_DIR, Lab


def add_runs_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs-dir", default=None,
                   help="run store folder (default: $TINYLAB_RUNS_DIR or ./tinylab_runs)")


def integer(low: int, high: int | None = None):
    """An argparse type: an integer from `low` to `high` (>= `low` without one), refused with its
    range (argparse prints the one line): a flag's range is in its help and in its error alike."""
    span = f"from {low} to {high}" if high is not None else f">= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be an integer {span}, got {text[:40]!r}")
        return value

    parse.__name__ = "integer"  # argparse names the type in other errors
    return parse


def number(low: float, high: float, closed: bool = True):
    """An argparse type: a finite number above `low` (or at it, `closed`) and at most `high`,
    refused with its range (a NaN or an infinity is no number a flag means)."""
    span = f"{'>=' if closed else '>'} {low:g} and <= {high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not (low <= value if closed else low < value) or value > high:
            raise argparse.ArgumentTypeError(f"must be a finite number {span}, got {text[:40]!r}")
        return value

    parse.__name__ = "number"
    return parse


def setting_type(name: str):
    """An argparse type for a run setting of tinylab.config's INT_RANGES or FLOAT_RANGES, refused
    with the range and the words RunConfig.validate uses."""
    from tinylab.config import FLOAT_RANGES, INT_RANGES

    if name in INT_RANGES:
        return integer(*INT_RANGES[name])
    low, closed, high = FLOAT_RANGES[name]
    return number(low, high, closed)


def lab_from(args: argparse.Namespace, *, launches: bool = False) -> Lab:
    """The Lab of the command's run store; a store others may write into is a warning on stderr.

    A store named on purpose (--runs-dir or $TINYLAB_RUNS_DIR) that is not there is an error for a
    command that only reads runs (`launches` False): a typo must not read as "no runs". The default
    ./tinylab_runs missing is a store with no runs yet; a command that launches a run creates it.
    """
    lab = Lab(getattr(args, "runs_dir", None))
    named = "--runs-dir" if getattr(args, "runs_dir", None) is not None else (
        f"${ENV_RUNS_DIR}" if os.environ.get(ENV_RUNS_DIR) else None)
    if named and not launches and _missing(lab.store.root):
        raise UserError(f"there is no run store {lab.store.root} (named by {named}): no such folder; "
                        "check the name (a run launched there creates it)")
    note = lab.store.exposure_note()
    if note is not None:
        print(f"tinylab: {note}", file=sys.stderr)
    return lab


def _missing(path: Path) -> bool:
    """Whether nothing is at `path`; a file on its way or a name too long is the store's own error."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def check_output(path: Path, flag: str) -> None:
    """Refuse, before any work, an output file that cannot be written: a folder, or a file in a
    folder that does not exist (a bench of many minutes must not fail at its very end)."""
    if path.is_dir():
        raise UserError(f"cannot write {flag} {path}: it is a folder; name a file")
    if not path.parent.is_dir():
        raise UserError(f"cannot write {flag} {path}: there is no folder {path.parent}")


def write_output(path: Path, text: str, flag: str) -> None:
    """Write a command's output file through a temporary file renamed over it: a full disk leaves
    the old file as it was, never truncated; UserError (one line) when it cannot be written."""
    check_output(path, flag)
    try:
        write_atomic(path, text.encode("utf-8", "replace"))  # a lone surrogate a run file held: '?', no traceback
    except OSError as exc:
        raise UserError(f"cannot write {flag} {path}: {exc.strerror or exc}"
                        f"{' (it is unchanged)' if path.exists() else ''}") from None


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

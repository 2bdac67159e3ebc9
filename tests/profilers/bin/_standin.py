"""Shared by the stand-in profiler executables in this folder.

A stand-in parses its argv with the flags the real tool documents (FORMATS.md; unknown flags
exit 2 like argparse), writes the real tool's output format (copied from tests/fixtures, or
built by tests/profilers/samples.py from the documented headers), and runs the program after
"--" with the real tool's exit code convention. Stdlib only.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "support"))  # samples.py, rocpd_db.py

import samples  # noqa: E402

FIXTURES = samples.FIXTURES


def split_program(argv: list[str], tool: str) -> tuple[list[str], list[str]]:
    """(tool options, program argv) around the first "--"; the program is required."""
    if "--" not in argv:
        fail(tool, 'the application must follow "--" (usage: %s [options] -- <application> [args])' % tool)
    i = argv.index("--")
    if i + 1 >= len(argv):
        fail(tool, 'no application after "--"')
    return argv[:i], argv[i + 1 :]


def fail(tool: str, message: str, code: int = 2) -> None:
    sys.stderr.write(f"[{tool}] error: {message}\n")
    raise SystemExit(code)


def run_program(program: list[str]) -> int:
    """Run the profiled program; a missing program is exit 127 like a shell."""
    try:
        return subprocess.call(program)
    except OSError as exc:
        sys.stderr.write(f"could not run {program[0]}: {exc}\n")
        return 127


def expand(template: str, pid: int) -> str:
    """rocprofv3's output-name placeholders (output_config.hpp)."""
    return template.replace("%hostname%", socket.gethostname()).replace("%pid%", str(pid)).replace("%p", str(pid))


def copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def write(dst: Path, text: str) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(text, encoding="utf-8")


def log_argv(tool: str) -> None:
    """Append the argv this stand-in saw to $STANDIN_LOG (tests assert on it)."""
    log = os.environ.get("STANDIN_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(tool + "\t" + "\t".join(sys.argv[1:]) + "\n")

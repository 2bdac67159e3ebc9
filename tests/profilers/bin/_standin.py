"""Shared by the stand-in profiler executables in this folder.

A stand-in answers `--help` as its release's tool does (argparse, or timemory's parser for
rocprof-sys) and parses its argv with the options that release has (unknown options fail with the
real tool's exit code); it writes the real tool's output format (copied from tests/fixtures, or built
by tests/support/samples.py from the real headers), and runs the program after "--" with the real
tool's exit code convention. The three AMD stand-ins behave as one ROCm release, taken from the
project's release table (tinylab/core/rocm_releases.py, loaded by path): the release in
$STANDIN_ROCM_RELEASE, else in the .info/version of the ROCm tree they are called from
(<root>/bin/<tool>, as tests/support/rocm.py lays out, or a pip install's sibling
site-packages/_rocm_sdk_core/.info/version, or a prefix's standin-release outside any ROCm tree), else 7.0. A release newer than the table is the newest
one's; $STANDIN_EXTRA_OPTIONS and $STANDIN_DROP_OPTIONS (comma lists) add options no table knows and
take away some it has, as a future release might. Stdlib only.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parents[1] / "support"))  # samples.py, rocpd_db.py

import samples  # noqa: E402

FIXTURES = samples.FIXTURES
DEFAULT_RELEASE = "7.0.0"
#: In a prefix outside any ROCm tree (tests/support/rocm.py "-bare"), the file that tells the stand-ins
#: (and nothing else: tinylab never reads it) which release they are.
BARE_RELEASE = "standin-release"


def releases():
    """tinylab/core/rocm_releases.py, loaded by path (not through the tinylab package)."""
    spec = importlib.util.spec_from_file_location("rocm_releases", REPO / "tinylab" / "core" / "rocm_releases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["rocm_releases"] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


rr = releases()


def version() -> str:
    """The ROCm version this stand-in belongs to ("6.3.1", "6.2.2-116")."""
    told = os.environ.get("STANDIN_ROCM_RELEASE")
    if told:
        return told
    tree = Path(os.path.abspath(sys.argv[0])).parent.parent  # not resolved: the tree it was called in
    for info in (tree / rr.VERSION_FILE, tree.parent / rr.PIP_CORE / rr.VERSION_FILE):  # a pip install's profiler package
        if info.is_file():
            return info.read_text().strip()
    if tree.name.startswith(rr.THEROCK_PREFIX):  # a TheRock package named by its folder: /opt/rocm/core-<M.m>
        return tree.name[len(rr.THEROCK_PREFIX):] + ".0"
    if (tree / BARE_RELEASE).is_file():  # a prefix outside any ROCm tree: only the stand-in knows its release
        return (tree / BARE_RELEASE).read_text().strip()
    return DEFAULT_RELEASE


def at_least(major: int, minor: int) -> bool:
    """This stand-in's release is major.minor or newer."""
    return rr.version_tuple(version())[:2] >= (major, minor)


def options(table: dict) -> dict:
    """A release's options (long -> short), with $STANDIN_EXTRA_OPTIONS added and $STANDIN_DROP_OPTIONS
    taken away (long or short names)."""
    drop = {o for o in os.environ.get("STANDIN_DROP_OPTIONS", "").split(",") if o}
    extra = {o: None for o in os.environ.get("STANDIN_EXTRA_OPTIONS", "").split(",") if o}
    kept = {k: v for k, v in {**table, **extra}.items() if k not in drop}
    return {k: (v if v not in drop else None) for k, v in kept.items()}


def release() -> str:
    """The release key this stand-in behaves as."""
    version_ = version()
    key = rr.release_key(version_)
    if key is None:
        raise SystemExit(f"stand-in: no release table entry for ROCm {version_}")
    return key


def add_options(parser, table: dict, known: dict) -> None:
    """Every option of a release's table (options()): `known` gives the argparse keywords of those a
    stand-in reads (by long name); the rest take any values, as far as this stand-in cares."""
    for long, short in options(table).items():
        if long in ("--help", "--version"):
            continue
        names = ([short] if short else []) + [long]
        parser.add_argument(*names, **known.get(long, dict(nargs="*", help="(taken, not read by this stand-in)")))


def split_optional(argv: list[str]) -> tuple[list[str], list[str]]:
    """(tool options, program) around the first "--"; the program may be missing."""
    if "--" not in argv:
        return argv, []
    i = argv.index("--")
    return argv[:i], argv[i + 1 :]


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


def run_program_pid(program: list[str], env: dict | None = None) -> tuple[int, int]:
    """Run the profiled program; (exit code, its pid). A missing program is exit 127 like a shell."""
    try:
        proc = subprocess.Popen(program, env={**os.environ, **(env or {})})
    except OSError as exc:
        sys.stderr.write(f"could not run {program[0]}: {exc}\n")
        return 127, os.getpid()
    return proc.wait(), proc.pid


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

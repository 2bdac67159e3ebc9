"""The test session's record of its slowest compiles, so that CI does not pay for them each time.

Of the shipped configs' 742 compiles (tests/anatomy/test_ci_guard.py), the 216 that take a second
or more hold four fifths of the compile time (1023 of 1276 CPU-seconds, measured on the loaded 2-core
development machine): above all ptxas on the exact-fp32 attention kernels at S=1024 and head size
128 for sm_80 and sm_90, 5 to 52 s each, which spill kilobytes (KNOWN_SPILLS) or cannot launch
(KNOWN_UNLAUNCHABLE); then the longer kernels on every target (NVIDIA 725 s, AMD 298 s of the 216).
Their reports are kept in tests/anatomy/slow_compiles.json under their
compile keys, which hash the kernel's source (and the jit functions it calls), the launch's
parameters, the target and the Triton version: a seeded report is the one the compile would give,
and a kernel that changes, or another Triton, has other keys, so it is compiled as before. The
session's cache gets the reports before anything is compiled (`seed`); the guard checks that each
is still one the shipped configs compile (a stale one would only cost time again).

When that check fails (a kernel changed), record them again from a session's cache, then delete the
keys the check still calls stale (the compiles of other tests' configs, which the cache holds too):

    cd tests && python -c 'from support.slow_compiles import record; record("/tmp/pytest-of-'$USER'/pytest-current/xdg-cache0/tinylab/anatomy")'
"""

from __future__ import annotations

import json
import os
from importlib.metadata import version
from pathlib import Path

from tinylab.anatomy import Cache

PATH = Path(__file__).resolve().parents[1] / "anatomy" / "slow_compiles.json"
#: A compile that took this long (seconds, on the 2-core development machine) is recorded: at 5 s
#: (20 compiles, 473 s) CI still spent 14 min in this session's compiles; at 1 s it keeps 237 s.
SLOW_S = 1.0


def load() -> dict[str, dict]:
    """compile key -> report, for the installed Triton ({} for another: its keys never match)."""
    doc = json.loads(PATH.read_text(encoding="utf-8"))
    return doc["reports"] if doc["triton"] == version("triton") else {}


def recorded_triton() -> str:
    return json.loads(PATH.read_text(encoding="utf-8"))["triton"]


def seed(cache: Cache) -> set[str]:
    """Put the recorded reports into `cache` (without IR stages); returns their keys."""
    reports = load()
    for key, report in reports.items():
        cache.put_kernel(key, report, {})
    return set(reports)


def record(cache_root: str | os.PathLike, slow_s: float = SLOW_S) -> int:
    """Rewrite the record from a session's anatomy cache: every compile that took `slow_s` or
    more; returns how many."""
    kernels = Path(cache_root) / "kernels"
    reports = {}
    for entry in sorted(kernels.iterdir()):
        report = json.loads((entry / "report.json").read_text(encoding="utf-8"))
        if (report.get("seconds") or 0) >= slow_s:
            reports[entry.name] = report
    doc = {"triton": version("triton"), "reports": reports}
    PATH.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return len(reports)

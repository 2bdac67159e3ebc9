"""The test session's record of its slowest compiles, so that CI does not pay for them each time.

Of the shipped configs' 742 compiles (tests/anatomy/test_ci_guard.py), 20 take about half of the
compile time: ptxas on the exact-fp32 attention kernels at S=1024 and head size 128 for sm_80
and sm_90, 5 to 52 s each (473 s together, one core of the idle 2-core development machine),
which spill kilobytes (KNOWN_SPILLS) or cannot launch (KNOWN_UNLAUNCHABLE). Their reports are kept in tests/anatomy/slow_compiles.json under their
compile keys, which hash the kernel's source (and the jit functions it calls), the launch's
parameters, the target and the Triton version: a seeded report is the one the compile would give,
and a kernel that changes, or another Triton, has other keys, so it is compiled as before. The
session's cache gets the reports before anything is compiled (`seed`); the guard checks that each
is still one the shipped configs compile (a stale one would only cost time again).

When that check fails (a kernel changed), record them again from a session's cache:

    cd tests && python -c 'from support.slow_compiles import record; record("/tmp/pytest-of-'$USER'/pytest-current/xdg-cache0/tinylab/anatomy")'
"""

from __future__ import annotations

import json
import os
from importlib.metadata import version
from pathlib import Path

from tinylab.anatomy import Cache

PATH = Path(__file__).resolve().parents[1] / "anatomy" / "slow_compiles.json"
#: A compile that took this long (seconds, on the 2-core development machine) is recorded.
SLOW_S = 5.0


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

"""Which tests are slow, so that the fast lane (`pytest -m "not slow"`) stays under 5 minutes on two
cores: a test is slow when it uses a session fixture of the kernel anatomy (the shipped configs
compiled for every target: minutes) or of the launched pair of runs, or when tests/slow_tests.txt
names it: the tests measured at 2 s or more (call, set-up and tear-down; any of its parameters) in
a full run on the 2-core development machine, and whole modules (a line without `::`) whose
module-scoped fixture trains runs for all their tests (its minutes of set-up land on whichever of
them runs first, so no test of the module is fast: measured with `-m "not slow" --durations=60`).

The list is a measurement, so it is made again from one, never by hand:

    TRITON_INTERPRET=1 python -m pytest -q --durations=0 > /tmp/durations.txt
    cd tests && python -c 'from support.slow_tests import record; record("/tmp/durations.txt")'

tests/test_slow_tests.py fails on a name in the list whose test is gone, so a renamed slow test
cannot slip into the fast lane unnoticed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "slow_tests.txt"
SLOW_S = 2.0
_DURATION = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+(tests/\S+?\.py::[^\s\[@]+)")


def base_name(nodeid: str) -> str:
    """A test's id without its parameters: a slow parameter marks the whole test."""
    return nodeid.split("[", 1)[0].split("@", 1)[0]


def load() -> set[str]:
    lines = (line.split("#", 1)[0].strip() for line in PATH.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line}


def record(durations: str, slow_s: float = SLOW_S) -> list[str]:
    """Write tests/slow_tests.txt from pytest's `--durations=0` output; returns the names."""
    spent: dict[str, float] = defaultdict(float)
    for line in Path(durations).read_text(encoding="utf-8").splitlines():
        m = _DURATION.match(line)
        if m:
            spent[m.group(2)] += float(m.group(1))
    modules = sorted(name for name in load() if "::" not in name)  # kept: measured in the fast lane
    names = sorted(name for name, seconds in spent.items() if seconds >= slow_s and name.split("::")[0] not in modules)
    PATH.write_text("# tests measured at 2 s or more, and whole modules: support/slow_tests.py says how this is made\n"
                    + "".join(f"{name}\n" for name in modules)
                    + "".join(f"{name}  # {spent[name]:.1f} s\n" for name in names), encoding="utf-8")
    return modules + names

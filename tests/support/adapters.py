"""A wrapper adapter's argv around a tiny program, in a run's profile folder, against the stand-in
executables (tests/profilers/bin), and what the tables read back should hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support import samples

from tinylab.config import RunConfig

CONFIG = RunConfig(num_steps=3, warmup_steps=1)
EXPECTED = samples.expected_from_dispatches(samples.rocm7_dispatches())
TRUNCATED = samples.expected_from_dispatches(samples.rocm7_dispatches(samples.FIXTURES / "rocprofv3/rocm7-docs-data/kernel_trace_truncated.csv"))
PROGRAM = [sys.executable, "-c", "import pathlib; pathlib.Path('program_ran').write_text('yes')"]


def run_wrapped(adapter, tmp_path: Path, program=PROGRAM) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path / "run" / "profiles" / adapter.name
    out.mkdir(parents=True)
    argv = adapter.wrap_argv(out, CONFIG)
    proc = subprocess.run(argv + program, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    return out, proc


def totals(table) -> dict[str, tuple[int, float]]:
    return {r["name"]: (r["calls"], r["total_ns"]) for r in table.to_dict("records")}

"""The steps whose checks read compiled kernels (v3-triton-basics step 4, v4-fusion step 6) pass on
a CPU through `tinylab exercises check`, start no run, and can fail. They compile into the
session's cache (conftest.cache_home): warm once tests/anatomy compiled the shipped configs (the
sweeps' values are the steps' own), about a minute cold on two cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.exercises import REPO

from tinylab import exercises as ex

STEPS = [("v3-triton-basics", 4), ("v4-fusion", 6)]


@pytest.fixture(scope="module")
def checked(cache_home, tmp_path_factory):
    root = tmp_path_factory.mktemp("anatomy-steps")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), ex.PROGRESS_ENV: str(root / "progress.json")}
    out = {}
    for scenario, number in STEPS:
        out[(scenario, number)] = subprocess.run(
            [sys.executable, "-m", "tinylab", "exercises", "check", scenario, "--step", str(number), "--json",
             "--runs-dir", str(root / "runs")], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    return root, out


@pytest.mark.parametrize(("scenario", "number"), STEPS)
def test_the_compiled_steps_pass_on_a_cpu_without_a_run(checked, scenario, number):
    root, out = checked
    proc = out[(scenario, number)]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["passed"] and doc["run_ids"] == [] and {c["status"] for c in doc["checks"]} == {"pass"}
    assert "compiling the step's Triton kernels at hidden 512" in proc.stderr
    assert not (root / "runs").exists()


def test_their_checks_can_fail(checked, cache_home, monkeypatch):
    """v3's kernels in v4's place and v4's in v3's: what fusing did reads the other way round."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    step = ex.get_step(ex.find_scenario(ex.load_scenarios(), "v4-fusion"), 6)
    configs = ex.compiled_configs(step, {})
    swapped = {"run": configs["baseline"], "baseline": configs["run"]}
    got = {r.name: r.status for r in ex.evaluate_checks(step, None, None, False, compiled=swapped)}
    assert got == {"fused-norm-holds-more": "fail", "and-keeps-fewer-warps": "fail", "mi300x-keeps-its-waves": "pass",
                   "rope-in-dkdv-spills-on-h100": "fail", "not-on-mi300x": "pass"}

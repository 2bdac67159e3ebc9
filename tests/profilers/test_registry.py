"""The profilers package (tinylab/profilers/__init__.py): the registry, the in-process hooks a run
config asks for, and a profiled run end to end, each tool's table stored where `tinylab hotspots`
reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import samples
from support.paths import BIN

from tinylab.cli import main
from tinylab.config import IN_PROCESS_PROFILERS, PROFILERS, RunConfig
from tinylab.core.errors import UserError
from tinylab.profilers.base import IN_PROCESS, WRAPPER
from tinylab.profilers.registry import all_adapters, get_adapter, inprocess_hooks

REPO = Path(__file__).resolve().parents[2]


def test_registry_matches_config_names():
    adapters = all_adapters()
    assert [a.name for a in adapters] == list(PROFILERS)
    assert {a.name for a in adapters if a.kind == IN_PROCESS} == set(IN_PROCESS_PROFILERS) == {"pytorch", "deepspeed",
                                                                                                "proton"}
    assert all(a.kind in (IN_PROCESS, WRAPPER) and a.description and a.fix for a in adapters)
    with pytest.raises(UserError, match="unknown profiler 'vtune': choose from pytorch, deepspeed, rocprofv3"):
        get_adapter("vtune")


def test_inprocess_hooks_only_for_in_process_tools(tmp_path):
    hooks = inprocess_hooks(RunConfig(profilers=["pytorch", "rocprofv3"]), tmp_path)
    assert [h.name for h in hooks] == ["pytorch"]
    assert inprocess_hooks(RunConfig(profilers=[]), tmp_path) == []


TINY = ["--device", "cpu", "--hidden-dim", "32", "--num-layers", "1", "--num-heads", "2", "--num-kv-heads", "2",
        "--seq-len", "16", "--batch-size", "2", "--num-steps", "3", "--warmup-steps", "1", "--vocab-size", "64"]


def tinylab(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinylab", *args], capture_output=True, text=True, timeout=180,
                          cwd=REPO, env={**os.environ, **(env or {})})


def test_profiled_run_stores_its_kernel_tables(tmp_path, capsys):
    """`tinylab train --profile pytorch --profile rocprofv3` (the stand-in, wrapping the real
    trainer): each tool's table lands in profiles/<tool>/kernels.csv with a profile event, and
    `tinylab hotspots <run>` reads the newest one (the wrapper's, collected after the trainer exits)."""
    env = {"PATH": str(BIN) + os.pathsep + os.environ["PATH"], "TINYLAB_GPU_VENDORS": "amd"}
    runs = str(tmp_path / "runs")
    proc = tinylab("train", *TINY, "--profile", "pytorch", "--profile", "rocprofv3", "--runs-dir", runs, "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    profiles = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if '"profile"' in line]
    assert [(p["tool"], p["kernel_table"], p["format"]) for p in profiles] == [
        ("pytorch", "profiles/pytorch/kernels.csv", "pytorch-operators"),
        ("rocprofv3", "profiles/rocprofv3/kernels.csv", "rocpd"),  # the stand-ins are 7.0 here: its database
    ]
    assert "CPU run" in profiles[0]["note"] and "trace.json.gz" in profiles[0]["artifacts"]
    assert main(["hotspots", "last", "--runs-dir", runs, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == run_dir.name and data["format"] == "rocpd"  # the run `last` named
    truncated = samples.expected_from_dispatches(
        samples.rocm7_dispatches(samples.FIXTURES / "rocprofv3/rocm7-docs-data/kernel_trace_truncated.csv"))
    assert {k["name"]: k["calls"] for k in data["kernels"]} == {k: v[0] for k, v in truncated.items()}

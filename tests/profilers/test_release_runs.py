"""Whole CPU runs under the AMD stand-ins of each ROCm release, as a user starts them: `tinylab run
--profile rocprofv3` on 6.2.0 ... 7.1 passes that release's flags and reads its kernel table from
that release's layout, and a rocprof-compute run that runs the program once per counter pass stays
one clean run record. All runs start at once (detached) and are waited for in the tests."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.rocm import VERSIONS, rocm_tree
from support.runs import cli, output_tail, wait_for_status

from tinylab.events import read_events
from tinylab.profilers import rocm_releases as rr
from tinylab.runs.passes import window_steps
from tinylab.runs.store import TERMINAL, Run

TINY = ["--device", "cpu", "--hidden-dim", "32", "--num-layers", "1", "--num-heads", "2", "--num-kv-heads", "2",
        "--seq-len", "16", "--batch-size", "2", "--vocab-size", "64", "--num-steps", "5", "--warmup-steps", "1"]
COMPUTE_RELEASE, COMPUTE_PASSES = "6.3", 4


@dataclass
class Launched:
    run: Run
    log: Path  # the argv each stand-in saw


def launch(root: Path, key: str, profiler: str, *flags: str, **env: str) -> Launched:
    log = root / f"{key}-{profiler}{'-'.join(flags)}.argv"
    environment = {**os.environ, "PATH": str(rocm_tree(root / "opt", key)) + os.pathsep + os.environ["PATH"],
                   "TINYLAB_GPU_VENDORS": "amd", "STANDIN_LOG": str(log), **env}
    environment.pop("ROCM_PATH", None)
    environment.pop("STANDIN_ROCM_RELEASE", None)
    proc = cli("run", "--detach", "--json", "--runs-dir", str(root / "runs"), "--profile", profiler, *TINY, *flags,
               env=environment)
    assert proc.returncode == 0, proc.stderr
    return Launched(Run(Path(json.loads(proc.stdout)["dir"])), log)


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[str, Launched]:
    root = tmp_path_factory.mktemp("release_runs")
    runs = {key: launch(root, key, "rocprofv3") for key in VERSIONS}
    runs["compute"] = launch(root, COMPUTE_RELEASE, "rocprof-compute", STANDIN_COMPUTE_PASSES=str(COMPUTE_PASSES))
    runs["ranks"] = launch(root, "7.0", "rocprofv3", "--nproc-per-node", "2")
    return runs


def finished(item: Launched) -> Run:
    assert wait_for_status(item.run, TERMINAL, timeout=180) == "finished", output_tail(item.run)
    return item.run


@pytest.mark.parametrize("key", list(VERSIONS))
def test_rocprofv3_run_of_each_release(launched, key):
    facts = rr.ROCPROFV3[key]
    run = finished(launched[key])
    calls = [line.split("\t")[1:] for line in launched[key].log.read_text().splitlines()]
    (argv,) = [call for call in calls if "--" in call]  # the probes (--help, --version) aside
    options = {a for a in argv[: argv.index("--")] if a.startswith("-")}
    assert options and all(facts.has(o) for o in options), options
    record = run.record()
    (profile,) = record.profiles
    assert profile.format == "rocprofv3-kernel-stats" and profile.kernel_table == "profiles/rocprofv3/kernels.csv"
    assert profile.steps == 5  # no roctx ranges on a CPU: the table covers the whole run, as the note says
    assert "no roctx step ranges recorded" in profile.note
    stats = [name for name in profile.artifacts if name.endswith("_kernel_stats.csv")]
    expected_dir = [socket.gethostname()] if facts.host_dir else []
    assert stats and all(name.split("/")[:-1] == expected_dir for name in stats), stats
    assert record.summary is not None and record.steps_done == 5 and record.counter_pass is None


def test_rocprof_compute_run_is_one_clean_record(launched):
    run = finished(launched["compute"])
    log = read_events(run.dir / "events.jsonl")
    assert [len(log.of(kind)) for kind in ("start", "summary", "step")] == [1, 1, 5]
    record = run.record()
    assert record.status == "finished" and record.summary.steps == 5 and record.steps_done == 5
    (profile,) = record.profiles
    assert profile.passes == COMPUTE_PASSES and f"ran the program {COMPUTE_PASSES} times" in profile.note
    assert record.counter_pass is not None and (record.counter_pass.number, record.counter_pass.planned) == (4, 4)
    assert [e["pass"] for e in log.of("pass")] == [1, 2, 3, 4]
    window = window_steps(run.config())
    for k in range(2, COMPUTE_PASSES + 1):  # later passes: their own file, the short window only
        other = read_events(run.dir / f"events.pass{k}.jsonl")
        assert len(other.of("step")) == window == 3 and len(other.of("summary")) == 1
    output = run.output_log.read_text()
    assert "counter pass 2 of 4" in output and "counter pass 4 of 4" in output


def test_each_rank_of_a_run_of_several_is_profiled_apart(launched):
    """AMD's multi-process pattern: one rocprofv3 a rank (torchrun starts tinylab.runs.rank, which
    becomes `rocprofv3 ... -- python -m tinylab.training.trainer`), one output set and one kernel table a rank."""
    run = finished(launched["ranks"])
    calls = [line.split("\t")[1:] for line in launched["ranks"].log.read_text().splitlines()]
    wrapped = [call for call in calls if "--" in call]
    outputs = sorted(call[call.index("--output-directory") + 1] for call in wrapped)
    assert outputs == [str(run.dir / "profiles" / "rocprofv3" / f"rank{k}") for k in (0, 1)]
    record = run.record()
    assert sorted(p.rank for p in record.profiles) == [0, 1] and record.ranks_in_sync is True
    for profile in record.profiles:
        assert profile.kernel_table == f"profiles/rocprofv3/rank{profile.rank}/kernels.csv"
        assert profile.format == "rocprofv3-kernel-stats"

"""Whole CPU runs under the AMD stand-ins of ROCm 6.2, 6.3 (outside any ROCm tree), 7.0, 7.2, 7.14,
10.1 (a TheRock package and a pip install) and 10.2, as a user starts them, rocprof-compute also with
`--rocprof-compute-dispatch` (the same dispatches on every release, whichever number the tool starts at): `tinylab run --profile rocprofv3|rocprof-sys|rocprof-compute`
passes only what each tool's help lists (the stand-in's parser takes it: the run finishes), the
kernel table is read from wherever that release wrote it, and the rocm-tools scenario's checks pass
on each: its steps as a learner on a CPU runs them, and its speed-of-light and roofline expressions
over each release's own rocprof-compute output. A rocprof-compute run that runs the program once per
counter pass stays one clean run record. All runs share one tiny model, start at once (detached) and
are waited for in the tests."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.rocm import RUN_INSTALLS, key_of, rocm_tree
from support.runs import cli, output_tail, wait_for_status

from tinylab import exercises as ex
from tinylab.core.eventlog import read_events
from tinylab.core import rocm_releases as rr
from tinylab.runs.passes import window_steps
from tinylab.runs.store import TERMINAL, Run

STEPS = 3
TINY = ["--device", "cpu", "--hidden-dim", "32", "--num-layers", "1", "--num-heads", "2", "--num-kv-heads", "2",
        "--seq-len", "16", "--batch-size", "2", "--vocab-size", "64", "--num-steps", str(STEPS), "--warmup-steps", "1"]
TOOLS = ("rocprofv3", "rocprof-sys", "rocprof-compute")
#: The one rocprof-compute run that runs the program several times (the others: one counter pass each).
PASSES_INSTALL, PASSES = "7.14", 3
FORMATS = {"rocprof-compute": "rocprof-compute"}
#: tinylab's dispatches 1 and 2 of the three the stand-in's workload has (counted from 0 on every release)
DISPATCHES = "1:3"
SCENARIO = ex.find_scenario(ex.load_scenarios(), "rocm-tools")


@dataclass
class Launched:
    run: Run
    log: Path  # the argv each stand-in saw


def launch(root: Path, install: str, profiler: str, *flags: str, **env: str) -> Launched:
    log = root / f"{install}-{profiler}{'-'.join(flags)}.argv"
    environment = {**os.environ, "PATH": str(rocm_tree(root / "opt", install)) + os.pathsep + os.environ["PATH"],
                   "TINYLAB_GPU_VENDORS": "amd", "STANDIN_LOG": str(log), "STANDIN_COMPUTE_PASSES": "1", **env}
    for name in ("ROCM_PATH", "STANDIN_ROCM_RELEASE", "STANDIN_EXTRA_OPTIONS", "STANDIN_DROP_OPTIONS"):
        environment.pop(name, None)
    proc = cli("run", "--detach", "--json", "--runs-dir", str(root / "runs"), "--profile", profiler, *TINY, *flags,
               env=environment)
    assert proc.returncode == 0, proc.stderr
    return Launched(Run(Path(json.loads(proc.stdout)["dir"])), log)


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[tuple[str, str], Launched]:
    root = tmp_path_factory.mktemp("release_runs")
    runs = {(install, tool): launch(root, install, tool,
                                    **({"STANDIN_COMPUTE_PASSES": str(PASSES)} if (install, tool) ==
                                       (PASSES_INSTALL, "rocprof-compute") else {}))
            for install in RUN_INSTALLS for tool in TOOLS}
    runs.update({(install, "dispatch"): launch(root, install, "rocprof-compute", "--rocprof-compute-dispatch", DISPATCHES)
                 for install in RUN_INSTALLS})
    runs[("7.0", "ranks")] = launch(root, "7.0", "rocprofv3", "--nproc-per-node", "2")
    return runs


def finished(item: Launched) -> Run:
    assert wait_for_status(item.run, TERMINAL, timeout=240) == "finished", output_tail(item.run)
    return item.run


def wrapped_argv(item: Launched) -> list[str]:
    """The argv the tool was started with around the trainer (its probes, --help and --version, aside)."""
    calls = [line.split("\t")[1:] for line in item.log.read_text().splitlines()]
    (argv,) = [call for call in calls if "--" in call and call[0] != "analyze"]
    return argv


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("install", RUN_INSTALLS)
def test_a_profiled_run_of_each_release_and_the_scenarios_checks(launched, install, tool):
    key = key_of(install)
    item = launched[(install, tool)]
    run = finished(item)
    argv = wrapped_argv(item)
    options = {a for a in argv[: argv.index("--")] if a.startswith("-")}
    table = {"rocprofv3": rr.ROCPROFV3, "rocprof-sys": rr.ROCPROF_SYS, "rocprof-compute": rr.ROCPROF_COMPUTE}[tool][key]
    assert options and options <= set(table.options) | {v for v in table.options.values() if v}, options
    record = run.record()
    (profile,) = record.profiles
    rocpd = rr.ROCPROFV3[key].default_format == "rocpd"
    sys_rocpd = "--output-format" in rr.ROCPROF_SYS[key].options  # 1.7+: rocpd.db, the same reader
    fmt = FORMATS.get(tool) or ("rocpd" if (sys_rocpd if tool == "rocprof-sys" else rocpd) else
                                "rocprof-sys-json" if tool == "rocprof-sys" else "rocprofv3-kernel-stats")
    assert profile.format == fmt and profile.kernel_table == f"profiles/{tool}/kernels.csv", profile.note
    assert record.summary is not None and record.steps_done == STEPS
    assert profile.steps == (None if tool == "rocprof-compute" else STEPS)  # its counters: every pass's dispatches
    # the scenario's steps of this tool, as a learner on a CPU runs them: the recorded checks pass,
    # the GPU ones are skipped with their reason
    for step in (s for s in SCENARIO.steps if s.tool == tool):
        results = ex.evaluate_checks(step, record, record if step.baseline else None, on_gpu=False)
        assert ex.step_passed(results), [(r.name, r.status, r.detail) for r in results]
        if tool == "rocprof-compute":  # its speed-of-light and roofline functions over this release's own output
            own = [dataclasses.replace(c, on="run", needs_gpu=False) for c in step.checks if c.on == "recorded"]
            results = ex.evaluate_checks(dataclasses.replace(step, checks=own), record, None, on_gpu=True)
            assert all(r.status == "pass" for r in results), [(r.name, r.status, r.detail) for r in results]


@pytest.mark.parametrize("install", RUN_INSTALLS)
def test_a_dispatch_filter_means_the_same_dispatches_on_every_release(launched, install):
    """--rocprof-compute-dispatch 1:3 is tinylab's dispatches 1 and 2: `--dispatch 1:3` to 3.9, rocprofv3's
    `--kernel-iteration-range [2-3]` from 3.10 (which numbers from 1 and reads -d as --output-directory);
    the table, its speed-of-light folder and the scenario's checks see the same two dispatches."""
    item = launched[(install, "dispatch")]
    run = finished(item)
    argv = wrapped_argv(item)
    facts = rr.ROCPROF_COMPUTE[key_of(install)]
    if "--kernel-iteration-range" in facts.options:
        assert argv[argv.index("--kernel-iteration-range") + 1] == "[2-3]" and "--dispatch" not in argv
    else:
        assert argv[argv.index("--dispatch") + 1] == DISPATCHES
    assert "-d" not in argv[:argv.index("--")]  # chosen by long name: -d moved in 3.10
    record = run.record()
    (profile,) = record.profiles
    assert profile.format == "rocprof-compute" and "speed-of-light tables" in profile.note, profile.note
    import re

    shown = {int(n) for n in re.findall(r"dispatch_(\d+)/", " ".join(profile.artifacts))}
    assert shown and shown <= {1, 2}, profile.artifacts  # tinylab's numbers, from 0, on every release
    for step in (s for s in SCENARIO.steps if s.tool == "rocprof-compute"):
        own = [dataclasses.replace(c, on="run", needs_gpu=False) for c in step.checks
               if c.on == "recorded" and "kernel_calls" not in c.expr]  # the recorded workload's 3 dispatches
        results = ex.evaluate_checks(dataclasses.replace(step, checks=own), record, None, on_gpu=True)
        assert all(r.status == "pass" for r in results), [(r.name, r.status, r.detail) for r in results]


def test_rocprof_compute_run_is_one_clean_record(launched):
    run = finished(launched[(PASSES_INSTALL, "rocprof-compute")])
    log = read_events(run.dir / "events.jsonl")
    assert [len(log.of(kind)) for kind in ("start", "summary", "step")] == [1, 1, STEPS]
    record = run.record()
    assert record.status == "finished" and record.summary.steps == STEPS and record.steps_done == STEPS
    (profile,) = record.profiles
    assert profile.passes == PASSES and f"ran the program {PASSES} times" in profile.note
    assert record.counter_pass is not None and (record.counter_pass.number, record.counter_pass.planned) == (3, 3)
    assert [e["pass"] for e in log.of("pass")] == [1, 2, 3]
    window = window_steps(run.config())
    for k in range(2, PASSES + 1):  # later passes: their own file, the short window only
        other = read_events(run.dir / f"events.pass{k}.jsonl")
        assert len(other.of("step")) == window and len(other.of("summary")) == 1
    output = run.output_log.read_text()
    assert "counter pass 2 of 3" in output and "counter pass 3 of 3" in output


def test_each_rank_of_a_run_of_several_is_profiled_apart(launched):
    """AMD's multi-process pattern: one rocprofv3 a rank (torchrun starts tinylab.runs.rank, which
    becomes `rocprofv3 ... -- python -m tinylab.training.trainer`), one output set and one kernel table a rank."""
    item = launched[("7.0", "ranks")]
    run = finished(item)
    calls = [line.split("\t")[1:] for line in item.log.read_text().splitlines()]
    wrapped = [call for call in calls if "--" in call]
    outputs = sorted(call[call.index("--output-directory") + 1] for call in wrapped)
    assert outputs == [str(run.dir / "profiles" / "rocprofv3" / f"rank{k}") for k in (0, 1)]
    record = run.record()
    assert sorted(p.rank for p in record.profiles) == [0, 1] and record.ranks_in_sync is True
    for profile in record.profiles:
        assert profile.kernel_table == f"profiles/rocprofv3/rank{profile.rank}/kernels.csv"
        assert profile.format == "rocpd"

"""Runs of several ranks on the CPU (gloo), started the way a learner starts them, and the pieces
they are made of: the engines' rules, torchrun's argv, how the ranks meet at the end.

The world-size-2 runs start together once (their torch imports overlap); each test reads its own.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import sys

import pytest
from support.runs import FOREVER_STEPS, TINY, output_tail, process_gone, wait_for, wait_for_status, wait_for_step

from tinylab.runs import engines
from tinylab.training import parallel
from tinylab.config import ConfigError, RunConfig
from tinylab.core.events import ErrorEvent
from tinylab.runs.launcher import SAFE_PATH, cancel, launch
from tinylab.runs.store import Run, RunStore
from tinylab.runs.supervisor import launch_argv, silent_ranks, torchrun_argv
from tinylab.service.launch import check_run
from tinylab.service.machine import Machine
from tinylab.training.trainer import run_training

HAS_DEEPSPEED = importlib.util.find_spec("deepspeed") is not None
SHORT = dict(TINY, num_steps=6, warmup_steps=2)


def two_ranks(**overrides) -> RunConfig:
    return RunConfig(**{**SHORT, "parallel": "ddp", "nproc_per_node": 2, **overrides}).validate()


# ----------------------------------------------------------------------------- rules
@pytest.mark.parametrize("kwargs, fragment", [
    ({"nproc_per_node": 2}, "2 processes need an engine: --parallel ddp|fsdp|zero1|zero2"),
    ({"parallel": "horovod"}, "unknown engine 'horovod': choose one of ddp, fsdp, zero1, zero2"),
    ({"parallel": "ddp", "nproc_per_node": 0}, "--nproc-per-node must be an integer from 1 to 256, got 0"),
    ({"parallel": "ddp", "nnodes": True}, "--nnodes must be an integer from 1 to 2048, got True"),
    ({"parallel": "ddp", "nproc_per_node": 256, "nnodes": 9}, "tinylab runs at most 2048"),
    ({"parallel": "fsdp", "version": "v4"}, "--parallel fsdp cannot train v4: v4 keeps its GEMM weights as views"),
    ({"parallel": "zero2", "version": "v4"}, "--parallel zero2 cannot train v4"),
    ({"parallel": "zero1", "precision": "fp16"}, "--parallel zero1 with fp16 would need its own loss scaling"),
    ({"parallel": "fsdp", "version": "v2", "cuda_graph": True}, "--parallel fsdp gathers and partitions outside"),
    ({"parallel": "ddp", "nproc_per_node": 2, "profilers": ["ncu"]}, "--profile ncu cannot follow 2 ranks"),
    ({"parallel": "ddp", "nproc_per_node": 2, "profilers": ["rocprof-compute"]},
     "--profile rocprof-compute cannot follow 2 ranks"),
    ({"parallel": "ddp", "nproc_per_node": 2, "device": "cuda:1"}, "--device cuda:1 names one GPU"),
    ({"parallel": "ddp", "nnodes": 2, "rdzv_endpoint": "node1"}, "--rdzv-endpoint must be HOST:PORT"),
    ({"parallel": "ddp", "rdzv_endpoint": "node1:29500"}, "--rdzv-endpoint applies to runs of several nodes"),
    ({"rdzv_endpoint": "node1:29500"}, "--rdzv-endpoint applies to runs of several nodes"),
    ({"fault": "straggler"}, "fault 'straggler' slows one rank of several"),
])
def test_bad_parallel_configs_are_one_line_errors(kwargs, fragment):
    with pytest.raises(ConfigError) as err:
        RunConfig(**{**SHORT, **kwargs}).validate()
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_what_each_engine_trains():
    for version in ("v1", "v2", "v3", "v4"):
        two_ranks(version=version)  # DDP trains every version
    for engine in ("fsdp", "zero1", "zero2"):
        for version in ("v1", "v2", "v3"):
            two_ranks(parallel=engine, version=version)
    # a graphed DDP step is allowed on one rank (DDP is built on a side stream and warmed up first);
    # on several, v4 runs eagerly and asking for the graph is refused
    assert two_ranks(version="v4", nproc_per_node=1).toggle("cuda_graph")
    assert not two_ranks(version="v4").toggle("cuda_graph")
    with pytest.raises(ConfigError, match="a whole-step graph of several DDP ranks"):
        two_ranks(version="v4", cuda_graph=True)


def test_a_node_needs_a_gpu_a_rank():
    gpus = Machine(gpus=2, vendor="nvidia", gpu_memory_bytes=80 << 30, host_memory_bytes=64 << 30)
    with pytest.raises(ConfigError, match="--nproc-per-node 4 wants a GPU a rank, and this node has 2"):
        check_run(two_ranks(device="cuda", nproc_per_node=4), gpus, lambda name: None)
    check_run(two_ranks(device="cuda"), gpus, lambda name: None)
    check_run(two_ranks(nproc_per_node=8), Machine(host_memory_bytes=64 << 30), lambda name: None)  # gloo on a CPU


# ----------------------------------------------------------------------------- launching
def test_torchrun_argv_one_node_and_several(tmp_path):
    program = [sys.executable, *SAFE_PATH, "-m", "tinylab.training.trainer", "--config", "c.json"]
    one = torchrun_argv(two_ranks(), program, run_id="r1")
    # --no-python: each rank is started as given, with -P (torchrun's own -m would drop it)
    assert one == [sys.executable, *SAFE_PATH, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                   "--nnodes", "1", "--standalone", "--no-python", *program]
    cfg = two_ranks(nproc_per_node=4, nnodes=2, rdzv_endpoint="node1:29400")
    many = torchrun_argv(cfg, program, run_id="r2")
    assert many[-len(program) - 7:-len(program) - 1] == ["--rdzv-backend", "c10d", "--rdzv-endpoint", "node1:29400",
                                                         "--rdzv-id", "r2"]
    assert "node7:1234" in torchrun_argv(cfg, program, run_id="r2", endpoint="node7:1234")


def test_a_profiled_run_of_ranks_wraps_each_rank(tmp_path):
    from tinylab.profilers.registry import get_adapter

    cfg = two_ranks(profilers=["nsys"])
    argv = launch_argv(tmp_path, cfg, get_adapter("nsys"))
    assert argv[argv.index("--no-python") + 1:] == [sys.executable, *SAFE_PATH, "-m", "tinylab.runs.rank",
                                                    str(tmp_path.resolve())]


def test_zero_writes_its_deepspeed_config(tmp_path):
    launch_argv(tmp_path, two_ranks(parallel="zero2"), None)
    written = json.loads((tmp_path / engines.DEEPSPEED_CONFIG).read_text())
    assert written["zero_optimization"] == {"stage": 2, "overlap_comm": True, "contiguous_gradients": True,
                                            "reduce_bucket_size": 6_553_600, "allgather_bucket_size": 6_553_600}
    assert written["train_micro_batch_size_per_gpu"] == SHORT["batch_size"]


def test_a_silent_rank_is_named_from_torchruns_report(tmp_path):
    (tmp_path / "ranks").mkdir()
    for rank in (0, 1):
        (tmp_path / "ranks" / f"rank{rank}.json").write_text(json.dumps({"rank": rank, "pid": 100 + rank, "host": "n1"}))
    (tmp_path / "events.jsonl").write_text(json.dumps({"event": "error", "time": 1.0, "type": "RuntimeError",
                                                       "message": "Connection closed by peer", "rank": 0}) + "\n")
    (tmp_path / "output.log").write_text("""Failures:
[1]:
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 100)
Root Cause (first observed failure):
[0]:
  time      : 2026-11-26_23:03:20
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 101)
""")
    [error] = silent_ranks(tmp_path, two_ranks())
    assert error == ErrorEvent(type="RankDied", message="rank 1 (pid 101 on n1) was killed by SIGKILL without recording "
                               "an error", traceback="", rank=1, root=True)


# ----------------------------------------------------------------------------- the ranks meet
def test_the_run_is_as_slow_as_its_slowest_rank():
    stats = [{"rank": 0, "step_ms": [10.0, 30.0], "fwd_ms_median": 3.0, "step_ms_median": 20.0},
             {"rank": 1, "step_ms": [20.0, 15.0], "fwd_ms_median": 9.0, "step_ms_median": 17.5}]
    assert parallel.global_step_ms(stats) == [20.0, 30.0]
    assert parallel.slowest(stats) == 1  # the longest forward, not the longest step
    stats[0]["fwd_ms_median"] = None  # a graph replay: no phases, the longest step
    assert parallel.slowest(stats) == 0


def test_rank_info_outside_torchrun():
    assert parallel.rank_info(RunConfig(**SHORT)) is None
    env: dict[str, str] = {}
    info = parallel.rank_info(RunConfig(**{**SHORT, "parallel": "ddp"}), env)
    assert (info.rank, info.world_size, env["MASTER_ADDR"]) == (0, 1, "127.0.0.1") and int(env["MASTER_PORT"]) > 0
    with pytest.raises(ConfigError, match="a run of 2 ranks starts through torchrun"):
        parallel.rank_info(two_ranks(), {})
    assert parallel.rank_info(two_ranks(), {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}).rank == 1


def test_straggler_delays_only_the_last_rank():
    assert parallel.straggle(parallel.RankInfo(0, 0, 2, "h"), 40.0) == 0.0
    assert parallel.straggle(None, 40.0) == 0.0
    assert 80.0 <= parallel.straggle(parallel.RankInfo(1, 1, 2, "h"), 40.0) < 1000.0
    assert parallel.straggle(parallel.RankInfo(1, 1, 2, "h"), None) >= 1.0
    assert parallel.straggle(parallel.RankInfo(1, 1, 2, "h"), 0.5) >= 1.0  # at least 1 ms


# ----------------------------------------------------------------------------- real runs of 2 ranks
CASES = {
    "ddp-v1": dict(version="v1", profilers=["pytorch"], profile_steps=2),
    "ddp-v2": dict(version="v2"),
    "ddp-v3": dict(version="v3"),
    "ddp-v4": dict(version="v4"),
    "fsdp-v1": dict(version="v1", parallel="fsdp"),
    "one-rank": dict(version="v1", nproc_per_node=1),
    **({"zero2-v1": dict(version="v1", parallel="zero2")} if HAS_DEEPSPEED else {}),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    store = RunStore(tmp_path_factory.mktemp("ranks"))
    started = {name: launch(store, two_ranks(**kwargs)) for name, kwargs in CASES.items()}
    yield started
    for run in started.values():
        cancel(run, grace_s=(0.5, 0.5))


def finished(run: Run, timeout: float = 400):
    status = wait_for_status(run, timeout=timeout)
    record = run.record()
    assert status == "finished", f"{record.error}\n{output_tail(run)}"
    return record


@pytest.mark.parametrize("case", ["ddp-v1", "ddp-v2", "ddp-v3", "ddp-v4"])
def test_every_version_trains_every_parameter_under_ddp_in_step(runs, case):
    record = finished(runs[case])
    s = record.summary
    assert s.params_trained == s.params_total and s.world_size == 2
    assert [r.rank for r in record.ranks] == [0, 1] and record.ranks_in_sync is True
    assert s.samples_per_s == pytest.approx(2 * SHORT["batch_size"] * 1e3 / s.step_ms_median)
    # the run's step is as long as its slowest rank's, so no rank's median beats the run's by much
    assert s.step_ms_median >= 0.9 * max(r.step_ms_median for r in record.ranks)
    assert record.steps_done == SHORT["num_steps"]  # rank 0's steps only, not one a rank


def test_fsdp_trains_every_parameter(runs):
    record = finished(runs["fsdp-v1"])
    assert record.summary.params_trained == record.summary.params_total
    assert record.ranks_in_sync is True  # the gathered weights


@pytest.mark.skipif(not HAS_DEEPSPEED, reason="deepspeed is not installed (pip install deepspeed)")
def test_zero2_trains_every_parameter_with_the_config_it_wrote(runs):
    record = finished(runs["zero2-v1"], timeout=600)  # the first DeepSpeed run on a machine builds its shm op
    assert record.summary.params_trained == record.summary.params_total and record.ranks_in_sync is True
    assert (record.dir / engines.DEEPSPEED_CONFIG).is_file()


@pytest.mark.skipif(not HAS_DEEPSPEED, reason="deepspeed is not installed (pip install deepspeed)")
def test_zero_trains_in_this_process_without_a_config_file(tmp_path, monkeypatch):
    """`tinylab bench --parallel zero1` trains in its own process: no supervisor wrote deepspeed.json."""
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "DS_ACCELERATOR"):
        monkeypatch.setenv(name, "")  # what the one-rank group sets in os.environ goes with the test
        monkeypatch.delenv(name)
    summary = run_training(RunConfig(**{**SHORT, "parallel": "zero1"}), tmp_path, out=io.StringIO())
    assert summary["params_trained"] == summary["params_total"] and summary["world_size"] == 1
    assert not (tmp_path / engines.DEEPSPEED_CONFIG).exists()


def test_one_rank_through_torchrun(runs):
    record = finished(runs["one-rank"])
    assert record.summary.world_size == 1 and [r.rank for r in record.ranks] == [0]


def test_profiles_stay_apart_per_rank_and_collectives_are_measured(runs):
    record = finished(runs["ddp-v1"])
    assert sorted(p.rank for p in record.profiles) == [0, 1]
    for p in record.profiles:
        assert p.kernel_table == f"profiles/pytorch/rank{p.rank}/kernels.csv"
        assert (record.dir / p.kernel_table).is_file()
    assert record.summary.comm_ms > 0 and 0 <= record.summary.comm_hidden <= 1
    assert all(r.comm_ms > 0 for r in record.ranks)


def _launch_forever(tmp_path) -> Run:
    run = launch(RunStore(tmp_path), two_ranks(version="v1", num_steps=FOREVER_STEPS))
    wait_for_step(run, timeout=120)
    return run


def _rank_pids(run: Run) -> list[tuple[int, float]]:
    return [(r["pid"], r["start_time"]) for r in engines.rank_records(run.dir)]


def test_a_killed_rank_fails_the_run_naming_it(tmp_path):
    run = _launch_forever(tmp_path)
    pids = _rank_pids(run)
    assert len(pids) == 2
    os.kill(pids[1][0], signal.SIGKILL)
    assert wait_for_status(run, timeout=120) == "failed"
    record = run.record()
    assert record.error.rank == 1 and "rank 1" in record.error.message and "SIGKILL" in record.error.message
    assert wait_for(lambda: all(process_gone(p, t) for p, t in pids) and not run.is_alive(), 30, "every process gone")


def test_cancel_stops_every_rank(tmp_path):
    run = _launch_forever(tmp_path)
    pids = _rank_pids(run)
    assert cancel(run)
    assert run.status() == "cancelled"
    assert wait_for(lambda: all(process_gone(p, t) for p, t in pids), 10, "every rank gone")

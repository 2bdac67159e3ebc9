"""Several processes, one run: the ranks torchrun starts and the engine that trains across them.

torchrun (torch.distributed.run) owns the processes: it starts one a GPU (or N on a CPU), gives
each its RANK, LOCAL_RANK and WORLD_SIZE, and stops every rank when one fails. tinylab owns the
run: every rank records its process in ranks/rank<k>.json (so cancel and liveness reach it),
rank 0 writes the run's step events, any rank may write its error and its profile, and at the end
the ranks' step times meet on rank 0 for the summary (global throughput, per-rank medians, the
slowest rank). The engines are the ones people use: torch's DDP and FSDP2, DeepSpeed's ZeRO.

Torch is imported inside the functions that need it: the supervisor builds torchrun's argv here
without paying for a torch import.
"""

from __future__ import annotations

import hashlib
import os
import socket
import statistics
import time
from dataclasses import dataclass
from typing import Any

from tinylab.config import ConfigError, RunConfig
from tinylab.runs.engines import deepspeed_config

@dataclass(frozen=True)
class RankInfo:
    """Where this process sits in the run, from the variables torchrun sets."""

    rank: int
    local_rank: int
    world_size: int
    host: str

    @classmethod
    def from_env(cls, env: dict[str, str] | os._Environ = os.environ) -> "RankInfo | None":
        if "RANK" not in env or "WORLD_SIZE" not in env:
            return None
        return cls(int(env["RANK"]), int(env.get("LOCAL_RANK", env["RANK"])), int(env["WORLD_SIZE"]),
                   socket.gethostname())


def rank_info(cfg: RunConfig, env: dict[str, str] | os._Environ = os.environ) -> RankInfo | None:
    """This process's place in the run: from torchrun's variables; a run of one rank started without
    torchrun (the bench, tests) makes its own group of one on a free local port."""
    if cfg.parallel is None:
        return None
    info = RankInfo.from_env(env)
    if info is not None:
        return info
    if cfg.world_size > 1:
        raise ConfigError(f"a run of {cfg.world_size} ranks starts through torchrun: use `tinylab run`")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    return RankInfo.from_env(env)


# ----------------------------------------------------------------------------- inside a rank (torch)
def init(torch, info: RankInfo, device_type: str, graphed: bool = False):
    """Join the process group: NCCL (RCCL on ROCm) between GPUs, gloo on a CPU. The device a rank
    trains on is the GPU of its local rank."""
    import torch.distributed as dist

    if device_type == "cuda":
        if graphed:  # NCCL's watchdog must not query a stream while a graph captures it (torch's CUDA-graph notes)
            os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
        if info.local_rank >= torch.cuda.device_count():
            raise ConfigError(f"rank {info.rank} wants GPU {info.local_rank}, but this node shows "
                              f"{torch.cuda.device_count()}: use --nproc-per-node {torch.cuda.device_count()} or fewer")
        torch.cuda.set_device(info.local_rank)
        device = torch.device("cuda", info.local_rank)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    return device


@dataclass
class Wrapped:
    forward: Any  # what the step calls: the DDP module, the sharded model, or the DeepSpeed engine
    optimizer: Any
    engine: Any = None  # the DeepSpeed engine (its backward and step replace the plain ones)


def wrap(torch, cfg: RunConfig, model, device, make_optimizer) -> Wrapped:
    """The model under its engine, and the optimizer that goes with it. DeepSpeed gets its config
    as a dict: a run in this process (the bench) has no deepspeed.json, which only the supervisor
    writes (for the learner to read)."""
    if cfg.parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        import inspect

        # RoPE's tables (the only buffers) are the same on every rank: no broadcast each forward
        quiet = "forward_sync_buffers" if "forward_sync_buffers" in inspect.signature(DDP).parameters \
            else "broadcast_buffers"
        kwargs = {"device_ids": [device.index] if device.type == "cuda" else None, quiet: False}
        if cfg.cuda_graph:  # a graph captures DDP's collectives only if DDP was built on a side stream
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                ddp = DDP(model, **kwargs)
            torch.cuda.current_stream().wait_stream(side)
        else:
            ddp = DDP(model, **kwargs)
        return Wrapped(ddp, make_optimizer(model))
    if cfg.parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
        return Wrapped(model, make_optimizer(model))
    import deepspeed

    engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=make_optimizer(model),
                                                   config=deepspeed_config(cfg))
    return Wrapped(engine, optimizer, engine)


def straggle(info: RankInfo | None, last_work_ms: float | None) -> float:
    """The `straggler` fault: the last rank works, before its forward, twice as long as its previous
    step's own work took, so its step takes about three times as long: a delay well above the
    scheduling noise of two ranks on a small CPU, whose steps alone vary twofold. It spins for that
    much of its own CPU time rather than sleeping: a slow rank is busy, and on a CPU a sleeping rank
    (or one that shares its core and counts wall time) hands the core to the other ranks, whose
    sped-up work hides the delay. Returns the wall milliseconds it spent (0 on the other ranks),
    which the trainer takes off the step it measures next time."""
    if info is None or info.rank != info.world_size - 1:
        return 0.0
    start, cpu_until = time.perf_counter(), time.thread_time() + max(1.0, 2 * (last_work_ms or 0.0)) / 1e3
    while time.thread_time() < cpu_until:
        pass
    return (time.perf_counter() - start) * 1e3


def full_tensors(params) -> list:
    """Every parameter whole: FSDP2's sharded DTensors are gathered (a collective: all ranks call it)."""
    return [p.full_tensor() if hasattr(p, "full_tensor") else p for p in params]


def weights_digest(tensors) -> str:
    """A short hash of the weights' bytes: equal on every rank when the ranks stayed in sync."""
    h = hashlib.sha1()
    for t in tensors:
        h.update(t.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:12]


def trained_count(torch, params, initial) -> int:
    """Parameter tensors changed on any rank (FSDP shards: each rank sees its part of a tensor)."""
    import torch.distributed as dist

    local = lambda p: p.to_local() if hasattr(p, "to_local") else p  # noqa: E731
    changed = torch.tensor([float(not torch.equal(local(p).detach(), local(p0)))
                            for p, p0 in zip(params, initial)], device=_collective_device(torch))
    dist.all_reduce(changed, op=dist.ReduceOp.MAX)
    return int(changed.sum().item())


def _collective_device(torch):
    import torch.distributed as dist

    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def gather(obj: Any) -> list[Any]:
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def measured_steps(records: list[dict]) -> tuple[list[dict], dict[str, float | None]]:
    """The step records that count (those after warm-up; all of them when every step warmed up), and
    the medians of their phases: fwd_ms_median, bwd_ms_median, opt_ms_median (None where no step
    timed the phase, as in a graph replay)."""
    measured = [r for r in records if not r["warmup"]] or records
    medians = {}
    for key in ("fwd_ms", "bwd_ms", "opt_ms"):
        vals = [r[key] for r in measured if r.get(key) is not None]
        medians[f"{key}_median"] = statistics.median(vals) if vals else None
    return measured, medians


def rank_stats(info: RankInfo, device, records: list[dict], digest: str, pid: int) -> dict[str, Any]:
    """What one rank tells rank 0 at the end: its medians and spread after warm-up, its peak, its weights."""
    measured, medians = measured_steps(records)
    step_ms = sorted(r["step_ms"] for r in measured)
    peaks = [r["mem_peak_mb"] for r in records if r.get("mem_peak_mb") is not None]
    return {
        "rank": info.rank, "local_rank": info.local_rank, "host": info.host, "device": str(device), "pid": pid,
        "steps": len(records), "step_ms_median": statistics.median(step_ms), "step_ms_p90": percentile(step_ms, 90),
        **medians, "peak_mem_mb": max(peaks) if peaks else None, "weights": digest,
        "step_ms": [r["step_ms"] for r in measured],
    }


def slowest(stats: list[dict[str, Any]]) -> int:
    """The rank whose own work is slowest: the longest median forward (DDP and ZeRO run no collective
    in the forward, so a slow forward is the rank's own; the others wait for it in the backward), or
    the longest step where the phases are not separable (a graph replay)."""
    key = "fwd_ms_median" if all(s["fwd_ms_median"] is not None for s in stats) else "step_ms_median"
    return max(stats, key=lambda s: s[key])["rank"]


def global_step_ms(stats: list[dict[str, Any]]) -> list[float]:
    """The run's step times: each measured step lasts as long as its slowest rank took."""
    return [max(times) for times in zip(*(s["step_ms"] for s in stats))]


def percentile(sorted_vals: list[float], pct: float) -> float:
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = (len(sorted_vals) - 1) * pct / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def finish() -> None:
    import gc

    import torch.distributed as dist

    gc.collect()  # what still held the group (DDP's reducer) is freed before the group
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()

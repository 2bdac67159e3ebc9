"""What the supervisor writes and reads for a run of several processes (no torch): the ranks'
records, DeepSpeed's config file, and the variable a Slurm job script hands the first node's
rendezvous in. The trainer's side of the engines (process groups, wrapping) is
tinylab/training/parallel.py, which reads these too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tinylab.config import RunConfig

RANKS_DIR = "ranks"
DEEPSPEED_CONFIG = "deepspeed.json"
#: Where the first node of a Slurm job listens: the job script sets it for the supervisor.
ENDPOINT_ENV = "TINYLAB_RDZV_ENDPOINT"


def rank_file(run_dir: Path, rank: int) -> Path:
    return run_dir / RANKS_DIR / f"rank{rank}.json"


def rank_records(run_dir: Path) -> list[dict[str, Any]]:
    """The ranks/rank<k>.json records of a run, by rank (a damaged one is skipped)."""
    from tinylab.core.errors import UserError
    from tinylab.core.safeio import is_plain_dir, read_json

    out: list[dict[str, Any]] = []
    folder = run_dir / RANKS_DIR
    if not is_plain_dir(folder):  # missing, or a link planted to another run's ranks
        return out
    try:
        names = sorted(p.name for p in folder.iterdir() if re.fullmatch(r"rank\d+\.json", p.name))
    except OSError:
        return []
    for name in names:
        try:
            data = read_json(folder / name, 64 << 10)
        except (OSError, UserError):  # a link, a FIFO, too large, not JSON, nested too deep
            continue
        if isinstance(data, dict) and isinstance(data.get("rank"), int):
            out.append(data)
    return sorted(out, key=lambda d: d["rank"])


#: ZeRO's reduce and all-gather buckets, in elements: DDP's default bucket of 25 MB of fp32 gradients.
ZERO_BUCKET_ELEMENTS = 25 * 2**20 // 4


def deepspeed_config(cfg: RunConfig) -> dict[str, Any]:
    """The DeepSpeed config of --parallel zero1/zero2: what the trainer hands deepspeed.initialize, and
    what the supervisor writes into the run folder (deepspeed.json) for the learner to read.

    fp32 master weights (bf16 comes from the trainer's autocast, as in every other run), torch's
    AdamW partitioned by ZeRO, and stage 2's gradient reduction overlapped with the backward.

    Buckets of DDP's 25 MB (ZERO_BUCKET_ELEMENTS): DeepSpeed's default of 5e8 elements allocates
    two fp32 reduction buffers of 2 GB each under overlap_comm, more than the whole model, and
    made a ZeRO-2 rank hold 4.8 GB where DDP held 1.1 GB (2 H100s, the workshop's v1).
    """
    stage = int(cfg.parallel[-1]) if cfg.parallel else 0
    zero: dict[str, Any] = {"stage": stage, "reduce_bucket_size": ZERO_BUCKET_ELEMENTS,
                            "allgather_bucket_size": ZERO_BUCKET_ELEMENTS}
    if stage == 2:
        zero.update(overlap_comm=True, contiguous_gradients=True)
    return {
        "train_micro_batch_size_per_gpu": cfg.batch_size,
        "gradient_accumulation_steps": 1,
        "zero_optimization": zero,
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 2**31 - 1,
        "wall_clock_breakdown": False,
    }

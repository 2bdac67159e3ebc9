"""The multi-GPU scaling table: DDP, FSDP2 and ZeRO-2 at world sizes 1, 2, 4, 8 (what the node has),
in one device call, through `tinylab run` as a learner runs it.

    python tests/gpu/scaling.py --out DIR            # on a node of several GPUs
    python tests/gpu/scaling.py --out DIR --cpu      # the same mechanics on a CPU, tiny sizes

Cases (bf16, seq 1024, batch 8 per GPU, the workshop's model): v2 + torch.compile + CUDA graph and
v4 under DDP; v2 + torch.compile under FSDP2 and ZeRO-2 (a whole-step graph cannot hold their
gathers, and v4's flat weights are not for them: tinylab refuses those pairs, and the table says
why). Runs of fewer ranks than the node has share it: each takes its own GPUs
(CUDA_VISIBLE_DEVICES), so the 1-GPU runs go four at a time on a 4-GPU node. Every run of several
ranks is profiled (PyTorch profiler, 3 steps) for the collectives' time and the share hidden.

Writes DIR/scaling.jsonl (one line a run, as it ends) and prints the table last. NCCL's NVLink
multicast stays off (NCCL_NVLS_ENABLE=0 and friends) in every process started here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tinylab.config import ConfigError, RunConfig  # noqa: E402
from tinylab.runs.store import TERMINAL, RunStore  # noqa: E402

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
CASES = [  # (label, engine, flags)
    ("v4 (no graph)", "ddp", ["--version", "v4", "--no-cuda-graph"]),
    ("v2+compile", "ddp", ["--version", "v2", "--torch-compile"]),
    ("v2+compile", "fsdp", ["--version", "v2", "--torch-compile"]),
    ("v2+compile", "zero2", ["--version", "v2", "--torch-compile"]),
]
#: Graphed DDP steps of several ranks, run once at 2 ranks with a shorter limit: the log of one that
#: does not finish is kept under OUT/logs.
GRAPHED = [("v4", "ddp", ["--version", "v4"]), ("v2+compile+graph", "ddp", ["--version", "v2", "--torch-compile", "--cuda-graph"])]
JOB_TIMEOUT_S = {"graph": 100.0, "other": 170.0}
REFUSED = [("v2+compile+graph", "fsdp"), ("v2+compile+graph", "zero2"), ("v4", "fsdp"), ("v4", "zero2")]
GPU_SIZES = ["--precision", "bf16", "--seq-len", "1024", "--batch-size", "8", "--num-steps", "40", "--warmup-steps", "10"]
CPU_SIZES = ["--device", "cpu", "--preset", "cpu", "--num-steps", "6", "--warmup-steps", "2"]


def refusal(label: str, engine: str) -> str:
    version = "v4" if label == "v4" else "v2"
    try:
        RunConfig(version=version, parallel=engine, nproc_per_node=2, torch_compile=version == "v2" or None,
                  cuda_graph=True if "graph" in label else None, precision="bf16").validate()
    except ConfigError as exc:
        return str(exc)
    return "accepted"


def start(runs: Path, label: str, engine: str, flags: list[str], world: int, gpus: list[int], cpu: bool) -> dict:
    env = {**os.environ, **NO_MULTICAST, "PYTHONUNBUFFERED": "1"}
    if not cpu:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
    sizes = CPU_SIZES if cpu else GPU_SIZES
    if cpu:
        flags = [f for f in flags if f != "--cuda-graph"]
        if "--version" in flags and flags[flags.index("--version") + 1] == "v4":
            flags = flags + ["--num-steps", "3", "--warmup-steps", "1"]
    profile = ["--profile", "pytorch", "--profile-steps", "3"] if world > 1 else []
    argv = [sys.executable, "-m", "tinylab", "run", "--detach", "--json", "--runs-dir", str(runs), "--parallel", engine,
            "--nproc-per-node", str(world), "--label", f"scaling {label} {engine} x{world}", *sizes, *flags, *profile]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    if proc.returncode != 0:
        return {"label": label, "engine": engine, "world": world, "status": "refused", "error": proc.stderr.strip()}
    return {"label": label, "engine": engine, "world": world, "id": json.loads(proc.stdout)["id"], "started": time.time(),
            "limit_s": JOB_TIMEOUT_S["graph" if "graph" in label or label == "v4" else "other"]}


def wait(runs: Path, jobs: list[dict], out: Path, deadline: float) -> None:
    store = RunStore(runs)
    pending = [j for j in jobs if "id" in j]
    for j in jobs:
        if "id" not in j:
            record(out, j)
    while pending and time.time() < deadline:
        for j in list(pending):
            run = store.resolve(j["id"])
            status = run.status()
            if status not in TERMINAL and time.time() - j["started"] > j["limit_s"]:
                subprocess.run([sys.executable, "-m", "tinylab", "cancel", j["id"], "--runs-dir", str(runs)],
                               capture_output=True, timeout=60, cwd=REPO)
                status = "timeout"
            if status in TERMINAL or status == "timeout":
                pending.remove(j)
                rec = run.record()
                s = rec.summary
                j.update(status=status, wall_s=round(time.time() - j["started"], 1))
                if s is not None:
                    j.update(samples_per_s=s.samples_per_s, step_ms=s.step_ms_median, p90_ms=s.step_ms_p90,
                             peak_mb=s.peak_mem_mb, comm_ms=s.comm_ms, comm_hidden=s.comm_hidden,
                             trained=f"{s.params_trained}/{s.params_total}", in_sync=rec.ranks_in_sync,
                             ranks=[{"rank": r.rank, "step_ms": r.step_ms_median, "p90_ms": r.step_ms_p90,
                                     "peak_mb": r.peak_mem_mb, "comm_ms": r.comm_ms} for r in rec.ranks],
                             device=rec.device_name, run_dir=str(rec.dir))
                if rec.error is not None:
                    j["error"] = f"{rec.error.type}: {rec.error.message}"[:400]
                if status != "finished":
                    j["status"] = status
                    keep_log(out, run)
                record(out, j)
        time.sleep(0.5)
    for j in pending:
        j.update(status="timeout")
        keep_log(out, store.resolve(j["id"]))
        record(out, j)


def keep_log(out: Path, run) -> None:
    """The end of a run's output.log under OUT/logs, for a run that did not finish."""
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    (logs / f"{run.id}.log").write_text(run.output_log.read_text(errors="replace")[-12000:])


def record(out: Path, job: dict) -> None:
    with open(out / "scaling.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(job) + "\n")
    print(json.dumps({k: v for k, v in job.items() if k != "ranks"}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cpu", action="store_true", help="tiny sizes on the CPU (gloo): the mechanics only")
    parser.add_argument("--worlds", default=None, help="comma-separated world sizes (default: 1, 2, 4, 8 up to the GPUs)")
    parser.add_argument("--budget-s", type=float, default=480)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.update(NO_MULTICAST)
    deadline = time.time() + args.budget_s
    import torch

    gpus = 2 if args.cpu else torch.cuda.device_count()
    worlds = [int(w) for w in args.worlds.split(",")] if args.worlds else [w for w in (1, 2, 4, 8) if w <= gpus]
    runs = args.out / "runs"
    for world in worlds:
        slots = max(1, gpus // world)  # runs of this size side by side, each on its own GPUs
        todo = list(CASES) + (GRAPHED if world == 2 else [])
        while todo and time.time() < deadline:
            batch, todo = todo[:slots], todo[slots:]
            jobs = [start(runs, label, engine, flags, world, list(range(i * world, (i + 1) * world)), args.cpu)
                    for i, (label, engine, flags) in enumerate(batch)]
            wait(runs, jobs, args.out, deadline)
    rows = [json.loads(line) for line in (args.out / "scaling.jsonl").read_text().splitlines()]
    base = {(r["label"], r["engine"]): r["samples_per_s"] for r in rows if r["world"] == 1 and r.get("samples_per_s")}
    version = f"torch {torch.__version__}" + (f", NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}"
                                              if torch.cuda.is_available() else "")
    device = next((r.get("device") for r in rows if r.get("device")), "?")
    print(f"\nscaling on {gpus} x {device} ({version}), {time.strftime('%Y-%m-%d')}")
    print(f"{'case':<17} {'engine':<6} {'ranks':>5} {'samples/s':>10} {'eff':>5} {'step ms':>8} {'p90':>7} "
          f"{'spread':>6} {'peak MB':>8} {'comm ms':>8} {'hidden':>6} status")
    for r in rows:
        eff = (r["samples_per_s"] / r["world"] / base[(r["label"], r["engine"])]
               if r.get("samples_per_s") and base.get((r["label"], r["engine"])) else None)
        medians = [x["step_ms"] for x in r.get("ranks", []) if x.get("step_ms")]
        spread = max(medians) / min(medians) if medians else None

        def f(v, spec):
            return format(v, spec) if isinstance(v, (int, float)) else "-"

        print(f"{r['label']:<17} {r['engine']:<6} {r['world']:>5} {f(r.get('samples_per_s'), ',.0f'):>10} "
              f"{f(eff, '.0%'):>5} {f(r.get('step_ms'), '.2f'):>8} {f(r.get('p90_ms'), '.2f'):>7} {f(spread, '.2f'):>6} "
              f"{f(r.get('peak_mb'), ',.0f'):>8} {f(r.get('comm_ms'), '.2f'):>8} {f(r.get('comm_hidden'), '.0%'):>6} "
              f"{r['status']}{' ' + r['error'][:60] if r.get('error') else ''}")
    for label, engine in REFUSED:
        print(f"{label:<17} {engine:<6} refused before launch: {refusal(label, engine)[:110]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

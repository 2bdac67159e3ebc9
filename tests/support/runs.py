"""Helpers of the run-engine tests: tiny configs, real CLI calls, polling with deadlines, and run
folders written by hand or copied from real runs.

Every wait polls with a deadline and fails with the run's output, so a hang is a failure with a
reason, never a stuck suite.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import psutil

from tinylab.config import RunConfig
from tinylab.core.eventlog import EVENTS_FILE
from tinylab.runs.store import TERMINAL, Run, mark_run

REPO = Path(__file__).resolve().parents[2]
TINY = dict(device="cpu", hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=4, seq_len=32, batch_size=4,
            num_steps=8, warmup_steps=2)
TINY_FLAGS = ["--device", "cpu", "--hidden-dim", "64", "--num-layers", "2", "--num-heads", "4",
              "--num-kv-heads", "4", "--seq-len", "32", "--batch-size", "4"]
#: Long enough to still be training whenever a test acts on it; tests end it themselves.
FOREVER_STEPS = 100_000


def tiny_config(**overrides) -> RunConfig:
    return RunConfig(**{**TINY, **overrides}).validate()


def cli(*args: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    """The real command line, as a user runs it (own interpreter, own exit code, own stderr)."""
    return subprocess.run([sys.executable, "-m", "tinylab", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, **kwargs)


def wait_for(predicate: Callable[[], object], timeout: float, what: str, run: Run | None = None):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f"\n--- output.log of {run.id} ---\n{output_tail(run)}" if run is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{detail}")
        time.sleep(0.05)


def wait_for_status(run: Run, statuses: tuple[str, ...] | str = TERMINAL, timeout: float = 90) -> str:
    statuses = (statuses,) if isinstance(statuses, str) else statuses
    return wait_for(lambda: (s := run.status()) in statuses and s, timeout, f"run {run.id} to be {'/'.join(statuses)}", run)


def wait_for_step(run: Run, timeout: float = 90) -> dict:
    """The first step event: from then on the trainer is inside its training loop."""
    return wait_for(lambda: run.events().last("step"), timeout, f"a step event of run {run.id}", run)


def output_tail(run: Run, chars: int = 3000) -> str:
    try:
        return run.output_log.read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return "(no output.log)"


def process_gone(pid: int, start_time: float | None = None) -> bool:
    """No process runs as `pid` any more: gone, a zombie (exited, unreaped), or a newer process."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return True
        return start_time is not None and abs(proc.create_time() - start_time) > 1.0
    except psutil.NoSuchProcess:
        return True


def run_pids(run: Run) -> tuple[int, int]:
    """(supervisor pid, trainer pid); the trainer's comes from its start event."""
    start = run.events().last("start")
    assert start is not None, output_tail(run)
    return run.process["pid"], start["pid"]


# ------------------------------------------------------------------------------ synthetic runs
def write_events(run_dir: Path, events: list[dict]) -> None:
    with open(run_dir / EVENTS_FILE, "w", encoding="utf-8") as fh:
        for event in events:
            fh.write(json.dumps(event) + "\n")


def make_run(root: Path, run_id: str, events: list[dict] | None = None, **config) -> Run:
    """A run folder written by hand (no process), for status and reader tests."""
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    mark_run(run_dir)
    (run_dir / "config.json").write_text(tiny_config(**config).resolved().to_json(), encoding="utf-8")
    if events is not None:
        write_events(run_dir, events)
    return Run(run_dir)


def clone_run(run: Run, root: Path, config: dict | None = None, drop: tuple[str, ...] = (),
              edit: Callable[[dict], None] | None = None) -> Run:
    """A copy of a real run under `root`, with config keys changed (in config.json and in the start
    event, which records what ran), event kinds dropped, and any event edited in place."""
    dst = root / run.id
    shutil.copytree(run.dir, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg.update(config or {})
    (dst / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    events = [e for e in run.events().events if e["event"] not in drop]
    for e in events:
        if e["event"] == "start":
            e["config"].update(config or {})
        if edit is not None:
            edit(e)
    write_events(dst, events)
    return Run(dst)


def rank_events(ranks: int, time: float, med: float, gpu: bool, weights: tuple[str, ...] = ()) -> list[dict]:
    """The `rank` events rank 0 writes for a run of several ranks around a median step `med` ms:
    rank 1 the slowest (its forward 30% longer), every rank's weights "9f2c41d07ab3" unless
    `weights` gives them by rank."""
    return [{"event": "rank", "time": time, "rank": k, "local_rank": k, "host": "gpu-node-07",
             "device": f"cuda:{k}" if gpu else "cpu", "pid": 4242 + k, "steps": 20,
             "step_ms_median": med * (1.0 + 0.02 * k), "step_ms_p90": med * (1.08 + 0.02 * k),
             "fwd_ms_median": med * (0.3 if k != 1 else 0.39), "bwd_ms_median": med * 0.55,
             "opt_ms_median": med * 0.15, "peak_mem_mb": 1550.0 + k if gpu else None,
             "weights": weights[k] if weights else "9f2c41d07ab3",
             "comm_ms": med * (0.24 if k != 1 else 0.18), "comm_hidden": 0.64} for k in range(ranks)]


def world_of(root: Path, run_id: str, ranks: int, samples_per_s: float | None, comm_ms: float | None = None,
             comm_hidden: float | None = None, device: str = "cpu") -> Run:
    """A finished run of `ranks` ranks written by hand (samples/s is the whole run's), with the rank
    events of rank_events for more than one."""
    config = {"parallel": "ddp", "nproc_per_node": ranks} if ranks > 1 else {}
    summary = {"event": "summary", "time": 3.0, "samples_per_s": samples_per_s, "step_ms_median": 40.0,
               "step_ms_p10": 39.0, "step_ms_p90": 41.0, "final_loss": 6.2,
               **({"world_size": ranks, "slowest_rank": 1, "comm_ms": comm_ms, "comm_hidden": comm_hidden}
                  if ranks > 1 else {})}
    events = [{"event": "start", "time": 1.0, "device": device, "device_name": "x86_64", "config": {}},
              *(rank_events(ranks, 2.0, 40.0, device != "cpu") if ranks > 1 else []), summary,
              {"event": "exit", "time": 4.0, "returncode": 0}]
    return make_run(root, run_id, events, **config)


def profile_tables(run: Run, tables: dict) -> Run:
    """Kernel tables recorded the way the trainer records them: {rank: [(name, calls, total_ns)]}, rank
    None for a run of one process (profiles/pytorch/kernels.csv), else profiles/pytorch/rank<k>/."""
    from support.tables import table_of

    from tinylab.core.eventlog import EventWriter
    from tinylab.core.events import ProfileEvent
    from tinylab.profilers.base import CollectResult, write_kernel_table

    with EventWriter(run.dir / EVENTS_FILE) as ev:
        for rank, rows in tables.items():
            ev.emit(ProfileEvent(**write_kernel_table(run.dir, "pytorch", CollectResult({}, table_of(rows)), rank)))
    return run


def kernels_csv(rows: list[tuple[str, int, float]]) -> str:
    out = io.StringIO()
    csv.writer(out).writerows([("name", "calls", "total_ns"), *rows])
    return out.getvalue()


def with_kernels(run, root, rows, raw: str | None = None):
    """A copy of `run` with a tinylab kernels.csv recorded by a profile event."""
    clone = clone_run(run, root)
    table = clone.dir / "profiles" / "pytorch" / "kernels.csv"
    table.parent.mkdir(parents=True)
    table.write_text(raw if raw is not None else kernels_csv(rows))
    events = clone.events().events
    events.insert(-2, {"event": "profile", "tool": "pytorch", "artifacts": {}, "format": "tinylab",
                       "kernel_table": "profiles/pytorch/kernels.csv", "note": None})
    write_events(clone.dir, events)
    return clone


def ddp2_run(root: Path, run_id: str = "20261126-234143-2d72") -> Run:
    """The real 2-rank DDP CPU run of tests/fixtures/pytorch-profiler/tinylab_cpu_ddp2 as a run folder:
    its config, each rank's trace where the run wrote it, its profile, rank and summary events."""
    from support.paths import FIX

    fixture = FIX / "pytorch-profiler" / "tinylab_cpu_ddp2"
    profiles = []
    for rank in (1, 0):  # the order the ranks finished in
        rel = f"profiles/pytorch/rank{rank}/trace.json.gz"
        profiles.append({"event": "profile", "time": 2.0, "tool": "pytorch", "artifacts": {"trace.json.gz": rel},
                         "kernel_table": None, "format": "pytorch-operators", "rank": rank})
    recorded = [json.loads(line) for name in ("rank_events.jsonl", "summary.jsonl")
                for line in (fixture / name).read_text().splitlines()]
    start = {"event": "start", "time": 1.0, "device": "cpu", "device_name": "x86_64",
             "config": {"version": "v1", "precision": "fp32"}}
    run = make_run(root, run_id, [start, *profiles, *recorded], parallel="ddp", nproc_per_node=2)
    for rank in (0, 1):
        (run.dir / f"profiles/pytorch/rank{rank}").mkdir(parents=True)
        shutil.copy(fixture / f"rank{rank}" / "trace.json.gz", run.dir / f"profiles/pytorch/rank{rank}/trace.json.gz")
    return run

"""PyTorch profiler (torch.profiler), in-process: trace, operator table, device-kernel table.

The schedule records `profile_steps` steps from the first clean one (past the run's warm-up steps
and, in a graphed run, past the graph's warm-up and capture, so that a v4 profile shows replays),
clamped to what the run has, so even a 1-step run yields a trace. start()/step()/stop() are called
explicitly from the trainer's hooks. When recording ends, on_trace_ready writes:
  trace.json.gz       Chrome/Perfetto trace (open in ui.perfetto.dev or chrome://tracing)
  operators.csv       key_averages() rows from their attributes (times in µs; never the text table)
  operators.txt       the same as torch's text table, for humans
  memory_timeline.json.gz  with RunConfig.profile_memory (needs shapes + stacks, hence opt-in)
The kernel table comes from the trace's `cat == "kernel"` events; on CPU there are none, so it
is the operator table by self CPU time (CI and laptops are CPU-only and still get a table).
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

from tinylab.core.errors import UserError
from tinylab.core.profile_files import MEMORY_TIMELINE, OPERATORS_CSV, TRACE
from tinylab.core.window import first_clean_step, profile_schedule
from tinylab.profilers.base import (
    PERFETTO,
    WINDOW,
    Availability,
    CollectResult,
    Config,
    InProcessAdapter,
    InProcessHook,
    Setting,
    Viewer,
    dist_version,
    list_artifacts,
    read_table,
)

OPERATORS_TXT = "operators.txt"
#: How to get the memory timeline (off by default: shapes and stacks slow the profiled steps).
MEMORY_HINT = ("no memory timeline: train with --profile pytorch --profile-memory (or set TINYLAB_PROFILE_MEMORY=1 "
               "where runs start: `TINYLAB_PROFILE_MEMORY=1 tinylab` opens a lab whose pytorch-profiled runs record it)")

#: operators.csv columns: FunctionEventAvg attribute names (times µs, memory bytes).
OPERATOR_COLUMNS = [
    "key", "count", "self_cpu_time_total", "cpu_time_total", "self_device_time_total", "device_time_total",
    "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage",
    "flops", "device_type", "is_user_annotation",
]  # fmt: skip
#: Current attribute -> the deprecated cuda_* name older torch releases only have.
_FALLBACK = {
    "self_device_time_total": "self_cuda_time_total",
    "device_time_total": "cuda_time_total",
    "device_memory_usage": "cuda_memory_usage",
    "self_device_memory_usage": "self_cuda_memory_usage",
}


class PyTorchAdapter(InProcessAdapter):
    name = "pytorch"
    description = "PyTorch profiler: Chrome/Perfetto trace, operator table and device-kernel table"
    fix = "pip install torch (CPU wheels work; GPU kernels need a CUDA or ROCm build)"
    settings = (
        Setting("profile_memory", bool, False, env="TINYLAB_PROFILE_MEMORY",
                help="pytorch: record the memory timeline too (shapes and stacks: slower profiled steps)"),
    )
    table_steps = WINDOW
    traces = True
    viewers = (
        Viewer((MEMORY_TIMELINE,), "memory over a step (no trace: Perfetto cannot read it): the Run screen's Step "
                                   "panel charts it, and this prints its peak:", ("tinylab timeline RUN",)),
        Viewer((".json.gz", ".json"), PERFETTO),
    )

    def available(self) -> Availability:
        if importlib.util.find_spec("torch") is None:
            return Availability(False, "torch is not installed", None)
        return Availability(True, None, dist_version("torch"))

    def make_hook(self, config: Config, out_dir: Path) -> "PyTorchHook":
        if importlib.util.find_spec("torch") is None:
            raise UserError(f"profiler pytorch needs torch: {self.fix}")
        return PyTorchHook(config, out_dir, memory=config.profile_memory)

    def collect(self, out_dir: Path) -> CollectResult:
        source = out_dir / TRACE if (out_dir / TRACE).is_file() else out_dir
        table, fmt, note = read_table(source)
        return CollectResult(list_artifacts(out_dir), table, note, fmt)


class PyTorchHook(InProcessHook):
    name = "pytorch"

    def __init__(self, config: Config, out_dir: Path, memory: bool = False):
        self.out_dir = Path(out_dir)
        self.schedule = profile_schedule(config.num_steps, config.profile_steps, config.warmup_steps,
                                         bool(config.cuda_graph), config.graph_warmup_iters)
        self.clean_from = first_clean_step(config.warmup_steps, bool(config.cuda_graph), config.graph_warmup_iters)
        self.memory = memory
        self.prof: Any = None
        self.device: Any = None
        self.saved = False
        self.notes: list[str] = []

    def on_train_start(self, model: Any, device: Any) -> None:
        from torch.profiler import ProfilerActivity, profile, schedule

        self.device = device
        self.out_dir.mkdir(parents=True, exist_ok=True)
        # The schedule has one cycle (repeat=1), yet torch warns in every GPU run's log that it clears
        # events at the end of each cycle. Its cure, acc_events=True, reuses one profiler session
        # across preparations, and a CPU DDP run with it died once of heap corruption
        # ("malloc(): unsorted double linked list corrupted"): the message is silenced instead.
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events at the end of each cycle",
                                category=UserWarning)
        activities = [ProfilerActivity.CPU]
        if device.type == "cuda":  # ROCm builds expose HIP as the cuda device too
            activities.append(ProfilerActivity.CUDA)
        wait, warmup, active = self.schedule
        self.prof = profile(
            activities=activities,
            schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
            on_trace_ready=self._on_trace_ready,
            record_shapes=self.memory,
            profile_memory=self.memory,
            with_stack=self.memory,
        )
        self.prof.start()

    def on_step_end(self, step: int) -> None:
        if self.prof is not None and not self.saved:
            self.prof.step()

    def _on_trace_ready(self, prof: Any) -> None:
        prof.export_chrome_trace(str(self.out_dir / TRACE))
        averages = prof.key_averages()
        write_operators_csv(averages, self.out_dir / OPERATORS_CSV)
        sort_by = "self_cuda_time_total" if self.device.type == "cuda" else "self_cpu_time_total"
        (self.out_dir / OPERATORS_TXT).write_text(averages.table(sort_by=sort_by, row_limit=60) + "\n", encoding="utf-8")
        if self.memory:
            try:
                with warnings.catch_warnings():  # deprecated (FutureWarning), yet the one timeline for CPU and GPU
                    warnings.simplefilter("ignore", FutureWarning)
                    prof.export_memory_timeline(str(self.out_dir / MEMORY_TIMELINE), device=memory_device(self.device))
            except Exception as exc:  # torch raises assorted types from its memory-profile analysis
                self.notes.append(f"memory timeline failed: {type(exc).__name__}: {exc}")
        self.saved = True

    def on_train_end(self) -> CollectResult:
        if self.prof is not None:
            self.prof.stop()  # a run that ended mid-window still saves what was recorded
        if not self.saved:
            return CollectResult(list_artifacts(self.out_dir), None, "the profiler recorded no step", None)
        wait, warmup, active = self.schedule
        note = f"steps {wait + warmup}..{wait + warmup + active - 1} profiled (wait {wait}, warm-up {warmup})"
        if wait + warmup < self.clean_from:
            note += f"; the run is too short to profile past its warm-up (step {self.clean_from} on)"
        self.notes.insert(0, note)
        on_gpu = self.device is not None and self.device.type == "cuda"
        table, fmt, note = read_table(self.out_dir / (TRACE if on_gpu else OPERATORS_CSV))
        return CollectResult(list_artifacts(self.out_dir), table, "; ".join([*self.notes, *([note] if note else [])]), fmt)


def memory_device(device: Any) -> str:
    """The device as export_memory_timeline names it: it matches the string exactly, and a
    `cuda` without an index matches nothing (an empty timeline on every GPU run); `cuda:0` does."""
    if device.type == "cuda" and device.index is None:
        import torch

        return f"cuda:{torch.cuda.current_device()}"
    return str(device)


def write_operators_csv(averages: Any, path: Path) -> None:
    """key_averages() rows from their attributes, so no value is a rounded, truncated text cell."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(OPERATOR_COLUMNS)
        for avg in averages:
            writer.writerow([_attribute(avg, column) for column in OPERATOR_COLUMNS])


def _attribute(avg: Any, column: str) -> Any:
    if hasattr(type(avg), column) or column in getattr(avg, "__dict__", {}):
        return getattr(avg, column)
    fallback = _FALLBACK.get(column)
    return getattr(avg, fallback, "") if fallback else getattr(avg, column, "")

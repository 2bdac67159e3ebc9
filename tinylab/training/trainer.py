"""The training child process: `python -m tinylab.training.trainer --config RUN_DIR/config.json`.

It builds the model, trains it, and appends events to RUN_DIR/events.jsonl (schema in
tinylab/core/events.py). Human-readable progress goes to stdout. Any failure becomes an `error`
event and a non-zero exit code, so nothing that reads the run has to parse text. How a step is
timed, honestly, is tinylab/training/device.py's.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import platform
import signal
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from tinylab.training import energy, parallel
from tinylab.config import ConfigError, RunConfig
from tinylab.core.eventlog import EVENTS_FILE, EventWriter, clean_float
from tinylab.core.events import ErrorEvent, PassEvent, ProfileEvent, RankEvent, StartEvent, StepEvent, Summary
from tinylab.config.flops import mfu, training_flops_per_step
from tinylab.core.markers import step_range
from tinylab.training.device import device_name, gpu_index, markers_work, pci_bus_id, resolve_device, step_timer
from tinylab.training.packages import describe, foreign_packages
from tinylab.training.parallel import RankInfo, percentile
from tinylab.runs.engines import rank_file
from tinylab.profilers.registry import wrapper_adapter
from tinylab.runs.store import Run, process_start_time, write_json
from tinylab.core.safeio import FULL_DISK


class Trainer:
    def __init__(self, cfg: RunConfig, run_dir: Path, out=sys.stdout, ranks: RankInfo | None = None):
        self.cfg = cfg
        self.run_dir = run_dir
        self.ranks = ranks  # where this process sits in a run of several (None: the only process)
        self.main = ranks is None or ranks.rank == 0  # writes the run's steps and summary, prints progress
        self.out = out if self.main else open(os.devnull, "w")
        self.events = EventWriter(run_dir / EVENTS_FILE)
        self.hooks: list[Any] = []
        self._stop_telemetry = None
        self._load = None  # the machine's load by other processes (LoadSampler), sampled by the first rank
        self.power = energy.PowerLog()  # this rank's power samples and step ends: the summary's energy
        self.counter_pass = None  # set when a profiler runs the program once per counter group
        self.markers = False  # roctx/NVTX ranges around steps and phases (GPU runs only)
        self.engine = None  # DeepSpeed's engine under --parallel zero1/zero2
        self._last_work_ms: float | None = None  # the straggler fault's measure: the last step less its wait

    # ------------------------------------------------------------------ setup
    def setup(self) -> None:
        cfg = self.cfg
        if cfg.deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        import torch

        self.torch = torch
        self.device = resolve_device(torch, cfg.device)
        if self.ranks is not None:
            self._join()
        # Memory figures count what this run allocates: a bench runs many cases in one process,
        # and caches of earlier cases (compiled graphs, graph pools) would otherwise count too.
        self.mem_baseline = torch.cuda.memory_allocated(self.device) if self.device.type == "cuda" else 0
        if cfg.spec.triton and self.device.type == "cpu":
            os.environ["TRITON_INTERPRET"] = "1"  # must precede the first triton import
        cfg.check_device(self.device.type)
        if self.device.type == "cuda":
            cfg.check_fits(torch.cuda.get_device_properties(self.device).total_memory, "the GPU")
        else:
            import psutil

            cfg.check_fits(psutil.virtual_memory().total, "this machine")
        # v4 graphs by default where it can; the stored config records what really ran.
        cfg.cuda_graph = cfg.toggle("cuda_graph") and self.device.type == "cuda"
        if cfg.profilers and self.ranks is None:  # counter-pass tools follow no run of several ranks
            self._claim_counter_pass()
        self.markers = self.device.type == "cuda" and markers_work(torch)
        torch.manual_seed(cfg.seed)
        if cfg.deterministic:
            torch.use_deterministic_algorithms(True)
            torch.backends.cudnn.benchmark = False
        torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
        torch.backends.cudnn.allow_tf32 = cfg.tf32

        foreign = foreign_packages()
        if foreign:
            raise ConfigError(describe(foreign))
        from models import build_model
        from models.common import canonical_init

        model = build_model(cfg)
        model.load_canonical(canonical_init(model.config, cfg.seed, default_init=cfg.fault == "missing-init"))
        self.model = model.to(self.device)
        self.initial = [p.detach().clone() for p in self.model.parameters()]
        if self.ranks is None:
            self.optimizer = self._make_optimizer(self.model)
            forward = self.model
        else:
            wrapped = parallel.wrap(torch, cfg, self.model, self.device, self._make_optimizer)
            forward, self.optimizer, self.engine = wrapped.forward, wrapped.optimizer, wrapped.engine
            if cfg.parallel == "fsdp":  # sharded now: compare each rank's shard with its part of the start
                self.initial = [p.to_local().detach().clone() for p in self.model.parameters()]
        self.forward = (
            torch.compile(forward, mode=cfg.compile_mode, dynamic=False) if cfg.toggle("torch_compile") else forward
        )
        self.scaler = torch.amp.GradScaler(self.device.type) if cfg.precision == "fp16" else None
        self.amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(cfg.precision)

        from tinylab.training.data import Batches, make_corpus

        self.batches = Batches(make_corpus(cfg.vocab_size, cfg.seq_len, cfg.dataset), cfg.batch_size, cfg.seed, self.device,
                               rank=self.ranks.rank if self.ranks else 0)
        self.timer = step_timer(torch, self.device, cfg.fault)
        later_pass = self.counter_pass is not None and self.counter_pass.number > 1
        if cfg.profilers and not later_pass:  # a later counter pass only repeats the kernels
            from tinylab.profilers.registry import inprocess_hooks

            self.hooks = inprocess_hooks(cfg, self.run_dir, self.ranks.rank if self.ranks else None)
        for hook in self.hooks:
            hook.on_train_start(self.model, self.device)
        if cfg.telemetry and self.device.type == "cuda" and not later_pass:
            try:
                from tinylab.profilers.telemetry import start_sampler
            except ImportError:
                start_sampler = None
            if start_sampler is not None:
                events, power, rank = self.events, self.power, self.ranks.rank if self.ranks else None  # each GPU
                self._stop_telemetry = start_sampler(lambda s: events.emit(dataclasses.replace(power.add(s), rank=rank)),
                                                     gpu_index(torch, self.device), pci_bus_id(torch, self.device))
        if cfg.telemetry and self.main and not later_pass:
            from tinylab.profilers.telemetry import LoadSampler

            gpu = (gpu_index(torch, self.device), pci_bus_id(torch, self.device)) if self.device.type == "cuda" else None
            self._load = LoadSampler(self.events.emit, _run_root(self.run_dir), gpu)

    def _join(self) -> None:
        """Record this rank's process (cancel and liveness reach it through the record), then join the group."""
        info = self.ranks
        if self.device.type == "cpu":
            os.environ.setdefault("DS_ACCELERATOR", "cpu")  # DeepSpeed would look for a GPU otherwise
        path = rank_file(self.run_dir, info.rank)
        path.parent.mkdir(exist_ok=True)
        pid = os.getpid()
        write_json(path, {"rank": info.rank, "local_rank": info.local_rank, "world_size": info.world_size,
                          "host": info.host, "pid": pid, "start_time": process_start_time(pid)})
        if self.cfg.world_size != info.world_size:
            raise ConfigError(f"torchrun started {info.world_size} ranks, the run asks for {self.cfg.world_size}")
        self.device = parallel.init(self.torch, info, self.device.type,
                                    graphed=self.cfg.toggle("cuda_graph") and self.device.type == "cuda")

    def _make_optimizer(self, model):
        cfg, torch = self.cfg, self.torch
        opt_kwargs: dict[str, Any] = {"lr": cfg.learning_rate, "weight_decay": cfg.weight_decay}
        if self.device.type == "cuda" and cfg.spec.optimizer != "torch":
            opt_kwargs["fused"] = True  # one kernel for all parameters; v1 keeps torch's default
        if cfg.cuda_graph:
            opt_kwargs["capturable"] = True
        optimizer_class = getattr(model, "optimizer_class", None)  # v4: models.flat_adamw
        if optimizer_class is None:
            return torch.optim.AdamW(model.parameters(), **opt_kwargs)
        return optimizer_class(model, **opt_kwargs)

    def _claim_counter_pass(self) -> None:
        """Under rocprof-compute (or rocprofv3 -i), which run of the program this is: pass 1 is the run's
        record; a later pass trains the warm-up and a few steps into its own events file and only
        announces itself in the run's (tinylab/runs/passes.py)."""
        from tinylab.runs.passes import claim

        arch = None
        if self.device.type == "cuda" and getattr(self.torch.version, "hip", None):
            arch = getattr(self.torch.cuda.get_device_properties(self.device), "gcnArchName", None)
        counter_pass = claim(self.run_dir, self.cfg, arch)
        if counter_pass is None:
            return
        self.counter_pass = counter_pass
        event = PassEvent(counter_pass.number, counter_pass.planned, counter_pass.tool, counter_pass.steps)
        if counter_pass.number > 1:
            with EventWriter(self.run_dir / EVENTS_FILE) as run_events:
                run_events.emit(event)
            self.events.close()
            self.events = EventWriter(self.run_dir / counter_pass.events_file)
            self.cfg.num_steps = counter_pass.steps
        else:
            self.events.emit(event)
        print(f"{counter_pass.label} ({counter_pass.tool} runs the program once per group of hardware counters): "
              f"training {counter_pass.steps} steps" + (f", events in {counter_pass.events_file}"
                                                        if counter_pass.number > 1 else ""),
              file=self.out, flush=True)

    def _range(self, name: str):
        """A named range: record_function for the PyTorch profiler, on a GPU a roctx/NVTX range that
        rocprofv3 --marker-trace, rocprof-sys and Nsight Systems record, and each in-process
        profiler's phase (proton's scope)."""
        stack = contextlib.ExitStack()
        stack.enter_context(self.torch.profiler.record_function(name))
        if self.markers:
            stack.enter_context(self.torch.cuda.nvtx.range(name))
        for hook in self.hooks:
            stack.enter_context(hook.phase(name))
        return stack

    def _step_marker(self, step: int, warmup: bool):
        """The step's roctx/NVTX range (GPU only): it closes after the step's synchronize, so every
        kernel of the step runs inside it."""
        return self.torch.cuda.nvtx.range(step_range(step, warmup)) if self.markers else contextlib.nullcontext()

    # ------------------------------------------------------------------ steps
    def _autocast(self):
        if self.amp_dtype is None:
            import contextlib

            return contextlib.nullcontext()
        return self.torch.autocast(self.device.type, dtype=self.amp_dtype)

    def _eager_step(self, step: int) -> tuple[Any, dict]:
        x, y = self.batches.get(step)
        rf = self._range
        self.timer.start()
        for hook in self.hooks:
            hook.on_step_start(step)
        slept = parallel.straggle(self.ranks, self._last_work_ms) if self.cfg.fault == "straggler" else 0.0
        with rf("forward"), self._autocast():
            loss = self.forward(x, y)
        self.timer.mark("fwd")
        for hook in self.hooks:
            hook.on_forward_end(step)
        with rf("backward"):
            if self.engine is not None:
                self.engine.backward(loss)
            else:
                (self.scaler.scale(loss) if self.scaler else loss).backward()
        self.timer.mark("bwd")
        with rf("optimizer"):
            if self.engine is not None:
                self.engine.step()  # ZeRO's partitioned update; it zeroes the gradients
            else:
                if self.scaler:
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
        self.timer.mark("opt")
        times = self.timer.finish()
        self._last_work_ms = times["step_ms"] - slept
        return loss, times

    def _capture_graph(self, first_step: int) -> int:
        """Warm up on a side stream (real steps), then capture fwd+bwd+opt in one graph."""
        torch = self.torch
        x, y = self.batches.get(first_step)
        self.static_x, self.static_y = x.clone(), y.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        steps_done = 0
        warmup = self.cfg.graph_warmup_iters
        with torch.cuda.stream(side):
            for i in range(warmup):
                step = first_step + i
                if step >= self.cfg.num_steps:
                    break
                with self._step_marker(step, warmup=True):
                    loss, times = self._timed_host_step(step)
                self._record_step(step, loss, times, warmup=True)
                # a loss kept alive keeps its autograd graph, whose AccumulateGrad nodes belong to this
                # stream: torch then warns of a stream mismatch at the next backward and at the capture
                del loss
                steps_done += 1
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            with self._autocast():
                self.static_loss = self.forward(self.static_x, self.static_y)
            self.static_loss.backward()
            self.optimizer.step()
        return steps_done

    def _timed_host_step(self, step: int) -> tuple[Any, dict]:
        torch = self.torch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        x, y = self.batches.get(step)
        with self._autocast():
            loss = self.forward(x, y)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return loss, {"step_ms": (time.perf_counter() - t0) * 1e3, "fwd_ms": None, "bwd_ms": None, "opt_ms": None}

    def _graph_step(self, step: int) -> tuple[Any, dict]:
        x, y = self.batches.get(step)
        self.static_x.copy_(x)
        self.static_y.copy_(y)
        self.timer.start()
        for hook in self.hooks:
            hook.on_step_start(step)
        self.graph.replay()
        self.timer.mark("end")
        return self.static_loss, self.timer.finish()

    # ---------------------------------------------------------------- events
    def _record_step(self, step: int, loss, times: dict, warmup: bool) -> None:
        cfg = self.cfg
        # Read the loss first: it waits for the step's device work, so a profiler's step window
        # (PyTorch's ProfilerStep#N ends in on_step_end) holds all of it (analysis/timeline.py).
        loss_value = float(loss.detach().float().item())
        self.power.step_end(warmup)
        for hook in self.hooks:
            hook.on_step_end(step)
        mem_alloc = mem_peak = None
        if self.device.type == "cuda":
            # max(0, ...): something held before the run may be freed during it
            mem_alloc = max(0, self.torch.cuda.memory_allocated(self.device) - self.mem_baseline) / 2**20
            mem_peak = max(0, self.torch.cuda.max_memory_allocated(self.device) - self.mem_baseline) / 2**20
            self.torch.cuda.reset_peak_memory_stats(self.device)
        step_s = times["step_ms"] / 1e3
        rec = dict(
            step=step,
            loss=clean_float(loss_value),
            **{k: clean_float(v) for k, v in times.items()},
            samples_per_s=cfg.batch_size / step_s,
            tokens_per_s=cfg.batch_size * cfg.seq_len / step_s,
            mem_alloc_mb=mem_alloc,
            mem_peak_mb=mem_peak,
            warmup=warmup,
        )
        if self.main:  # the run's step events are rank 0's; the others' meet it in the summary
            self.events.emit(StepEvent(**rec))
        self.records.append(rec)
        if self._should_print(step):
            mem = f" | peak {mem_peak:7.1f} MB" if mem_peak is not None else ""
            print(
                f"step {step + 1:4d}/{cfg.num_steps} | loss {loss_value:8.4f} | {times['step_ms']:8.2f} ms"
                f" | {rec['samples_per_s']:8.1f} samples/s{mem}{' (warm-up)' if warmup else ''}",
                file=self.out,
                flush=True,
            )
        if not math.isfinite(loss_value):
            raise FloatingPointError(f"loss became {loss_value} at step {step}")

    def _should_print(self, step: int) -> bool:
        n = self.cfg.num_steps
        every = max(1, n // 100)
        return step % every == 0 or step == n - 1

    # ------------------------------------------------------------------- run
    def run(self) -> dict:
        cfg, torch = self.cfg, self.torch
        params = list(self.model.parameters())
        flops = training_flops_per_step(cfg)
        elements = sum(p.numel() for p in params)  # an FSDP2 shard's DTensor counts its whole tensor
        if self.main:
            self.events.emit(StartEvent(
                config=cfg.resolved().to_dict(),
                device=str(self.device),
                device_name=device_name(torch, self.device),
                # the card's capacity: the advisor's memory rule reads the run's peak against it
                device_memory_mb=torch.cuda.get_device_properties(self.device).total_memory / 2**20
                if self.device.type == "cuda" else None,
                torch=torch.__version__,
                triton=_triton_version(),
                python=platform.python_version(),
                pid=os.getpid(),
                params_total=len(params),
                param_elements=elements,
                model_flops_per_step=flops,
                world_size=cfg.world_size,
                parallel=cfg.parallel,
                host=self.ranks.host if self.ranks else None,
            ))
        where = f" | {cfg.world_size} ranks under {cfg.parallel}" if self.ranks else ""
        print(
            f"tinylab {cfg.version} on {device_name(torch, self.device)} ({self.device}) | "
            f"{elements:,} parameters in {len(params)} tensors | "
            f"batch {cfg.batch_size} x seq {cfg.seq_len} | {cfg.precision}{where}",
            file=self.out,
            flush=True,
        )
        self.records: list[dict] = []
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        if self._load is not None:
            self._load.start()
        self.power.begin()
        step = 0
        use_graph = cfg.cuda_graph
        if use_graph:
            step = self._capture_graph(0)
        while step < cfg.num_steps:
            with self._step_marker(step, warmup=step < cfg.warmup_steps):
                loss, times = self._graph_step(step) if use_graph else self._eager_step(step)
            self._record_step(step, loss, times, warmup=step < cfg.warmup_steps)
            step += 1
        return self._finish(params, flops)

    def _finish(self, params, flops: float) -> dict:
        cfg = self.cfg
        rank = self.ranks.rank if self.ranks else None
        profiles = [_profile_fields(self.run_dir, hook, rank) for hook in self.hooks]
        for fields in profiles:
            self.events.emit(ProfileEvent(**fields))
        measured, medians = parallel.measured_steps(self.records)
        step_ms = sorted(r["step_ms"] for r in measured)
        peaks = [r["mem_peak_mb"] for r in self.records if r["mem_peak_mb"] is not None]
        fields: dict[str, Any] = {}
        if self.ranks is None:
            trained = sum(not self.torch.equal(p.detach(), p0) for p, p0 in zip(params, self.initial))
        else:
            trained = parallel.trained_count(self.torch, params, self.initial)
            step_ms, fields, peaks = self._meet_ranks(params, profiles)
            if not self.main:
                return {}
        fields.update(self._load_fields())
        fields.setdefault("energy_j_per_sample", energy.per_sample([self.power.timed()], cfg.batch_size))
        med = statistics.median(step_ms)
        samples = cfg.batch_size * cfg.world_size
        summary = Summary(
            samples_per_s=samples / (med / 1e3),
            tokens_per_s=samples * cfg.seq_len / (med / 1e3),
            step_ms_median=med,
            step_ms_p10=percentile(step_ms, 10),
            step_ms_p90=percentile(step_ms, 90),
            **medians,
            peak_mem_mb=max(peaks) if peaks else None,
            initial_loss=self.records[0]["loss"],
            final_loss=self.records[-1]["loss"],
            params_trained=trained,
            params_total=len(params),
            model_flops_per_step=flops,
            mfu=mfu(cfg, med, device_name(self.torch, self.device)),
            steps=len(self.records),
            measured_steps=len(measured),
            **fields,
        )
        record = self.events.emit(summary)
        print("\n".join(summary.lines(profiled=bool(cfg.profilers))), file=self.out, flush=True)
        return record

    def _load_fields(self) -> dict[str, Any]:
        """The summary's account of other processes' load (Summary.busy reads it): their mean CPU
        use, the CPUs this run's threads left free, the share of samples another process used the GPU."""
        if self._load is None:
            return {}
        samples = self._load.stop()
        if not samples:
            return {}
        ranks_here = self.cfg.nproc_per_node if self.ranks is not None else 1
        threads = (self.torch.get_num_threads() if self.device.type == "cpu" else 1) * ranks_here
        gpu = [s["gpu_others"] for s in samples if s["gpu_others"] is not None]
        return {"others_cpu_cores": statistics.mean(s["others_cores"] for s in samples),
                "spare_cpu_cores": float(max(0, self._load.cpus - threads)),
                "others_gpu_share": sum(n > 0 for n in gpu) / len(gpu) if gpu else None}

    def _meet_ranks(self, params, profiles: list[dict]) -> tuple[list[float], dict[str, Any], list[float]]:
        """Every rank sends rank 0 its medians, spread, peak and a digest of its weights; rank 0 writes
        one `rank` event each and returns the run's step times (each step as long as its slowest
        rank), the summary's multi-rank fields and the ranks' peaks."""
        digest = parallel.weights_digest(parallel.full_tensors(params))
        mine = parallel.rank_stats(self.ranks, self.device, self.records, digest, os.getpid())
        mine["energy"] = self.power.timed()
        comm = _communication(self.run_dir, profiles)
        if comm is not None:
            mine["comm_ms"], mine["comm_hidden"] = comm
        stats = parallel.gather(mine)
        if not self.main:
            return [], {}, []
        for s in stats:
            self.events.emit(RankEvent(**{k: v for k, v in s.items() if k not in ("step_ms", "energy")}))
        comms = [s for s in stats if s.get("comm_ms") is not None]
        fields = {
            "world_size": self.cfg.world_size,
            "energy_j_per_sample": energy.per_sample([s["energy"] for s in stats], self.cfg.batch_size),
            "slowest_rank": parallel.slowest(stats),
            "comm_ms": statistics.mean(s["comm_ms"] for s in comms) if comms else None,
            "comm_hidden": statistics.mean(s["comm_hidden"] for s in comms if s["comm_hidden"] is not None)
            if any(s["comm_hidden"] is not None for s in comms) else None,
        }
        peaks = [s["peak_mem_mb"] for s in stats if s["peak_mem_mb"] is not None]
        return sorted(parallel.global_step_ms(stats)), fields, peaks

    def close(self) -> None:
        if self._stop_telemetry is not None:
            self._stop_telemetry()
        if self._load is not None:
            self._load.stop()
        self.events.close()
        if self.ranks is not None:
            # the engine's objects (DDP's reducer, DeepSpeed's engine) go before their process group
            self.forward = self.optimizer = self.engine = self.model = None
            parallel.finish()


def _run_root(run_dir: Path) -> int:
    """The process whose tree is the run: its supervisor (process.json) when that is this process's
    ancestor, else this process (a run trained in-process, by the tests or the bench)."""
    import psutil

    pid = (Run(run_dir).process or {}).get("pid")
    try:
        if isinstance(pid, int) and pid in {p.pid for p in psutil.Process().parents()}:
            return pid
    except psutil.Error:
        pass
    return os.getpid()


def _profile_fields(run_dir: Path, hook, rank: int | None) -> dict:
    from tinylab.profilers.base import write_kernel_table

    return write_kernel_table(run_dir, hook.name, hook.on_train_end(), rank)


def _communication(run_dir: Path, profiles: list[dict]) -> tuple[float, float | None] | None:
    """This rank's time in collectives a step and the share of it hidden under compute, from its
    PyTorch profiler trace (None without one, or when it recorded no collective)."""
    from tinylab.core.profile_files import TRACE

    trace = next((p["artifacts"][TRACE] for p in profiles if TRACE in p["artifacts"]), None)  # the PyTorch profiler's
    if trace is None:
        return None
    from tinylab.analysis.timeline import communication

    return communication(run_dir / trace)


def _triton_version() -> str | None:
    try:
        import triton

        return triton.__version__
    except ImportError:
        return None


def run_training(cfg: RunConfig, run_dir: Path, out=sys.stdout) -> dict:
    """Train in this process (tests and the bench use it); raises on failure."""
    cfg.validate()
    run_dir.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(cfg, run_dir, out, parallel.rank_info(cfg))
    try:
        trainer.setup()
        return trainer.run()
    finally:
        trainer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinylab.training.trainer", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="path to the run's config.json")
    args = parser.parse_args(argv)
    config_path = Path(args.config)
    run_dir = config_path.parent
    # SIGTERM (a cancel's second signal) becomes an exception, so the error event is written.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt("SIGTERM")))
    try:
        cfg = RunConfig.from_json_file(str(config_path))
        run_training(cfg, run_dir)
        if cfg.parallel is not None and wrapper_adapter(cfg) is None:
            # The run is recorded and the process group is gone: leave without the interpreter's
            # teardown, where a rank of a gloo group once aborted ("terminate called without an
            # active exception") after writing its summary, which failed a finished run. Not
            # under a profiler that wraps the process: its output is written at the process's exit.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        return 0
    except BaseException as exc:  # every failure is recorded; the exit code says which kind
        code = 130 if isinstance(exc, KeyboardInterrupt) else (2 if isinstance(exc, ConfigError) else 1)
        if isinstance(exc, KeyboardInterrupt):
            # A signal (a cancel, Ctrl-C): its traceback says where the step was, not what went wrong.
            message, where = f"interrupted by {str(exc) or 'SIGINT'}", ""
        elif isinstance(exc, OSError) and exc.errno in FULL_DISK:
            message, where = f"the disk is full ({exc.filename or run_dir}): free some space and run it again", ""
        else:
            message, where = str(exc) or type(exc).__name__, "".join(traceback.format_exception(exc)[-8:])
        rank = int(os.environ["RANK"]) if os.environ.get("RANK", "").isdigit() else None
        try:
            with EventWriter(run_dir / EVENTS_FILE) as writer:
                writer.emit(ErrorEvent(type(exc).__name__, message, where, rank))
            who = f"rank {rank}: " if rank is not None else ""
            print(f"{who}error: {type(exc).__name__}: {message}", file=sys.stderr, flush=True)
        except OSError:  # nowhere left to say it: the supervisor's exit event still records the failure
            pass
        return code


if __name__ == "__main__":
    raise SystemExit(main())

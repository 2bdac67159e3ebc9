"""DeepSpeed FLOPS profiler, in-process: FLOPs, MACs, params and latency of ONE forward pass.

The profiler is started before the forward of the first measured step (the first step after
warm-up) and stopped as soon as the loss is computed, so the numbers describe exactly one
forward pass, not totals accumulated over a run. Outputs in <run>/profiles/deepspeed/:
  flops.json         totals, achieved TFLOP/s and MFU against the device peak, per-module rows
  flops_profile.txt  DeepSpeed's own report (print_model_profile)
  modules.csv        the per-module breakdown as a table
DeepSpeed counts FLOPs by patching torch.nn.functional and tensor methods: work inside Triton
kernels (v3/v4 RMSNorm, RoPE, SwiGLU, attention) and backward passes are not counted, and a
CUDA-graph replay runs no module hooks at all. The note in flops.json says so.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from tinylab.core.errors import UserError
from tinylab.core.peaks import device_peak_tflops
from tinylab.core.versions import TABLE
from tinylab.profilers.base import (
    Availability,
    CollectResult,
    Config,
    InProcessAdapter,
    InProcessHook,
    list_artifacts,
)

FLOPS_JSON = "flops.json"
PROFILE_TXT = "flops_profile.txt"
MODULES_CSV = "modules.csv"
BASE_NOTE = "forward only; work inside Triton kernels is not counted"
_IMPORT_CHECK = "import deepspeed, deepspeed.profiling.flops_profiler; print(deepspeed.__version__)"


class DeepSpeedAdapter(InProcessAdapter):
    name = "deepspeed"
    description = "DeepSpeed FLOPS profiler: FLOPs, MACs, params, latency and MFU of one forward pass"
    fix = (
        "pip install deepspeed (on a CPU-only or ROCm host: DS_ACCELERATOR=cpu or CUDA_HOME=$ROCM_PATH "
        "pip install --no-build-isolation deepspeed)"
    )

    @classmethod
    def graph_blocked(cls, config: Config) -> str | None:
        return "the DeepSpeed FLOPS profiler hooks an eager forward, which a graph replay skips: add --no-cuda-graph"

    def available(self) -> Availability:
        """Imports deepspeed in a child: importing it can fail (no CUDA_HOME), prints to stdout,
        and costs seconds; doctor must report that truthfully without inheriting any of it."""
        if importlib.util.find_spec("deepspeed") is None:
            return Availability(False, "deepspeed is not installed", None)
        import subprocess

        from tinylab.core import childproc

        try:  # -P and a folder of its own: a deepspeed.py or torch.py where tinylab runs is never imported
            with childproc.neutral_cwd() as cwd:
                proc = childproc.run_bounded(childproc.python("-c", _IMPORT_CHECK), 180, cwd=cwd)
        except subprocess.TimeoutExpired:
            return Availability(False, "importing deepspeed took more than 180 s", None)
        lines = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
        if proc.returncode != 0 or not lines:
            errors = [line for line in proc.stderr.splitlines() if line.strip()]
            return Availability(False, f"import deepspeed failed: {errors[-1] if errors else proc.returncode}", None)
        return Availability(True, None, lines[-1])

    def make_hook(self, config: Config, out_dir: Path) -> "DeepSpeedHook":
        try:
            from deepspeed.profiling.flops_profiler import FlopsProfiler
        except Exception as exc:  # ImportError, or DeepSpeed's MissingCUDAException at import time
            raise UserError(f"profiler deepspeed cannot load: {type(exc).__name__}: {exc}; fix: {self.fix}") from None
        return DeepSpeedHook(config, out_dir, FlopsProfiler)

    def collect(self, out_dir: Path) -> CollectResult:
        note = None
        path = out_dir / FLOPS_JSON
        if path.is_file():
            from tinylab.core.safeio import read_json

            try:
                note = read_json(path).get("note")
            except (OSError, UserError, AttributeError):
                note = f"{FLOPS_JSON} is not valid JSON"
        return CollectResult(list_artifacts(out_dir), None, note, "deepspeed-flops")


class DeepSpeedHook(InProcessHook):
    name = "deepspeed"

    def __init__(self, config: Config, out_dir: Path, profiler_class: Any):
        self.config = config
        self.out_dir = Path(out_dir)
        self.profiler_class = profiler_class
        self.profile_step = min(config.warmup_steps, config.num_steps - 1)
        self.model: Any = None
        self.device: Any = None
        self.prof: Any = None
        self.result: dict[str, Any] | None = None

    def on_train_start(self, model: Any, device: Any) -> None:
        self.model, self.device = model, device
        self.out_dir.mkdir(parents=True, exist_ok=True)

    def on_step_start(self, step: int) -> None:
        if step == self.profile_step and self.result is None:
            self.prof = self.profiler_class(self.model)
            self.prof.start_profile()

    def on_forward_end(self, step: int) -> None:
        if self.prof is not None and step == self.profile_step:
            self._finish(step, stopped_at="forward end")

    def on_step_end(self, step: int) -> None:
        if self.prof is not None:  # CUDA-graph mode reports no forward end
            self._finish(step, stopped_at="step end")

    def _finish(self, step: int, stopped_at: str) -> None:
        prof, self.prof = self.prof, None
        prof.stop_profile()  # restore torch functions first: backward must run unpatched
        try:
            flops = int(prof.get_total_flops())
            macs = int(prof.get_total_macs())
            params = int(prof.get_total_params())
            latency = float(prof.get_total_duration())
            modules = module_rows(self.model)
            prof.print_model_profile(
                profile_step=step, module_depth=-1, top_modules=3, detailed=True, output_file=str(self.out_dir / PROFILE_TXT)
            )
        finally:
            prof.end_profile()
        self.result = self._summary(step, flops, macs, params, latency, modules, stopped_at)

    def _summary(self, step, flops, macs, params, latency, modules, stopped_at) -> dict[str, Any]:
        cfg = self.config
        device_name = _device_name(self.device)
        achieved = flops / latency / 1e12 if latency > 0 else None
        peak = device_peak_tflops(device_name, cfg.precision, cfg.tf32) if self.device.type == "cuda" else None
        notes = [BASE_NOTE]
        if TABLE[cfg.version].triton:
            notes.append(f"{cfg.version} runs RMSNorm/RoPE/SwiGLU/attention in Triton kernels: their FLOPs are missing")
        if flops == 0:
            notes.append("no forward ran under the profiler's hooks (a CUDA-graph replay bypasses them)")
        elif stopped_at != "forward end":
            notes.append(f"stopped at the {stopped_at}")
        if peak is None:
            notes.append(f"no peak rate known for {device_name!r}: MFU is null")
        return {
            "step": step,
            "flops": flops,
            "macs": macs,
            "params": params,
            "fwd_latency_s": latency,
            "achieved_tflops": achieved,
            "peak_tflops": peak,
            "mfu": achieved / peak if achieved is not None and peak else None,
            "device": device_name,
            "precision": cfg.precision,
            "note": "; ".join(notes),
            "modules": modules,
        }

    def on_train_end(self) -> CollectResult:
        if self.prof is not None:  # the run ended inside the profiled step
            self._finish(self.profile_step, stopped_at="train end")
        if self.result is None:
            return CollectResult(list_artifacts(self.out_dir), None, f"step {self.profile_step} never ran", "deepspeed-flops")
        (self.out_dir / FLOPS_JSON).write_text(json.dumps(self.result, indent=2) + "\n", encoding="utf-8")
        import csv

        with open(self.out_dir / MODULES_CSV, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=["module", "type", "depth", "params", "macs", "flops", "latency_s"])
            writer.writeheader()
            writer.writerows(self.result["modules"])
        r = self.result
        summary = f"{r['flops'] / 1e9:.3g} GFLOP forward in {r['fwd_latency_s'] * 1e3:.3g} ms"
        if r["achieved_tflops"] is not None:
            summary += f" = {r['achieved_tflops']:.3g} TFLOP/s"
        if r["mfu"] is not None:
            summary += f", MFU {100 * r['mfu']:.1f}% of {r['peak_tflops']:g}"
        return CollectResult(list_artifacts(self.out_dir), None, f"{summary}; {r['note']}", "deepspeed-flops")


def module_rows(model: Any) -> list[dict[str, Any]]:
    """Per-module params/MACs/FLOPs/latency from the attributes DeepSpeed's hooks accumulate."""
    from deepspeed.profiling.flops_profiler.profiler import (
        get_module_duration,
        get_module_flops,
        get_module_macs,
    )

    rows = []
    for name, module in model.named_modules():
        rows.append(
            {
                "module": name or type(module).__name__,
                "type": type(module).__name__,
                "depth": 0 if not name else name.count(".") + 1,
                "params": int(getattr(module, "__params__", 0)),
                "macs": int(get_module_macs(module)),
                "flops": int(get_module_flops(module)),
                "latency_s": float(get_module_duration(module)),
            }
        )
    return rows


def _device_name(device: Any) -> str:
    if device is not None and device.type == "cuda":
        import torch

        return torch.cuda.get_device_name(device)
    return "cpu"

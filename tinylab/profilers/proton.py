"""Triton's own profiler, proton (`triton.profiler`, in the Triton wheel), in-process.

The hook starts a proton session when training starts and records the same steps as the PyTorch
profiler's active window (tinylab.core.window.profile_schedule), so the two tables compare step for
step. Kernels are attributed to the scopes the trainer opens around a step's phases (forward,
backward, optimizer; InProcessHook.phase) and to their own names; each Triton kernel of v3 and v4
adds the FLOPs and bytes of its launch metadata (kernels.work), from which the
roofline places it with proton's own counts. Outputs in <run>/profiles/proton/:
  proton.hatchet        proton's tree (JSON): `proton-viewer -m time/ms,tflop/s,gbyte/s proton.hatchet`
  proton-session.json   which backend measured and which Triton (the tree does not say)

Backends (--proton-backend): `auto` is proton's own choice, which depends on the vendor and the
Triton release: CUPTI on NVIDIA; on AMD roctracer up to Triton 3.7, rocprofiler-sdk from 3.8
(roctracer where that library is missing). The session file records the one that measured.
`instrumentation` times the regions a kernel marks (kernels._utils.enter_region) with the GPU's
cycle counter instead, on both vendors. Limits of proton's, refused before a run starts: on AMD
its tracing backends see no kernel inside a HIP graph and do not honour HIP_VISIBLE_DEVICES or
CUDA_VISIBLE_DEVICES (ROCR_VISIBLE_DEVICES works); a tracing backend cannot share the vendor's
tracing interface with another tool (an adapter that declares `traces`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any, ContextManager

from tinylab.core.errors import UserError
from tinylab.core.profile_files import HATCHET, SESSION
from tinylab.core.window import first_clean_step, profile_schedule
from tinylab.profilers import base
from tinylab.profilers.base import (
    WINDOW,
    Availability,
    CollectResult,
    Config,
    InProcessAdapter,
    InProcessHook,
    Setting,
    dist_version,
    list_artifacts,
    read_table,
)

#: Distributions that ship Triton (and with it proton), first found wins.
TRITON_DISTS = ("triton", "pytorch-triton-rocm", "pytorch-triton")
#: Variables proton's AMD tracing backends refuse (they select devices below HIP): its own check.
AMD_DEVICE_VARIABLES = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
#: proton's instrumentation mode: its default (cycles, per warp), records kept in global memory.
INSTRUMENT_MODE = "default:buffer_type=global"
#: How proton measures: `auto`, kernel times through the tracing backend proton picks for the GPU
#: and Triton release; `instrumentation`, cycles of the regions inside kernels that the kernels mark.
BACKENDS = ("auto", "instrumentation")
AMD_GRAPH = ("proton's AMD tracing backends see no kernel inside a HIP graph replay: add --no-cuda-graph "
             "(or --proton-backend instrumentation)")


def triton_version() -> str | None:
    return dist_version(*TRITON_DISTS)


def _release(version: str | None) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def amd_tracer(version: str | None) -> str:
    """The tracing backend proton picks on AMD: roctracer up to Triton 3.7, rocprofiler-sdk from
    3.8 (where that library is missing, 3.8 falls back to roctracer)."""
    release = _release(version)
    return "rocprofiler" if release is not None and release >= (3, 8) else "roctracer"


def backends(version: str | None, vendors: set[str]) -> list[str]:
    """proton's backends for this Triton on these GPU vendors (all vendors when none is visible),
    the tracing one that `auto` picks first."""
    listed = []
    if "nvidia" in vendors or not vendors:
        listed.append("cupti (auto on NVIDIA: kernel times)")
    if "amd" in vendors or not vendors:
        tracer = amd_tracer(version)
        why = "from triton 3.8; roctracer where rocprofiler-sdk is missing" if tracer == "rocprofiler" \
            else "up to triton 3.7"
        listed.append(f"{tracer} (auto on AMD, {why}: kernel times)")
    listed.append("instrumentation (--proton-backend instrumentation: cycles of regions inside kernels)")
    return listed


class ProtonAdapter(InProcessAdapter):
    name = "proton"
    description = ("Triton's profiler: kernel times by phase and kernel, TFLOP/s and GB/s of each Triton kernel "
                   "from its launch metadata; regions inside kernels with --proton-backend instrumentation")
    fix = "proton comes with triton (3.6 or newer: pip install triton) and needs an NVIDIA or AMD GPU"
    settings = (
        Setting("proton_backend", str, "auto", choices=BACKENDS,
                invalid="unknown proton backend {value!r}: choose one of {choices}",
                needs="{flag} {value} says how proton measures: add --profile proton",
                help="how --profile proton measures: auto (kernel times through the backend proton picks for "
                     "the GPU) or instrumentation (cycles of the regions inside kernels; default %(default)s)"),
    )
    table_steps = WINDOW

    @classmethod
    def config_problem(cls, config: Config) -> str | None:
        """A tracing backend and another tool that traces would share the vendor's one interface."""
        tracing = {a.name for a in config.adapters if a.traces}
        clash = [p for p in config.profilers if p in tracing]
        if clash and config.proton_backend == "auto":
            return (f"--profile proton and --profile {clash[0]} would both trace the GPU's kernels through the "
                    "vendor's one tracing interface (CUPTI on NVIDIA, ROCm's tracer on AMD): profile them in two "
                    "runs, or add --proton-backend instrumentation (it traces nothing)")
        return None

    @classmethod
    def graph_blocked(cls, config: Config) -> str | None:
        if config.proton_backend == "instrumentation":
            return ("proton's instrumentation reads each launch's record when Triton's launcher returns, which a "
                    "graph replay skips: add --no-cuda-graph")
        return None

    def available(self) -> Availability:
        spec = importlib.util.find_spec("triton")
        if spec is None or spec.origin is None:
            return Availability(False, "triton is not installed", None)
        version = triton_version()
        if not (Path(spec.origin).parent / "profiler" / "__init__.py").is_file():
            return Availability(False, f"triton {version or '?'} was built without proton (no triton.profiler)",
                                version)
        if not base.gpu_vendors():
            return Availability(False, f"triton {version or '?'} found, but no GPU is visible: proton times kernels "
                                       "through the GPU vendor's tracing interface", version)
        return Availability(True, None, version)

    def backends(self) -> list[str]:
        return backends(triton_version(), base.gpu_vendors())

    def check(self, config: Config) -> None:
        """What proton cannot do on this machine's AMD GPUs (the vendor-free limits are config_problem's)."""
        if config.proton_backend != "auto" or "amd" not in base.gpu_vendors():
            return
        if config.toggle("cuda_graph"):
            raise UserError(f"--profile proton on an AMD GPU: {AMD_GRAPH}")
        for variable in AMD_DEVICE_VARIABLES:
            if variable in os.environ:
                raise UserError(f"--profile proton on an AMD GPU: proton refuses {variable} (set here to "
                                f"{os.environ[variable][:40]!r}): unset it and choose GPUs with ROCR_VISIBLE_DEVICES")

    def make_hook(self, config: Config, out_dir: Path) -> "ProtonHook":
        if importlib.util.find_spec("triton") is None:
            raise UserError(f"profiler proton needs triton: {self.fix}")
        return ProtonHook(config, out_dir)

    def collect(self, out_dir: Path) -> CollectResult:
        table, fmt, note = read_table(out_dir / HATCHET)
        return CollectResult(list_artifacts(out_dir), table, note, fmt)


class ProtonHook(InProcessHook):
    name = "proton"

    def __init__(self, config: Config, out_dir: Path):
        self.config = config
        self.out_dir = Path(out_dir)
        wait, warmup, active = profile_schedule(config.num_steps, config.profile_steps, config.warmup_steps,
                                                bool(config.cuda_graph), config.graph_warmup_iters)
        self.first, self.last = wait + warmup, wait + warmup + active - 1  # the PyTorch profiler's active steps
        self.clean_from = first_clean_step(config.warmup_steps, bool(config.cuda_graph), config.graph_warmup_iters)
        self.proton: Any = None
        self.session: int | None = None
        self.backend: str | None = None
        self.active = False
        self.finalized = False
        self.recorded = 0

    def on_train_start(self, model: Any, device: Any) -> None:
        if device.type != "cuda":
            raise UserError("proton profiles GPU kernels: this run is on the CPU (--device cuda)")
        import torch
        import triton.profiler as proton

        instrument = self.config.proton_backend == "instrumentation"
        if getattr(torch.version, "hip", None) and not instrument:  # the pre-launch check, on the device itself
            if self.config.cuda_graph:
                raise UserError(f"--profile proton on an AMD GPU: {AMD_GRAPH}")
            found = [v for v in AMD_DEVICE_VARIABLES if v in os.environ]
            if found:
                raise UserError(f"--profile proton on an AMD GPU: proton refuses {found[0]}: unset it and choose "
                                "GPUs with ROCR_VISIBLE_DEVICES")
        self.proton = proton
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if instrument:
            import triton.profiler.language as pl

            pl.enable_semantic("triton")  # proton instruments Gluon kernels only, unless asked
            self.backend = "instrumentation"  # its session starts at the first recorded step
        else:
            self.backend = _tracing_backend()
            self._start()
            proton.deactivate(self.session)  # until the first recorded step
        session = {"tool": "proton", "backend": self.backend, "asked": self.config.proton_backend,
                   "triton": triton_version(), "steps": [self.first, self.last], "device": torch.cuda.get_device_name(device)}
        (self.out_dir / SESSION).write_text(json.dumps(session, indent=2) + "\n", encoding="utf-8")

    def _start(self) -> None:
        """A proton session writing the tree here (proton adds ".hatchet" to the name). The launch
        hook ("triton") records each Triton kernel's launch metadata; the instrumentation backend
        measures cycles, not FLOPs, and keeps its records in global memory, leaving the kernels'
        shared memory as it is."""
        instrument = self.backend == "instrumentation"
        self.session = self.proton.start(str(self.out_dir / Path(HATCHET).stem), context="shadow", data="tree",
                                         backend=self.backend, hook=None if instrument else "triton",
                                         mode=INSTRUMENT_MODE if instrument else None)

    def on_step_start(self, step: int) -> None:
        if self.proton is not None and step == self.first and not self.active and not self.finalized:
            if self.session is None:
                self._start()
            else:
                self.proton.activate(self.session)
            self.active = True

    def phase(self, name: str) -> ContextManager[Any]:
        """The phase's scope under a tracing backend (the instrumentation's view is regions)."""
        if self.active and self.backend != "instrumentation":
            return self.proton.scope(name)
        return contextlib.nullcontext()

    def on_step_end(self, step: int) -> None:
        if self.active:  # after the loss was read: every kernel of the step has run
            self.recorded += 1
            if step >= self.last:
                self._stop()

    def _stop(self) -> None:
        """Recording ends: a tracing session waits, deactivated, for the run's end; the
        instrumentation session is finalized at once, so that no later launch runs instrumented."""
        self.active = False
        if self.backend == "instrumentation":
            self.proton.finalize(self.session)
            self.finalized = True
        else:
            self.proton.deactivate(self.session)

    def on_train_end(self) -> CollectResult:
        if self.proton is None or self.session is None:
            return CollectResult(list_artifacts(self.out_dir), None, "proton recorded no step", None)
        if self.active:
            self._stop()
        if not self.finalized:
            self.proton.finalize(self.session)
            self.finalized = True
        note = None  # the table's note says which steps (from the session file)
        if self.first < self.clean_from:
            note = f"the run is too short to profile past its warm-up (step {self.clean_from} on)"
        if self.recorded < self.last - self.first + 1:
            note = "; ".join(filter(None, [note, f"the run ended after {self.recorded} of the planned steps"]))
        table, fmt, table_note = read_table(self.out_dir / HATCHET)
        notes = "; ".join(n for n in (note, table_note) if n)
        return CollectResult(list_artifacts(self.out_dir), table, notes, fmt, steps=self.recorded or None)


def _tracing_backend() -> str:
    """The backend proton's `auto` picks on this device (its own choice, asked of it: 3.8 changed
    what it picks on AMD), named explicitly so that the session file can say which one measured."""
    try:
        from triton.profiler.profile import _select_backend

        return str(_select_backend())
    except (ImportError, AttributeError, ValueError, RuntimeError) as exc:
        raise UserError(f"proton found no kernel-tracing backend for this GPU: {exc}") from None

"""What a training step launches: every Triton kernel of v3 and v4, with the arguments and launch
options the launch code in kernels/ gives it on a target GPU.

The step is not described a second time here. `plan_scenario` builds the real model
(models.build_model) and runs its forward, backward and optimizer step on fake tensors (torch's
FakeTensorMode: shapes, strides and dtypes, no data, no FLOPs) inside kernels._utils.planning,
which records each launch with the configuration the launch code chooses for the target's
architecture and CU/SM count, through the same functions a GPU run calls. What the anatomy
compiles is therefore what would run there; a changed model or launch rule shows up by itself.

A step depends on toggles and faults as well as on the model config, so a config is planned
as several scenarios (`scenarios`): each version with its defaults, and each variation that
launches different kernels or arguments (the other attention path of v4, FFN recomputation,
deterministic algorithms, the two faults that change a kernel's input). Launches are then told
apart by what Triton compiles differently (`Launch.key`): kernel, dtypes, alignment, the integer
arguments' specialization (1, multiple of 16, other), constexprs and launch options.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from tinylab.anatomy.targets import Target
from tinylab.config import RunConfig
from tinylab.core.versions import TABLE, first

# Bump when a plan's or launch's stored form changes (part of every cache key).
FORMAT = 1

# Layers planned: every layer after the first launches exactly what the second does (same
# shapes, strides and dtypes; tested), so two give every distinct launch at a fraction of the
# cost of the model's full depth.
PLANNED_LAYERS = 2

# The model configs whose launches CI keeps compiling for the targets (tests/anatomy): the
# workshop's model at each precision (strict fp32, TF32, bf16, fp16), and the sequence lengths
# and head size at which the flash-attention config tables change blocks (S <= 256, <= 1024,
# longer; head dim <= 64 and 128). Values override RunConfig's defaults.
SHIPPED_CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "default-bf16": {"precision": "bf16"},
    "default-fp16": {"precision": "fp16"},
    "default-tf32": {"tf32": True},
    "seq1024-fp32": {"seq_len": 1024},
    "seq1024-bf16": {"seq_len": 1024, "precision": "bf16"},
    "seq2048-bf16": {"seq_len": 2048, "precision": "bf16"},
    "head128-fp32": {"hidden_dim": 1024},
    "head128-bf16": {"hidden_dim": 1024, "precision": "bf16"},
}

# Faults that change what a kernel is given (the others change init, timing or autograd only).
KERNEL_FAULTS = ("naive-triton-swiglu", "non-contiguous")

# Launch options a sweep may vary besides a kernel's constexprs, with Triton's defaults for a
# launch that does not pass them (triton/backends/nvidia/compiler.py CUDAOptions,
# triton/backends/amd/compiler.py HIPOptions); AMD's own options mean nothing to NVIDIA's backend.
OPTION_DEFAULTS = {
    "nvidia": {"num_warps": 4, "num_stages": 3},
    "amd": {"num_warps": 4, "num_stages": 2, "waves_per_eu": 0, "kpack": 1, "matrix_instr_nonkdim": 0},
}


@dataclass(frozen=True)
class TensorArg:
    """What Triton's launcher reads of a tensor argument: its dtype, whether its address is a
    multiple of 16 bytes (Triton specializes on it: wider loads) and whether its storage is
    under 2 GiB (on AMD it may then be addressed with buffer instructions)."""

    dtype: str
    aligned: bool = True
    small: bool = True

    def to_json(self) -> dict:
        return {"tensor": self.dtype, "aligned": self.aligned, "small": self.small}


def canonical(value: Any) -> Any:
    """A launch argument reduced to what Triton specializes on (see runtime/jit.py's binder):
    an int by whether it is 1 (a constant), a multiple of 16 (divisibility) and its width; a
    float not at all; tensors by TensorArg. Launches that differ only in values Triton does
    not look at compile to the same code and must compare equal."""
    import torch

    if isinstance(value, torch.Tensor):
        return TensorArg(
            str(value.dtype).removeprefix("torch."),
            aligned=value.storage_offset() * value.element_size() % 16 == 0,
            small=value.untyped_storage().nbytes() <= 2**31 - 1,
        )
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if value == 1:
            return 1
        wide = not -(2**31) <= value < 2**31
        base = 2**32 if wide else 0
        return base + (16 if value % 16 == 0 else 17)
    if isinstance(value, float):
        return 0.5
    raise TypeError(f"unexpected launch argument of type {type(value).__name__}")


def describe(value: Any) -> str:
    """A canonical argument (not a constexpr) as a reader wants it: "bf16", "fp32 unaligned";
    an int as "1", "×16" (a multiple of 16) or "n" (any other)."""
    if isinstance(value, TensorArg):
        return value.dtype.replace("bfloat", "bf").replace("float", "fp") + ("" if value.aligned else " unaligned")
    if isinstance(value, int) and not isinstance(value, bool):
        return {1: "1", 16: "×16", 17: "n"}[value % 2**32]
    return str(value)


def _constexpr(param: inspect.Parameter) -> bool:
    """Whether a kernel parameter is a ``tl.constexpr`` (as Triton's KernelParam decides)."""
    return "constexpr" in str(param.annotation)


def _from_json(value: Any) -> Any:
    if isinstance(value, dict) and "tensor" in value:
        return TensorArg(value["tensor"], value["aligned"], value["small"])
    return value


@dataclass(frozen=True)
class Launch:
    """One distinct launch: the kernel ("module:name"), every parameter by name (TensorArgs,
    canonical scalars, constexprs) followed by the launch options (num_warps, ...), the names
    of the kernel's constexpr parameters, the kernel's source hash, and the grid of its first
    occurrence."""

    kernel: str
    params: tuple[tuple[str, Any], ...]
    constexprs: tuple[str, ...]
    source: str
    grid: tuple[int, ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        """The kernel's short name: ``_attn_fwd_kernel`` -> ``attn_fwd``."""
        return self.kernel.split(":")[1].strip("_").removesuffix("_kernel")

    @property
    def config(self) -> dict[str, Any]:
        """The launch configuration: constexprs and launch options (no tensors, no scalars)."""
        options = {k for defaults in OPTION_DEFAULTS.values() for k in defaults}
        return {k: v for k, v in self.params if k in self.constexprs or k in options}

    def option(self, name: str, vendor: str) -> Any:
        """A launch option as the launch sets it, or Triton's default for ``vendor``."""
        return dict(self.params).get(name, OPTION_DEFAULTS[vendor].get(name))

    @property
    def num_warps(self) -> int:
        return self.option("num_warps", "nvidia")  # one default for both backends

    def key(self) -> str:
        """Identity of what Triton compiles (with the target): stable across processes."""
        return json.dumps([self.kernel, self.source, self.to_json()["params"]])

    def replace(self, **changes: Any) -> "Launch":
        """This launch with some parameters or options changed (a sweep's point)."""
        params = dict(self.params)
        params.update(changes)
        return dataclasses.replace(self, params=tuple(params.items()))

    def to_json(self) -> dict:
        return {
            "kernel": self.kernel,
            "constexprs": list(self.constexprs),
            "source": self.source,
            "grid": list(self.grid),
            "params": [[k, v.to_json() if isinstance(v, TensorArg) else v] for k, v in self.params],
        }

    @classmethod
    def from_json(cls, data: dict) -> "Launch":
        params = tuple((k, _from_json(v)) for k, v in data["params"])
        return cls(data["kernel"], params, tuple(data["constexprs"]), data["source"], tuple(data["grid"]))


# ------------------------------------------------------------------------------- scenarios
# What of a config shapes the step's launches: the model's and the batch's sizes and the
# precision (scenarios() sets version, toggles, faults and determinism themselves).
SHAPING_FIELDS = (
    "vocab_size", "hidden_dim", "num_layers", "num_heads", "num_kv_heads", "ffn_multiplier",
    "norm_eps", "rope_theta", "batch_size", "seq_len", "precision", "tf32",
)


def planned_config(cfg: RunConfig) -> RunConfig:
    """The config a plan runs: ``cfg``'s SHAPING_FIELDS with at most PLANNED_LAYERS layers, the
    rest RunConfig's defaults (so configs that launch the same share one plan), validated."""
    values = {name: getattr(cfg, name) for name in SHAPING_FIELDS}
    values["num_layers"] = min(cfg.num_layers, PLANNED_LAYERS)
    return RunConfig(**values).validate()


def scenarios(cfg: RunConfig) -> dict[str, RunConfig]:
    """The steps whose launches together are every launch the Triton versions (v3 and v4) make
    at ``cfg``'s model size and precision: label -> config. Toggles, faults and the version of
    ``cfg`` are replaced by each scenario's own: each Triton version with its defaults,
    deterministic, under each kernel fault that applies to it, and with each of its planned
    toggles flipped (Version.planned_toggles: v4's other attention path, its FFN recomputation)."""
    from tinylab.config import TOGGLES

    base = dataclasses.replace(
        planned_config(cfg), fault=None, deterministic=False, **{name: None for name in TOGGLES},
    )
    out: dict[str, RunConfig] = {}
    for spec in (v for v in TABLE.values() if v.triton):
        default = dataclasses.replace(base, version=spec.name)
        out[spec.name] = default
        out[f"{spec.name} deterministic"] = dataclasses.replace(default, deterministic=True)
        for fault in KERNEL_FAULTS:
            if fault in spec.faults:
                out[f"{spec.name} {fault}"] = dataclasses.replace(default, fault=fault)
        for toggle in spec.planned_toggles:
            flipped = not default.toggle(toggle)
            label = f"{spec.name} {'' if flipped else 'no-'}{toggle.replace('_', '-')}"
            out[label] = dataclasses.replace(default, **{toggle: flipped})
    return {label: c.validate() for label, c in out.items()}


def kernel_config(**sizes: Any) -> RunConfig:
    """The first Triton version at these sizes (SHAPING_FIELDS, the rest RunConfig's defaults),
    validated: what the Kernels view and `tinylab kernels` study (scenarios plans every Triton
    version from it). ConfigError when the Triton kernels cannot run it (its head size)."""
    return RunConfig(version=first(triton=True).name, **sizes).validate()


def scenario_of(cfg: RunConfig) -> str | None:
    """The label of the planned step (see `scenarios`) that launches what a step of ``cfg``
    launches: the same version, determinism, kernel fault and toggles (a CUDA graph replays
    the same launches, so it is left out); None when no planned step is like it."""
    from tinylab.config import TOGGLES

    def shape(c: RunConfig) -> tuple:
        fault = c.fault if c.fault in KERNEL_FAULTS else None
        return (c.version, c.deterministic, fault, tuple(c.toggle(t) for t in TOGGLES if t != "cuda_graph"))

    wanted = shape(cfg)
    return next((label for label, c in scenarios(cfg).items() if shape(c) == wanted), None)


# ----------------------------------------------------------------------------------- hashes
def jit_closure(fn) -> list:
    """The Python functions of a jit function and of every jit function it calls, found through
    the names its code uses (Triton's own DependenciesFinder needs a JITFunction, which an
    interpreter session does not have)."""
    seen: dict[str, Any] = {}

    def visit(f) -> None:
        key = f"{f.__module__}.{f.__qualname__}"
        if key in seen:
            return
        seen[key] = f
        codes = [f.__code__]
        while codes:
            code = codes.pop()
            codes.extend(c for c in code.co_consts if hasattr(c, "co_names"))
            for name in code.co_names:
                value = f.__globals__.get(name)
                if type(value).__name__ in ("JITFunction", "InterpretedFunction"):
                    visit(value.fn)

    visit(fn)
    return [seen[k] for k in sorted(seen)]


def source_hash(kernel) -> str:
    """Hash of a jit kernel's source and of the jit functions it calls: the part of a compile
    cache key that changes when the kernel's code does."""
    h = hashlib.sha256()
    for f in jit_closure(kernel.fn):
        h.update(f"{f.__module__}.{f.__qualname__}\n{inspect.getsource(f)}\n".encode())
    return h.hexdigest()[:16]


def code_hash() -> str:
    """Hash of every source file a plan depends on (the models, the kernels' launch code, the
    run config, the version table and this module), read without importing them: part of a plan's
    cache key."""
    h = hashlib.sha256()
    files = [Path(__file__), Path(__file__).parents[1] / "config" / "__init__.py",
             Path(__file__).parents[1] / "core" / "versions.py"]
    for package in ("kernels", "models"):
        spec = importlib.util.find_spec(package)
        for root in spec.submodule_search_locations if spec else ():
            files.extend(sorted(Path(root).glob("*.py")))
    for path in files:
        h.update(path.name.encode() + b"\n" + path.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def triton_kernel_names() -> frozenset[str]:
    """The names of kernels/'s Triton jit functions, the names a profiler lists their kernels by
    (``_attn_fwd_kernel``), read from the source without importing it (nor Triton): enough to
    tell at once that a row of a kernel table (``aten::mm``) is no kernel of ours."""
    import ast

    names = set()
    spec = importlib.util.find_spec("kernels")
    for root in spec.submodule_search_locations if spec else ():
        for path in Path(root).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
                    names.add(node.name)
    return frozenset(names)


def plan_key(cfg: RunConfig, target: Target) -> str:
    """Cache key of the plans of ``cfg``'s scenarios for one target."""
    from importlib.metadata import version

    parts = [FORMAT, planned_config(cfg).to_dict(), target.name, target.units, code_hash(), version("torch"), version("triton")]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


# --------------------------------------------------------------------------------- planning
def plan_scenario(cfg: RunConfig, target: Target) -> list[Launch]:
    """Every launch of one training step (forward, backward, optimizer) of ``cfg`` on
    ``target``, in launch order, repeats included. Imports torch and the models; runs in a
    fraction of a second at the default size, whatever the size (no tensor holds data)."""
    import unittest.mock
    import warnings

    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    import kernels
    import models.flat_adamw
    from kernels import _utils
    from models import build_model

    launches: list[Launch] = []
    hashes: dict[Any, str] = {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")  # fake tensors' data_ptr() and CPU autocast notices
        stack.enter_context(_torch_state(torch, cfg))
        # FlatAdamW runs its update as torch ops on a CPU; planning wants the GPU's kernel.
        stack.enter_context(unittest.mock.patch.object(models.flat_adamw, "adamw_reference", kernels.adamw_step))
        recorded = stack.enter_context(_utils.planning(target.name, target.units))
        stack.enter_context(FakeTensorMode())
        model = build_model(cfg)
        optimizer_class = getattr(model, "optimizer_class", None)  # v4's own (a Triton kernel)
        idx = torch.randint(0, cfg.vocab_size, (cfg.batch_size, cfg.seq_len))
        amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(cfg.precision)
        # CPU autocast stands in for CUDA's: both run linear, matmul and SDPA in the low precision.
        with torch.autocast("cpu", dtype=amp, enabled=amp is not None):
            loss = model(idx, idx)
        loss.backward()
        if optimizer_class is not None:
            optimizer_class(model, lr=cfg.learning_rate, weight_decay=cfg.weight_decay).step()
        for kernel, grid, args, kwargs in recorded:
            if kernel not in hashes:
                hashes[kernel] = source_hash(kernel)
            signature = inspect.signature(kernel.fn).parameters
            params = {**dict(zip(signature, args)), **kwargs}
            # constexprs and launch options are compiled in as they are; the rest specialized
            constexprs = tuple(k for k, p in signature.items() if _constexpr(p))
            launches.append(Launch(
                f"{kernel.fn.__module__}:{kernel.fn.__qualname__}",
                tuple((k, v if k not in signature or k in constexprs else canonical(v)) for k, v in params.items()),
                constexprs,
                hashes[kernel],
                tuple(int(g) for g in grid),
            ))
    return launches


@contextlib.contextmanager
def _torch_state(torch, cfg: RunConfig) -> Iterator[None]:
    """The process-wide switches the trainer sets from a config and the launch code reads
    (deterministic algorithms, TF32 matmuls), set for one planned step and restored after."""
    saved = torch.are_deterministic_algorithms_enabled(), torch.backends.cuda.matmul.allow_tf32
    torch.use_deterministic_algorithms(cfg.deterministic)
    torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0])
        torch.backends.cuda.matmul.allow_tf32 = saved[1]

"""Launch helpers shared by the kernels.

Block sizes are chosen here in Python (not with ``@triton.autotune``) because autotuning with
several configs does not run in the Triton interpreter, and because the lab wants one
predictable config per shape that a learner can read and change.
"""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Any, Iterator

import torch
import triton
import triton.language as tl
from torch import Tensor

from kernels.work import OpModel

# Elements of one program's tile in the interpreter (see tile_rows).
INTERPRETER_TILE = 1 << 17

# True makes the interpreter launch exactly what a GPU launches (one row per program, GPU block
# sizes), so tests on a CPU-only machine cover the GPU path too (tests/kernels/conftest.py).
GPU_CONFIG_IN_INTERPRETER = False


class _Plan:
    """The launches recorded by `planning`, and the GPU their configurations are chosen for."""

    def __init__(self, arch: str, sm_count: int):
        self.arch, self.sm_count = arch, sm_count
        self.launches: list[tuple[Any, tuple[int, ...], tuple, dict]] = []


_plan: _Plan | None = None


@contextlib.contextmanager
def planning(arch: str, sm_count: int) -> Iterator[list[tuple[Any, tuple[int, ...], tuple, dict]]]:
    """Within this context launches are recorded instead of run, with launch configurations
    chosen for a GPU of architecture ``arch`` (named as `device_arch` names them) with
    ``sm_count`` SMs (CUs on AMD), whatever device the tensors are on. Yields the list of
    recorded launches, (kernel, grid, args, kwargs) each.

    Why: the kernel anatomy tool (tinylab.anatomy) compiles what a training step would launch
    on that GPU by running the step on a CPU through this very launch code, so what it reports
    is what would run. Not thread-safe: nothing may launch kernels in other threads meanwhile.
    """
    global _plan
    if _plan is not None:
        raise RuntimeError("planning() does not nest")
    _plan = _Plan(arch, sm_count)
    try:
        yield _plan.launches
    finally:
        _plan = None


def launch(kernel, grid, /, *args, **kwargs) -> None:
    """``kernel[grid](*args, **kwargs)``; only recorded while `planning`. Every launch of this
    package goes through here."""
    if _plan is not None:
        _plan.launches.append((kernel, tuple(grid), args, kwargs))
    else:
        kernel[grid](*args, **kwargs)


def work_metadata(model: OpModel) -> dict[str, float]:
    """A launch's FLOPs and bytes as Triton's launch metadata (``@triton.jit(launch_metadata=f)``,
    f(grid, compiled kernel, {argument name: value}) returning this): Triton calls it only while a
    launch hook is set, i.e. under proton, which records the counts beside the kernel's time. The
    formulas are kernels.work's, which the roofline evaluates too. A metadata
    function reads shapes and element sizes only: a kernel it launched would be profiled too."""
    return {"flops": float(model.flops), "bytes": float(model.bytes)}


@triton.jit
def _no_region(name: tl.constexpr):
    pass


def _region_marks():
    """(enter, exit) of a named region inside a kernel, which proton's instrumentation mode times
    (`enter_region("name")` ... `exit_region("name")`, literal names). Compiled without
    instrumentation they emit nothing. The Triton interpreter, and a Triton built without proton,
    have no such builtins: there they are calls of a kernel that does nothing.

    Every kernel of this package marks at least one region (its "body", or the flash-attention
    forward's four): under instrumentation, proton of Triton 3.6 dies of a division by zero
    (SIGFPE) when a kernel that marks none returns (measured on an H100, 2026-11-28)."""
    if not triton.knobs.runtime.interpret:
        try:
            from triton.profiler.language import enter_scope, exit_scope
        except ImportError:
            pass
        else:
            return enter_scope, exit_scope
    return _no_region, _no_region


enter_region, exit_region = _region_marks()


def interpreting() -> bool:
    """True when launches run kernels in Triton's CPU interpreter (never while `planning`, whose
    launches are for a GPU)."""
    return _plan is None and os.environ.get("TRITON_INTERPRET") == "1"


@functools.lru_cache(maxsize=None)
def _device_arch(device_index: int) -> str:
    props = torch.cuda.get_device_properties(device_index)
    if torch.version.hip:
        return props.gcnArchName.split(":")[0]  # "gfx942:sramecc+:xnack-" -> "gfx942"
    return f"sm_{props.major}{props.minor}"


def device_arch(device: torch.device) -> str | None:
    """The GPU architecture that launch configurations are chosen for: the planned one while
    `planning`, else the device's, as "gfx942" (ROCm's gcnArchName without feature flags) or
    "sm_90" (the CUDA capability); None for a CPU device, where kernels run in the interpreter
    (whose GPU configuration, GPU_CONFIG_IN_INTERPRETER, is the NVIDIA one)."""
    if _plan is not None:
        return _plan.arch
    if device.type != "cuda":
        return None
    return _device_arch(device.index if device.index is not None else torch.cuda.current_device())


def is_amd(arch: str | None) -> bool:
    """Whether ``arch`` (see `device_arch`) is an AMD GPU: wave64 CDNA, 64 KiB of LDS per CU on
    gfx90a/gfx942 (160 KiB on gfx950), LLVM's AMDGPU backend behind Triton's."""
    return arch is not None and arch.startswith("gfx")


def interpreter_config() -> bool:
    """True when launches use the interpreter's config: few programs, large tiles.

    The interpreter runs program instances one after another in Python, a few milliseconds each
    whatever their size, while a tile op is one numpy call that costs about the same for 64 or
    64K elements. So the fewer the programs the better, the opposite of a GPU, which wants many
    small programs in flight.
    """
    return interpreting() and not GPU_CONFIG_IN_INTERPRETER


def tile_rows(n_rows: int, row_block: int) -> int:
    """Rows of ``row_block`` elements per program: 1 on a GPU (the layout the kernels were tuned
    with); in the interpreter as many as fit INTERPRETER_TILE elements (a power of two), so a
    small model's call runs in one or a few programs."""
    if not interpreter_config():
        return 1
    return max(1, min(triton.next_power_of_2(max(n_rows, 1)), INTERPRETER_TILE // row_block))


def check_tensors(*tensors: Tensor) -> None:
    """Fail with a clear message instead of an obscure Triton error on unusable inputs."""
    device = tensors[0].device
    for t in tensors:
        if t.device != device:
            raise ValueError(f"all tensors must be on one device, got {t.device} and {device}")
    if device.type == "cpu" and not interpreting() and _plan is None:
        raise RuntimeError(
            "Triton kernels got CPU tensors but TRITON_INTERPRET=1 is not set: use a GPU, or set "
            "TRITON_INTERPRET=1 in the environment before importing triton/kernels"
        )


@triton.jit
def program_rows(M, ROWS: tl.constexpr, RANK: tl.constexpr = 2):
    """(rows, in_bounds) of this program's ROWS rows (grid axis 0): int32 row indices and their
    mask, shaped [ROWS, 1] (or [ROWS, 1, 1] for RANK 3) to broadcast against the tile. Rows
    past M (in the last tile) repeat row M - 1: their loads stay in bounds and see real values
    even without a row mask (no all -inf rows in a max), and in_bounds keeps them from storing.

    With ROWS == 1, what every GPU launch uses, both are scalars and in_bounds is a constant
    True (the grid has one program per row), and the row_* reductions below return scalars: a
    kernel written for tiles then compiles to the same machine code as one written for a single
    row, whereas [1, 1] tensors would bring layouts and conversions of their own.
    """
    if ROWS == 1:
        rows = tl.program_id(0)
        in_bounds = tl.full([], 1, tl.int1)
    else:
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        in_bounds = rows < M
        rows = tl.minimum(rows, M - 1)
        if RANK == 3:
            rows = rows[:, None, None]
            in_bounds = in_bounds[:, None, None]
        else:
            rows = rows[:, None]
            in_bounds = in_bounds[:, None]
    return rows, in_bounds


@triton.jit
def row_sum(x, ROWS: tl.constexpr):
    """Sum of a [ROWS, BLOCK] tile along its rows, as [ROWS, 1]; a scalar when ROWS == 1."""
    if ROWS == 1:
        out = tl.sum(x)
    else:
        out = tl.sum(x, axis=1)[:, None]
    return out


@triton.jit
def row_max(x, ROWS: tl.constexpr):
    """Max of a [ROWS, BLOCK] tile along its rows, as [ROWS, 1]; a scalar when ROWS == 1."""
    if ROWS == 1:
        out = tl.max(x)
    else:
        out = tl.max(x, axis=1)[:, None]
    return out


@triton.jit
def row_full(value, ROWS: tl.constexpr):
    """An fp32 [ROWS, 1] tensor of ``value`` (a scalar when ROWS == 1): row-shaped loop state."""
    if ROWS == 1:
        out = tl.full([], value, tl.float32)
    else:
        out = tl.full([ROWS, 1], value, tl.float32)
    return out


@triton.jit
def row_all(flags, ROWS: tl.constexpr):
    """Whether all of a tile's per-row flags ([ROWS, 1] int1, or a scalar when ROWS == 1) are set."""
    if ROWS == 1:
        out = flags
    else:
        out = tl.min(flags.to(tl.int32)) > 0
    return out


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def sm_count(device: torch.device) -> int:
    """Number of SMs (CUs on ROCm): the planned GPU's while `planning`; 4 in the interpreter so
    persistent grids stay tiny."""
    if _plan is not None:
        return _plan.sm_count
    if device.type != "cuda":
        return 4
    return _sm_count(device.index if device.index is not None else torch.cuda.current_device())


def row_num_warps(block: int) -> int:
    """Warps for a program that holds ``block`` elements of a row (Liger/Triton-tutorial rule)."""
    if block >= 32768:
        return 32
    if block >= 8192:
        return 16
    if block >= 2048:
        return 8
    return 4


def as_rows(t: Tensor) -> Tensor:
    """[..., N] -> [M, N], copying only when the leading dims cannot be merged into one stride.

    Both strides of the result are passed to the kernels, so a transposed 2-D view (last-dim
    stride != 1) runs as is, with the slow uncoalesced loads the lab wants to show.
    """
    return t.reshape(-1, t.shape[-1])

"""Compile one launch for one target with Triton, and read off what the GPU will hold for it:
registers, LDS/shared memory, scratch, spills, and the occupancy they allow.

Nothing here needs a GPU. The kernel is specialized exactly as Triton's JIT would specialize
that launch (Triton's own binder, fed stand-ins for the tensors), compiled with triton.compile
for the target, and measured from the compiler's own output:
- AMD: the AMDGCN text's kernel info comments and ``.amdgpu_metadata`` (VGPR/AGPR/SGPR counts,
  ``.group_segment_fixed_size`` = LDS, ``.private_segment_fixed_size`` = scratch, spill counts,
  and LLVM's ``; Occupancy:`` in waves per SIMD);
- NVIDIA: the ``ptxas -v`` report of the ptxas run that made the cubin (registers per thread,
  stack frame, spill stores/loads), Triton's dynamic shared memory, and SASS from the wheel's
  nvdisasm; occupancy by the CUDA occupancy calculator's rules (targets.nvidia_occupancy).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from dataclasses import asdict, dataclass
from typing import Iterator

from tinylab.anatomy.launches import FORMAT, Launch, TensorArg
from tinylab.anatomy.targets import Occupancy, Target, amd_occupancy, get_target, nvidia_occupancy

STAGES = {"amd": ("ttir", "ttgir", "llir", "amdgcn"), "nvidia": ("ttir", "ttgir", "llir", "ptx", "sass")}


@dataclass(frozen=True)
class KernelReport:
    """What one compiled launch holds on one target.

    ``registers``: VGPR, AGPR and SGPR counts per wave (AMD) or ``regs`` per thread (NVIDIA).
    ``lds``: LDS per workgroup / shared memory per block, bytes. ``scratch``: private memory per
    lane / stack frame per thread, bytes. ``spills``: registers spilled (AMD ``VGPR``, ``SGPR``)
    or bytes of spill stores and loads (NVIDIA ``stores``, ``loads``). ``error`` is the first
    line of why it did not compile (then the counts are empty).
    """

    target: str
    num_warps: int
    registers: dict
    lds: int
    scratch: int
    spills: dict
    occupancy: Occupancy | None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def spilled(self) -> bool:
        return any(self.spills.values())

    @property
    def lane_registers(self) -> int | None:
        """What one lane (AMD: VGPRs + AGPRs, one file) or thread (NVIDIA) holds; None if it failed."""
        if not self.ok:
            return None
        r = self.registers
        return r["VGPR"] + r["AGPR"] if "VGPR" in r else r["regs"]

    def cells(self) -> list[str]:
        """registers, LDS, scratch, spills, occupancy and its limiter as a table shows them
        (the CLI's and the lab's): ``v140+a8 s78``, ``28.1K``, ``0``, ``4s`` or ``16B`` or
        ``-``, ``3/8``, ``VGPRs`` (NVIDIA: ``r125``, ``regs+smem``). A compile that failed
        has no cells."""
        r = self.registers
        if "VGPR" in r:
            regs = f"v{r['VGPR']}" + (f"+a{r['AGPR']}" if r["AGPR"] else "") + f" s{r['SGPR']}"
            spills = " ".join(f"{n}{k[0].lower()}" for k, n in self.spills.items() if n) or "-"
            ceiling = 8
        else:
            regs = f"r{r['regs']}"
            spills = f"{self.spills['stores']}B" if self.spilled else "-"
            ceiling = 64
        occ = self.occupancy
        limiter = occ.limiter.replace("registers", "regs").replace("shared", "smem")
        return [regs, short_bytes(self.lds), str(self.scratch), spills, f"{occ.value}/{ceiling}", limiter]

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "KernelReport":
        occupancy = Occupancy(**data["occupancy"]) if data["occupancy"] else None
        return cls(**{**data, "occupancy": occupancy})


def short_bytes(n: int) -> str:
    """Bytes as a table cell: ``512``, ``8K``, ``28.1K`` (KiB)."""
    if n < 1024:
        return str(n)
    return f"{n / 1024:.1f}K".replace(".0K", "K")


def compile_key(launch: Launch, target: Target) -> str:
    """Cache key of a compile: the launch (kernel source hash, parameters, options), the
    target and the Triton version (which fixes its LLVM and ptxas)."""
    from importlib.metadata import version

    parts = [FORMAT, launch.key(), target.name, version("triton")]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


class _TensorStandIn:
    """What Triton's binder asks of a tensor argument (see launches.TensorArg)."""

    def __init__(self, arg: TensorArg):
        import torch

        self.dtype = getattr(torch, arg.dtype)
        self._ptr = 0 if arg.aligned else 8
        self._range = 0 if arg.small else 2**31

    def data_ptr(self) -> int:
        return self._ptr

    def ptr_range(self) -> int:
        return self._range


def _captured(fn):
    """fn()'s result and everything written to file descriptors 1 and 2 meanwhile (ptxas's
    report, which Triton prints; MLIR and LLVM diagnostics, which C++ writes directly)."""
    import os
    import sys
    import tempfile

    with tempfile.TemporaryFile(mode="w+b") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            result, error = fn(), None
        except Exception as exc:  # a compile failure is a result, reported per kernel
            result, error = None, exc
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        log.seek(0)
        return result, error, log.read().decode("utf-8", "replace")


@contextlib.contextmanager
def _fresh_triton_cache() -> Iterator[None]:
    """Point Triton's own cache at an empty temporary directory: every compile really runs
    (from its cache Triton would skip ptxas, and with it the ptxas report), and nothing is
    left in ~/.triton (this tool keeps its own cache)."""
    import tempfile

    from triton import knobs

    saved = knobs.cache.dir
    with tempfile.TemporaryDirectory() as tmp:
        knobs.cache.dir = tmp
        try:
            yield
        finally:
            knobs.cache.dir = saved


def _first_line(exc: Exception, output: str) -> str:
    """One line on why a compile failed: the innermost cause (Triton wraps the frontend's
    error in a CompilationError whose text starts with the source location and code), its
    location, and the first error the C++ passes printed."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    text = next((ln.strip() for ln in str(root).splitlines() if ln.strip()), type(root).__name__)
    where = str(exc).split("\n", 1)[0].strip()
    if root is not exc and where.startswith("at "):
        text = f"{where} {text}"
    errors = [ln.strip() for ln in output.splitlines() if "error" in ln.lower()]
    if errors and errors[0] not in text:
        text = f"{text}: {errors[0]}"
    return text[:300]


def _number(pattern: str, text: str, default: int | None = None) -> int:
    m = re.search(pattern, text, re.M)
    if m is None:
        if default is None:
            raise ValueError(f"compiler output has no {pattern!r}")
        return default
    return int(m.group(1))


def amd_report(target: Target, asm: str, dynamic_lds: int, num_warps: int, waves_per_eu: int) -> KernelReport:
    """Read registers, LDS, scratch, spills and LLVM's occupancy from AMDGCN text; add
    Triton's dynamic LDS (allocated at launch, so absent from the code object)."""
    meta = asm[asm.index(".amdgpu_metadata"):]
    lds = _number(r"^\s+\.group_segment_fixed_size:\s+(\d+)", meta) + dynamic_lds
    return KernelReport(
        target=target.name,
        num_warps=num_warps,
        registers={
            "VGPR": _number(r"^; NumVgprs: (\d+)", asm),
            "AGPR": _number(r"^; NumAgprs: (\d+)", asm, 0),
            "SGPR": _number(r"^; TotalNumSgprs: (\d+)", asm),
        },
        lds=lds,
        scratch=_number(r"^\s+\.private_segment_fixed_size:\s+(\d+)", meta),
        spills={
            "VGPR": _number(r"^\s+\.vgpr_spill_count:\s+(\d+)", meta),
            "SGPR": _number(r"^\s+\.sgpr_spill_count:\s+(\d+)", meta),
        },
        occupancy=amd_occupancy(
            target,
            vgprs=_number(r"^; NumVGPRsForWavesPerEU: (\d+)", asm),
            sgprs=_number(r"^; NumSGPRsForWavesPerEU: (\d+)", asm),
            lds=lds,
            num_warps=num_warps,
            waves_per_eu=waves_per_eu,
            llvm=_number(r"^; Occupancy: (\d+)", asm),
        ),
    )


def nvidia_report(target: Target, ptxas_log: str, dynamic_shared: int, num_warps: int) -> KernelReport:
    """Read registers, stack, spills and static shared memory from ``ptxas -v`` output; add
    Triton's dynamic shared memory (what the launch asks for)."""
    regs = _number(r"Used (\d+) registers", ptxas_log)
    shared = _number(r"(\d+) bytes smem", ptxas_log, 0) + dynamic_shared
    return KernelReport(
        target=target.name,
        num_warps=num_warps,
        registers={"regs": regs},
        lds=shared,
        scratch=_number(r"(\d+) bytes stack frame", ptxas_log),
        spills={
            "stores": _number(r"(\d+) bytes spill stores", ptxas_log),
            "loads": _number(r"(\d+) bytes spill loads", ptxas_log),
        },
        occupancy=nvidia_occupancy(target, regs, shared, num_warps),
    )


def sass(cubin: bytes) -> str:
    """SASS of a cubin, from the nvdisasm shipped in Triton's wheel (about 0.4 s a call, most
    of it the tool's start: run only when someone asks for SASS)."""
    import subprocess
    import tempfile

    from triton import knobs

    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        done = subprocess.run([knobs.nvidia.nvdisasm.path, "-c", fh.name], capture_output=True, text=True, check=True,
                              timeout=120)
    return done.stdout


def compile_launch(launch: Launch, target_name: str) -> tuple[dict, dict[str, str | bytes]]:
    """Compile ``launch`` for the target called ``target_name``; returns (KernelReport as JSON,
    IR stage name -> text, plus the cubin's bytes on NVIDIA). Runs in a worker process (see pool.py): imports triton and the
    kernel's module, which must not have been imported with TRITON_INTERPRET=1."""
    import importlib
    import time

    import triton
    from triton import knobs
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    target = get_target(target_name)
    module, name = launch.kernel.split(":")
    fn = getattr(importlib.import_module(module), name)
    if not isinstance(fn, JITFunction):
        raise RuntimeError(f"{launch.kernel} was imported in Triton's interpreter; compile in a process without TRITON_INTERPRET")
    backend = make_backend(target.triton_target())
    params = {k: _TensorStandIn(v) if isinstance(v, TensorArg) else v for k, v in launch.params}
    # As JITFunction.run: bind and specialize the arguments, then pack signature and options.
    params.update(debug=False, instrumentation_mode="")
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(**params)
    options, signature, constexprs, attrs = fn._pack_args(backend, params, bound, specialization, options)
    started = time.perf_counter()
    with _fresh_triton_cache():
        knobs.nvidia.dump_ptxas_log = True
        compiled, error, output = _captured(
            lambda: triton.compile(ASTSource(fn, signature, constexprs, attrs), target=backend.target, options=options.__dict__)
        )
    seconds = round(time.perf_counter() - started, 3)
    if error is not None:
        failed = KernelReport(target.name, launch.num_warps, {}, 0, 0, {}, None, _first_line(error, output), seconds)
        return failed.to_json(), {}
    stages: dict[str, str | bytes] = {s: compiled.asm[s] for s in STAGES[target.vendor] if s in compiled.asm}
    if target.amd:
        report = amd_report(
            target, compiled.asm["amdgcn"], compiled.metadata.shared, launch.num_warps, launch.option("waves_per_eu", "amd")
        )
    else:
        stages["cubin"] = compiled.asm["cubin"]  # disassembled on request (see sass)
        report = nvidia_report(target, output, compiled.metadata.shared, launch.num_warps)
    return {**report.to_json(), "seconds": seconds}, stages


def probe_target(target_name: str) -> str | None:
    """None when the installed Triton compiles a trivial kernel for the target, else why not
    (one line). Runs in a worker process, like compile_launch."""
    import triton
    from triton.compiler import ASTSource

    from tinylab.anatomy._probe import probe_kernel

    source = ASTSource(probe_kernel, {"X": "*fp32", "N": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    with _fresh_triton_cache():
        _, error, output = _captured(lambda: triton.compile(source, target=get_target(target_name).triton_target()))
    return None if error is None else _first_line(error, output)

"""What this machine can do: OS, Python, packages, GPU, and every profiler with reason and fix.

Shared by `tinylab doctor` and the TUI's Doctor screen (no Textual here), as a frozen
`DoctorReport`: `to_json()` is `tinylab doctor --json`, which the lab reads back from a child
process (`DoctorReport.from_json`). Every fact is measured, not assumed: a profiler is
"available" only when its executable answers `--version` (or its Python package imports) and a
GPU of its vendor is visible.
"""

from __future__ import annotations

import importlib.util
import platform
import shutil
import subprocess
import sys
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import psutil

from tinylab.core import childproc
from tinylab.training.packages import describe, foreign_packages
from tinylab.profilers.base import dist_version, usable_cpus
from tinylab.profilers.registry import all_adapters
from tinylab.profilers.rocm import hip_mismatch, kfd_gpus, node_release
from tinylab.profilers.rocm_doctor import amd_tool_lines, amd_tools

#: package name in the report -> distribution names to look up (first found wins).
PACKAGES = {
    "torch": ("torch",),
    "triton": ("triton", "pytorch-triton-rocm", "pytorch-triton"),
    "deepspeed": ("deepspeed",),
    "textual": ("textual",),
    "pandas": ("pandas",),
    "numpy": ("numpy",),
    "nvidia-ml-py": ("nvidia-ml-py", "pynvml"),
    "amdsmi": ("amdsmi",),
}


@dataclass(frozen=True)
class ProfilerStatus:
    """Whether a profiler works here; `reason` and `fix` when it does not."""

    available: bool
    reason: str | None = None
    version: str | None = None
    release: str | None = None  # the ROCm release the tool comes with (AMD tools)
    kind: str | None = None  # "in-process" or "wrapper"
    description: str = ""
    fix: str | None = None
    backends: list[str] | None = None  # how the tool can measure here (proton), where it says

    def to_json(self) -> dict[str, Any]:
        """Its `doctor --json` entry: `backends` only for a tool that lists them."""
        doc = asdict(self)
        if self.backends is None:
            del doc["backends"]
        return doc


@dataclass(frozen=True)
class GpuInfo:
    vendor: str
    name: str
    count: int | None = None
    memory_gb: float | None = None
    capability: str | None = None
    runtime: str | None = None
    driver: str | None = None
    torch_sees_gpu: bool = False  # only a GPU the installed torch can use runs the trainer


@dataclass(frozen=True)
class RocmInfo:
    release: str | None  # the node's ROCm release
    source: str | None  # where the release was read
    torch_hip: str | None  # the HIP runtime inside the installed torch wheel
    warning: str | None  # when the two clash for the profilers


@dataclass(frozen=True)
class DoctorReport:
    """The environment (OS, Python, host memory, GPU, ROCm, packages) and every profiler's status."""

    os: dict[str, str]  # system, release, machine
    python: dict[str, str]  # version, executable
    memory_bytes: int | None
    cpus: int | None  # the CPUs this process may use (its affinity), not the machine's
    gpu: GpuInfo | None
    rocm: RocmInfo | None
    packages: dict[str, str | None]
    profilers: dict[str, ProfilerStatus]
    #: each AMD tool on PATH: version, ROCm release and how it was learnt, capabilities from its --help
    amd_tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The `tinylab doctor --json` object."""
        return {"os": self.os, "python": self.python, "memory_bytes": self.memory_bytes, "cpus": self.cpus,
                "gpu": asdict(self.gpu) if self.gpu else None, "rocm": asdict(self.rocm) if self.rocm else None,
                "packages": self.packages, "profilers": {name: p.to_json() for name, p in self.profilers.items()},
                "amd_tools": self.amd_tools, "warnings": list(self.warnings)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> DoctorReport:
        """A report from `tinylab doctor --json` (the lab's doctor child); a missing key reads as unknown."""
        memory = doc.get("memory_bytes")
        gpu, rocm = doc.get("gpu"), doc.get("rocm")
        return cls(
            os=dict(doc.get("os") or {}),
            python=dict(doc.get("python") or {}),
            memory_bytes=memory if isinstance(memory, int) and not isinstance(memory, bool) else None,
            cpus=cpus if isinstance(cpus := doc.get("cpus"), int) and not isinstance(cpus, bool) else None,
            gpu=_known(GpuInfo, gpu) if isinstance(gpu, dict) else None,
            rocm=_known(RocmInfo, rocm) if isinstance(rocm, dict) else None,
            packages=dict(doc.get("packages") or {}),
            profilers={name: _known(ProfilerStatus, p) for name, p in (doc.get("profilers") or {}).items()},
            amd_tools={name: tool for name, tool in (doc.get("amd_tools") or {}).items() if isinstance(tool, dict)},
            warnings=tuple(doc.get("warnings") or ()),
        )


def _known(kind: type, doc: dict[str, Any]) -> Any:
    """A dataclass of `kind` from the keys of `doc` it has (a field missing from doc: its default, else None)."""
    names = {f.name for f in fields(kind)}
    required = {f.name: None for f in fields(kind) if f.default is MISSING}
    return kind(**{**required, **{k: v for k, v in doc.items() if k in names}})


def collect_doctor() -> DoctorReport:
    """This machine's report (the `tinylab doctor --json` object is its to_json())."""
    profilers = {}
    for adapter in all_adapters():
        status = adapter.available()
        profilers[adapter.name] = ProfilerStatus(
            available=status.available,
            reason=status.reason,
            version=status.version,
            release=status.release,
            kind=adapter.kind,
            description=adapter.description,
            fix=None if status.available else adapter.fix,
            backends=adapter.backends(),
        )
    foreign = foreign_packages()
    rocm = rocm_info()
    warnings = [describe(foreign)] if foreign else []
    if rocm and rocm.warning:
        warnings.append(rocm.warning)
    return DoctorReport(
        os={"system": platform.system(), "release": platform.release(), "machine": platform.machine()},
        python={"version": platform.python_version(), "executable": sys.executable},
        memory_bytes=psutil.virtual_memory().total,
        gpu=gpu_info(),
        rocm=rocm,
        packages={name: dist_version(*dists) for name, dists in PACKAGES.items()},
        profilers=profilers,
        amd_tools=amd_tools(),
        cpus=usable_cpus(),
        warnings=tuple(warnings),
    )


def rocm_info() -> RocmInfo | None:
    """The node's ROCm release, the HIP runtime inside the installed torch wheel, and whether the
    two clash for the profilers; None where there is neither (an NVIDIA or CPU-only machine)."""
    release = node_release()
    hip = _torch_hip()
    if release is None and hip is None:
        return None
    warning = hip_mismatch(release.version, hip) if release and hip else None
    return RocmInfo(release.version if release else None, release.source if release else None, hip, warning)


def _torch_hip() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return getattr(torch.version, "hip", None)


def gpu_info() -> GpuInfo | None:
    """The GPU torch will use, else what the vendor tools report, else None (CPU only)."""
    info = _torch_gpu()
    if info is None:
        return _nvidia_smi_gpu() or _amd_gpu()
    if info.vendor == "nvidia":
        smi = _nvidia_smi_gpu()
        return replace(info, driver=smi.driver) if smi else info
    return replace(info, driver=_amdgpu_driver())


def _torch_gpu() -> GpuInfo | None:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    hip = getattr(torch.version, "hip", None)
    return GpuInfo(
        vendor="amd" if hip else "nvidia",
        name=torch.cuda.get_device_name(0),
        count=torch.cuda.device_count(),
        memory_gb=round(props.total_memory / 2**30, 1),
        capability=f"{props.major}.{props.minor}" if not hip else getattr(props, "gcnArchName", None),
        runtime=f"HIP {hip}" if hip else f"CUDA {torch.version.cuda}",
        driver=None,
        torch_sees_gpu=True,
    )


def _nvidia_smi_gpu() -> GpuInfo | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = childproc.run_bounded([exe, "--query-gpu=name,driver_version,memory.total",
                                      "--format=csv,noheader,nounits"], 20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    rows = [[c.strip() for c in line.split(",")] for line in proc.stdout.splitlines() if line.count(",") >= 2]
    if proc.returncode != 0 or not rows:
        return None
    name, driver, memory = rows[0][:3]
    try:
        memory_gb: float | None = round(float(memory) / 1024, 1)
    except ValueError:
        memory_gb = None
    return GpuInfo("nvidia", name, len(rows), memory_gb, None, None, driver, torch_sees_gpu=False)


def _amd_gpu() -> GpuInfo | None:
    if not Path("/dev/kfd").exists():
        return None
    names = kfd_gpus()
    return GpuInfo("amd", names[0] if names else "AMD GPU", len(names) or None, None, None, None, _amdgpu_driver(),
                   torch_sees_gpu=False)


def _amdgpu_driver() -> str | None:
    try:
        return Path("/sys/module/amdgpu/version").read_text().strip() or None
    except OSError:
        return None


def render_text(report: DoctorReport) -> str:
    os_info, py = report.os, report.python
    lines = [
        f"OS        {os_info['system']} {os_info['release']} ({os_info['machine']})",
        f"Python    {py['version']} ({py['executable']})",
    ]
    gpu = report.gpu
    if gpu is None:
        lines.append("GPU       none visible: CPU only (GPU profilers are unavailable)")
    else:
        count = f" x{gpu.count}" if gpu.count and gpu.count > 1 else ""
        details = [d for d in (gpu.runtime, f"driver {gpu.driver}" if gpu.driver else None) if d]
        if gpu.memory_gb:
            details.insert(0, f"{gpu.memory_gb} GB")
        if not gpu.torch_sees_gpu:
            details.append("torch cannot use it (CPU-only torch build?)")
        vendor = gpu.vendor.upper()
        name = gpu.name if gpu.name.upper().startswith(vendor) else f"{vendor} {gpu.name}"
        lines.append(f"GPU       {name}{count}" + (f" ({', '.join(details)})" if details else ""))
    rocm = report.rocm
    if rocm:
        found = f"{rocm.release} ({rocm.source})" if rocm.release else "not found (no .info/version)"
        lines.append(f"ROCm      {found} · torch's HIP {rocm.torch_hip or '- (not a ROCm torch build)'}")
    packages = " · ".join(f"{name} {version or '-'}" for name, version in report.packages.items())
    lines.append(f"packages  {packages}")
    lines.append("profilers")
    for name, p in report.profilers.items():
        mark = "ok " if p.available else "-- "
        what = " ".join(v for v in (p.version, p.release) if v) if p.available else f"{p.reason}"
        lines.append(f"  {mark}{name:<16} {p.kind:<11} {what}")
        if not p.available and p.fix:
            lines.append(f"  {'':<3}{'':<16} {'':<11} fix: {p.fix}")
        if p.backends:
            lines.append(f"  {'':<3}{'':<16} {'':<11} backends: {'; '.join(p.backends)}")
    lines += amd_tool_lines(report.amd_tools)
    lines += [f"warning   {w}" for w in report.warnings]
    return "\n".join(lines)

"""What this machine can do: OS, Python, packages, GPU, and every profiler with reason and fix.

Shared by `tinylab doctor` and the TUI's Doctor screen (no Textual here). Every fact is
measured, not assumed: a profiler is "available" only when its executable answers
`--version` (or its Python package imports) and a GPU of its vendor is visible.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from tinylab import childproc
from tinylab.training.packages import describe, foreign_packages
from tinylab.profilers.registry import all_adapters
from tinylab.profilers.rocm import hip_mismatch, kfd_gpus, node_release
from tinylab.service.machine import usable_cpus

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


def collect_doctor() -> dict[str, Any]:
    """The `tinylab doctor --json` object (plus "os", "python", and per profiler "fix"/"kind")."""
    profilers = {}
    for adapter in all_adapters():
        status = adapter.available()
        profilers[adapter.name] = {
            "available": status.available,
            "reason": status.reason,
            "version": status.version,
            "release": status.release,
            "kind": adapter.kind,
            "description": adapter.description,
            "fix": None if status.available else adapter.fix,
        }
    foreign = foreign_packages()
    rocm = rocm_info()
    warnings = [describe(foreign)] if foreign else []
    if rocm and rocm["warning"]:
        warnings.append(rocm["warning"])
    return {
        "os": {"system": platform.system(), "release": platform.release(), "machine": platform.machine()},
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "memory_bytes": psutil.virtual_memory().total,
        "cpus": usable_cpus(),
        "gpu": gpu_info(),
        "rocm": rocm,
        "packages": {name: _version(dists) for name, dists in PACKAGES.items()},
        "profilers": profilers,
        "warnings": warnings,
    }


def rocm_info() -> dict[str, Any] | None:
    """The node's ROCm release, the HIP runtime inside the installed torch wheel, and whether the
    two clash for the profilers; None where there is neither (an NVIDIA or CPU-only machine)."""
    release = node_release()
    hip = _torch_hip()
    if release is None and hip is None:
        return None
    warning = hip_mismatch(release.version, hip) if release and hip else None
    return {"release": release.version if release else None, "source": release.source if release else None,
            "torch_hip": hip, "warning": warning}


def _torch_hip() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return getattr(torch.version, "hip", None)


def _version(dists: tuple[str, ...]) -> str | None:
    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def gpu_info() -> dict[str, Any] | None:
    """The GPU torch will use, else what the vendor tools report, else None (CPU only)."""
    info = _torch_gpu()
    if info is None:
        info = _nvidia_smi_gpu() or _amd_gpu()
    elif info["vendor"] == "nvidia":
        smi = _nvidia_smi_gpu()
        if smi:
            info["driver"] = smi["driver"]
    elif info["vendor"] == "amd":
        info["driver"] = _amdgpu_driver()
    return info


def _torch_gpu() -> dict[str, Any] | None:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    hip = getattr(torch.version, "hip", None)
    return {
        "vendor": "amd" if hip else "nvidia",
        "name": torch.cuda.get_device_name(0),
        "count": torch.cuda.device_count(),
        "memory_gb": round(props.total_memory / 2**30, 1),
        "capability": f"{props.major}.{props.minor}" if not hip else getattr(props, "gcnArchName", None),
        "runtime": f"HIP {hip}" if hip else f"CUDA {torch.version.cuda}",
        "driver": None,
        "torch_sees_gpu": True,
    }


def _nvidia_smi_gpu() -> dict[str, Any] | None:
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
    return {
        "vendor": "nvidia", "name": name, "count": len(rows), "memory_gb": memory_gb, "capability": None,
        "runtime": None, "driver": driver, "torch_sees_gpu": False,
    }  # fmt: skip


def _amd_gpu() -> dict[str, Any] | None:
    if not Path("/dev/kfd").exists():
        return None
    names = kfd_gpus()
    return {
        "vendor": "amd", "name": names[0] if names else "AMD GPU", "count": len(names) or None, "memory_gb": None,
        "capability": None, "runtime": None, "driver": _amdgpu_driver(), "torch_sees_gpu": False,
    }  # fmt: skip


def _amdgpu_driver() -> str | None:
    try:
        return Path("/sys/module/amdgpu/version").read_text().strip() or None
    except OSError:
        return None


def render_text(report: dict[str, Any]) -> str:
    os_info, py = report["os"], report["python"]
    lines = [
        f"OS        {os_info['system']} {os_info['release']} ({os_info['machine']})",
        f"Python    {py['version']} ({py['executable']})",
    ]
    gpu = report["gpu"]
    if gpu is None:
        lines.append("GPU       none visible: CPU only (GPU profilers are unavailable)")
    else:
        count = f" x{gpu['count']}" if gpu.get("count") and gpu["count"] > 1 else ""
        details = [d for d in (gpu.get("runtime"), f"driver {gpu['driver']}" if gpu.get("driver") else None) if d]
        if gpu.get("memory_gb"):
            details.insert(0, f"{gpu['memory_gb']} GB")
        if not gpu.get("torch_sees_gpu"):
            details.append("torch cannot use it (CPU-only torch build?)")
        vendor = gpu["vendor"].upper()
        name = gpu["name"] if gpu["name"].upper().startswith(vendor) else f"{vendor} {gpu['name']}"
        lines.append(f"GPU       {name}{count}" + (f" ({', '.join(details)})" if details else ""))
    rocm = report.get("rocm")
    if rocm:
        found = f"{rocm['release']} ({rocm['source']})" if rocm["release"] else "not found (no .info/version)"
        lines.append(f"ROCm      {found} · torch's HIP {rocm['torch_hip'] or '- (not a ROCm torch build)'}")
    packages = " · ".join(f"{name} {version or '-'}" for name, version in report["packages"].items())
    lines.append(f"packages  {packages}")
    lines.append("profilers")
    for name, p in report["profilers"].items():
        mark = "ok " if p["available"] else "-- "
        what = " ".join(v for v in (p["version"], p.get("release")) if v) if p["available"] else f"{p['reason']}"
        lines.append(f"  {mark}{name:<16} {p['kind']:<11} {what}")
        if not p["available"] and p.get("fix"):
            lines.append(f"  {'':<3}{'':<16} {'':<11} fix: {p['fix']}")
    lines += [f"warning   {w}" for w in report.get("warnings", [])]
    return "\n".join(lines)

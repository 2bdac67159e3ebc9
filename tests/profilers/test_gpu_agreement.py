"""On an NVIDIA GPU: the PyTorch profiler and Nsight Compute name the same top kernels for short
v1 and v3 runs, and `tinylab doctor` reports the GPU and ncu. Skipped without a GPU or ncu."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.version.hip is not None, reason="needs an NVIDIA GPU"),
]

REPO = Path(__file__).resolve().parents[2]
FLAGS = ["--device", "cuda", "--hidden-dim", "256", "--num-layers", "2", "--num-heads", "4", "--num-kv-heads", "2",
         "--seq-len", "128", "--batch-size", "8", "--num-steps", "4", "--warmup-steps", "1", "--profile-steps", "3"]
TOP = 5


def tinylab(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinylab", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, env={**os.environ, **(env or {})})


def base_name(name: str) -> str:
    """The kernel's function name without return type, namespaces, template and argument lists:
    the PyTorch trace (CUPTI) and ncu demangle the same kernel differently
    ("at::native::" vs "at::", "std::array<char*, 1ul>" vs "std::array<char *, 1>")."""
    text = re.sub(r"^void\s+", "", name.strip())
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        if ch in "<(" and depth == 0:
            cut = i
            break
    return text[:cut].split("::")[-1].strip()


def top_kernels(runs: Path, version: str, tool: str, env: dict | None = None) -> list[str]:
    proc = tinylab("train", *FLAGS, "--version", version, "--profile", tool, "--runs-dir", str(runs), "--json", env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    hot = tinylab("hotspots", "last", "--runs-dir", str(runs), "--json")
    assert hot.returncode == 0, hot.stderr
    data = json.loads(hot.stdout)
    assert data["format"] == ("ncu" if tool == "ncu" else "pytorch-trace"), data["format"]
    keys: list[str] = []
    for k in data["kernels"]:
        key = base_name(k["name"])
        if key not in keys:
            keys.append(key)
    return keys


@pytest.mark.skipif(shutil.which("ncu") is None, reason="ncu is not installed")
@pytest.mark.parametrize("version", ["v1", "v3"])
def test_pytorch_profiler_and_ncu_agree_on_top_kernels(tmp_path, version):
    torch_top = top_kernels(tmp_path / "torch", version, "pytorch")
    ncu_top = top_kernels(tmp_path / "ncu", version, "ncu", env={"TINYLAB_NCU_LAUNCH_COUNT": "5000"})
    print(f"{version} pytorch top: {torch_top[:TOP]}\n{version} ncu top:     {ncu_top[:TOP]}")
    shared = set(torch_top[:TOP]) & set(ncu_top[:TOP])
    assert len(shared) >= 3, (torch_top[:TOP], ncu_top[:TOP])
    assert torch_top[0] in ncu_top[:TOP] and ncu_top[0] in torch_top[:TOP]


def test_doctor_reports_the_gpu():
    proc = tinylab("doctor", "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["gpu"]["vendor"] == "nvidia" and report["gpu"]["name"] == torch.cuda.get_device_name(0)
    assert report["gpu"]["torch_sees_gpu"] is True and report["gpu"]["driver"]
    assert report["profilers"]["pytorch"]["available"]
    assert report["profilers"]["ncu"]["available"] == (shutil.which("ncu") is not None)
    assert report["profilers"]["nsys"]["available"] == (shutil.which("nsys") is not None)
    for name in ("rocprofv3", "rocprof-sys", "rocprof-compute"):
        assert not report["profilers"][name]["available"]

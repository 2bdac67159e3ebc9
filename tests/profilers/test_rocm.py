"""What the AMD adapters share (tinylab/profilers/rocm.py): the release of a tool outside any ROCm
tree, from what the tool says, and the GPU architectures KFD lists."""

from __future__ import annotations

import os

from support.paths import BIN

from tinylab.profilers import base
from tinylab.profilers.registry import get_adapter
from tinylab.profilers import rocm as rocm_module


def test_an_unknown_tree_falls_back_to_what_the_tool_says(monkeypatch, tmp_path):
    """A tool outside any ROCm tree: 6.x rocprofv3 has no --version, so its --help options tell the release."""
    monkeypatch.setenv("PATH", str(BIN) + os.pathsep + os.environ["PATH"])
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    monkeypatch.delenv("ROCM_PATH", raising=False)
    for version, label in (("6.2.2", "ROCm 6.2"), ("6.3.1", "ROCm 6.3"), ("6.4.1", "ROCm 6.4"), ("7.1.0", "ROCm 7.1.0")):
        monkeypatch.setenv("STANDIN_ROCM_RELEASE", version)
        adapter = get_adapter("rocprofv3")
        assert adapter.available().release == label
    monkeypatch.setenv("STANDIN_ROCM_RELEASE", "6.2.0")
    assert get_adapter("rocprof-compute").available().release == "ROCm 6.2"
    assert get_adapter("rocprof-sys").available().available  # a 6.2 stand-in named rocprof-sys-run still answers


def test_kfd_gpus_names_each_gpu_architecture(tmp_path, monkeypatch):
    """KFD's gfx_target_version as LLVM names it (90402 gfx942, 90010 gfx90a), CPU nodes left out, in node order."""
    for node, props in (("0", "simd_count 0\ngfx_target_version 0\n"), ("2", "simd_count 304\ngfx_target_version 90402\n"),
                        ("10", "simd_count 440\ngfx_target_version 90010\n")):
        (tmp_path / node).mkdir()
        (tmp_path / node / "properties").write_text(props)
    monkeypatch.setattr(rocm_module, "KFD_NODES", tmp_path)
    assert rocm_module.kfd_gpus() == ["gfx942", "gfx90a"]

"""What doctor says of the AMD tools (tinylab/profilers/rocm_doctor.py): each one's version, release
and how it was learnt, where its tree disagrees, and what its help lists; nothing without them."""

from __future__ import annotations

import os

from support.rocm import rocm_tree

from tinylab.profilers import base
from tinylab.profilers.rocm_doctor import amd_tool_lines, amd_tools


def test_a_tool_whose_tree_disagrees_is_shown_with_both(monkeypatch, tmp_path):
    """A 7.2.0 tree whose tools say 7.13.0: the doctor lines name the tool's release, the tree's, and
    what the tool's own help lists."""
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.setenv("PATH", str(rocm_tree(tmp_path, "7.2")) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("STANDIN_ROCM_RELEASE", "7.13.0")
    report = amd_tools()
    assert set(report) == {"rocprofv3", "rocprof-sys", "rocprof-compute"}
    lines = amd_tool_lines(report)
    assert lines[0] == "AMD tools (what each one's --help lists)"
    text = "\n".join(lines)
    assert ("rocprofv3        1.3.0 · ROCm 7.13.0 (the tool itself, rocprofv3 --version; its ROCm tree says ROCm "
            f"7.2.0 ({tmp_path}/rocm-7.2.0/.info/version): tinylab follows the tool)") in text
    assert "counter groups: repeated --pmc (pass_<n>/)" in text  # asked of the tool, not of the tree
    assert "runner rocprof-sys-run; --profile --trace --output <dir>; help by topic (--help=all)" in text


def test_a_rocprofv3_outside_any_rocm_tree_runs_from_its_help(monkeypatch, tmp_path):
    """A Spack or module prefix of rocprofiler-sdk 6.3 (no .info/version, no --version): once refused
    ("its ROCm release is unknown ... set ROCM_PATH"), now available, the guess said."""
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.delenv("STANDIN_ROCM_RELEASE", raising=False)
    monkeypatch.setenv("PATH", str(rocm_tree(tmp_path, "6.3-bare")) + os.pathsep + os.environ["PATH"])
    from tinylab.profilers.registry import get_adapter

    assert get_adapter("rocprofv3").available().available
    text = "\n".join(amd_tool_lines(amd_tools()))
    assert ("rocprofv3        - · release unknown: options from its help (file layouts as ROCm 6.3's: its --help "
            "lists --pmc, which ROCm 6.3 brought) (the tool itself, rocprofv3 --help)") in text


def test_nothing_without_amd_tools(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert amd_tools() == {} and amd_tool_lines({}) == []

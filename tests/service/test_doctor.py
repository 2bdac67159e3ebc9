"""`tinylab doctor` tells the truth: on this machine, and with stand-in tools on PATH."""

from __future__ import annotations

import importlib.metadata
import json
import os

import pytest
from support.rocm import VERSIONS, rocm_tree

from tinylab.service import doctor
from tinylab.cli import main
from tinylab.config import PROFILERS
from tinylab.profilers import base
from tinylab.profilers.deepspeed import DeepSpeedAdapter
from tinylab.profilers.rocm import hip_mismatch

WRAPPERS = ("rocprofv3", "rocprof-sys", "rocprof-compute", "ncu", "nsys")


@pytest.fixture(autouse=True)
def fast_deepspeed_check(monkeypatch):
    """DeepSpeed's real check imports it in a child (seconds); tests/profilers/test_deepspeed.py covers that path."""
    monkeypatch.setattr(DeepSpeedAdapter, "available", lambda self: base.Availability(False, "deepspeed is not installed", None))


def test_report_shape_and_packages():
    collected = doctor.collect_doctor()
    report = collected.to_json()  # `tinylab doctor --json`
    assert set(report) == {"os", "python", "memory_bytes", "gpu", "rocm", "packages", "profilers", "amd_tools", "cpus", "warnings"}
    assert report["memory_bytes"] > 2**28 and report["cpus"] >= 1
    assert report["warnings"] == []
    assert list(report["profilers"]) == list(PROFILERS)
    for name, p in report["profilers"].items():
        assert isinstance(p["available"], bool) and p["kind"] in ("in-process", "wrapper")
        assert (p["reason"] is None) == p["available"] and (p["fix"] is None) == p["available"]
    assert report["packages"]["torch"] == importlib.metadata.version("torch")
    assert report["profilers"]["pytorch"] == {
        "available": True, "reason": None, "version": importlib.metadata.version("torch"), "release": None,
        "kind": "in-process", "description": report["profilers"]["pytorch"]["description"], "fix": None}
    # the lab reads the report back from its doctor child's JSON
    assert doctor.DoctorReport.from_json(json.loads(json.dumps(report))) == collected


def test_a_report_of_fewer_keys_reads_as_unknown():
    """The lab's tests and an older doctor child give fewer keys: what is missing is unknown, not an error."""
    report = doctor.DoctorReport.from_json({"profilers": {"pytorch": {"available": True, "kind": "in-process"}},
                                            "gpu": {"vendor": "nvidia", "name": "H100", "torch_sees_gpu": True}})
    assert report.profilers["pytorch"] == doctor.ProfilerStatus(available=True, kind="in-process")
    assert report.gpu == doctor.GpuInfo("nvidia", "H100", torch_sees_gpu=True)
    assert (report.memory_bytes, report.rocm, report.warnings, report.packages) == (None, None, (), {})


def test_cpu_machine_without_tools(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(base, "gpu_vendors", lambda: set())
    monkeypatch.setattr(doctor, "gpu_info", lambda: None)
    report = doctor.collect_doctor()
    assert report.gpu is None
    for name in WRAPPERS:
        p = report.profilers[name]
        assert p.available is False and p.reason.endswith("not found on PATH") and p.fix


def test_gpu_machine_with_tools(standins, monkeypatch):
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"nvidia"})
    report = doctor.collect_doctor()
    profilers = report.profilers
    assert profilers["ncu"].available and profilers["ncu"].version == "2025.3.1.0"
    assert profilers["nsys"].available
    for name in ("rocprofv3", "rocprof-sys", "rocprof-compute"):
        assert not profilers[name].available and "no AMD GPU is visible" in profilers[name].reason


def test_gpu_info_matches_torch():
    import torch

    info = doctor.gpu_info()
    if torch.cuda.is_available():
        assert info.name == torch.cuda.get_device_name(0) and info.torch_sees_gpu
    elif not base.gpu_vendors():
        assert info is None


def test_cli_json_and_text(capsys, standins):
    assert main(["doctor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"gpu", "packages", "profilers"} <= set(data)
    assert set(data["profilers"]["rocprofv3"]) >= {"available", "reason", "version"}
    assert main(["doctor"]) == 0
    text = capsys.readouterr().out
    assert "profilers" in text and "ok rocprofv3" in text and "-- deepspeed" in text and "fix: pip install deepspeed" in text


@pytest.mark.parametrize("key", ["6.2.0", "10.1-pip"])
def test_amd_node_reports_its_rocm_and_each_tools_release(key, monkeypatch, tmp_path):
    """On an AMD node the ROCm release is read from its tree (a pip install's too), each tool is named
    with it, how it was learnt and what its help lists, and a torch wheel whose HIP would break the
    profilers is a warning."""
    monkeypatch.setenv("PATH", str(rocm_tree(tmp_path, key)) + os.pathsep + os.environ["PATH"])
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.delenv("STANDIN_ROCM_RELEASE", raising=False)
    version = VERSIONS[key].split("-")[0]
    monkeypatch.setattr(doctor, "_torch_hip", lambda: "7.2.53211-0f2a5b3")
    report = doctor.collect_doctor()
    assert report.rocm.release == version and report.rocm.source.endswith(".info/version")
    for name in ("rocprofv3", "rocprof-sys", "rocprof-compute"):
        assert report.profilers[name].available and report.profilers[name].release == f"ROCm {version}"
        tool = report.amd_tools[name]
        assert tool["release"] == f"ROCm {version}" and tool["how"].startswith("pip install" if key.endswith("pip")
                                                                              else "ROCm tree")
    assert report.rocm.warning in report.warnings
    assert "torch's HIP runtime 7.2.53211-0f2a5b3 is" in report.rocm.warning
    compute = report.amd_tools["rocprof-compute"]["capabilities"]
    old = key == "6.2.0"  # omniperf 2.0.1 against rocprof-compute 3.9.0
    head = (["analyze -> --save-dfs", "profile -> --path", "dispatches: --dispatch (IDs from 0)", "24 passes on gfx942"] if old else
            ["analyze -> csv (--output-format csv --output-name)", "profile -> --output-directory"])
    assert compute[:len(head)] == head
    assert ("single-pass sets (--set)" in compute) != old and ("--overwrite" in compute) != old
    assert report.amd_tools["rocprofv3"]["capabilities"][0] == (
        "kernel table from " + ("CSV (--stats)" if old else "its rocpd database"))
    text = doctor.render_text(report)
    assert f"ROCm      {version}" in text and "ok rocprofv3" in text and f"ROCm {version}" in text
    assert "AMD tools (what each one's --help lists)" in text and "profile -> " in text


def test_hip_mismatch_rule():
    assert hip_mismatch("6.2.2", "6.2.41133-dd7f95766") is None  # the same release
    assert hip_mismatch("6.4.0", "6.2.41133") is None  # an older wheel of the same major release
    assert "newer than ROCm 6.2.2" in hip_mismatch("6.2.2", "6.4.43482")
    assert "from another major release than ROCm 7.0.2" in hip_mismatch("7.0.2", "6.4.43482")
    assert "rocm6.2" in hip_mismatch("6.2.2", "7.0.51831")


def test_no_rocm_section_without_rocm(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.setattr(doctor, "node_release", lambda: None)
    monkeypatch.setattr(doctor, "_torch_hip", lambda: None)
    assert doctor.rocm_info() is None


def test_proton_is_listed_with_its_backends(monkeypatch):
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    collected = doctor.collect_doctor()
    report = collected.to_json()  # `tinylab doctor --json`
    proton = report["profilers"]["proton"]
    assert proton["kind"] == "in-process" and proton["backends"][-1].startswith("instrumentation")
    assert proton["backends"][0].split()[0] in ("roctracer", "rocprofiler")  # AMD's tracer of this Triton
    assert "backends" not in report["profilers"]["pytorch"]  # one way to measure: nothing to list
    assert f"backends: {'; '.join(proton['backends'])}" in doctor.render_text(collected)

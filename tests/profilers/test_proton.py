"""The proton adapter: availability, backends, the AMD refusals, and the hook's session against a
stand-in `triton.profiler` (the real one needs a GPU; tests/gpu/proton_check.py runs it on one).
The stand-in's finalize writes the H100 tree of tests/fixtures/proton, as proton would."""

from __future__ import annotations

import json
import shutil
import sys
import types
from pathlib import Path

import pytest
from support.paths import FIX

from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.profilers import proton as adapter_module
from tinylab.profilers.proton import INSTRUMENT_MODE, ProtonAdapter, ProtonHook, amd_tracer, backends


def test_unavailable_without_a_gpu_with_the_reason(monkeypatch):
    monkeypatch.setenv("TINYLAB_GPU_VENDORS", "")
    status = ProtonAdapter().available()
    assert not status.available and "no GPU is visible" in status.reason and status.version
    monkeypatch.setenv("TINYLAB_GPU_VENDORS", "nvidia")
    assert ProtonAdapter().available().available


def test_the_auto_backend_changes_on_amd_at_triton_3_8():
    assert amd_tracer("3.6.0") == amd_tracer("3.7.1") == "roctracer"
    assert amd_tracer("3.8.0") == amd_tracer("3.9.0") == amd_tracer("4.0.0") == "rocprofiler"
    assert backends("3.7.1", {"nvidia"})[0].startswith("cupti") and len(backends("3.7.1", {"nvidia"})) == 2
    amd = backends("3.8.0", {"amd"})
    assert amd[0].startswith("rocprofiler (auto on AMD, from triton 3.8; roctracer where rocprofiler-sdk is missing")
    assert amd[-1].startswith("instrumentation")
    assert len(backends("3.7.1", set())) == 3  # no GPU: what each vendor's would be


def test_amd_refusals_before_the_run(monkeypatch):
    monkeypatch.setenv("TINYLAB_GPU_VENDORS", "amd")
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    graphed = RunConfig(version="v4", profilers=["proton"]).validate()
    with pytest.raises(UserError, match="no kernel inside a HIP graph replay: add --no-cuda-graph"):
        ProtonAdapter().check(graphed)
    ProtonAdapter().check(RunConfig(version="v4", cuda_graph=False, profilers=["proton"]).validate())
    ProtonAdapter().check(RunConfig(version="v4", profilers=["proton"], proton_backend="instrumentation").validate())
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    with pytest.raises(UserError, match="proton refuses HIP_VISIBLE_DEVICES .* ROCR_VISIBLE_DEVICES"):
        ProtonAdapter().check(RunConfig(version="v3", profilers=["proton"]).validate())
    monkeypatch.setenv("TINYLAB_GPU_VENDORS", "nvidia")  # CUPTI follows graphs and these variables
    ProtonAdapter().check(graphed)


class FakeProton:
    """triton.profiler's calls, recorded; finalize writes the recorded H100 tree."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.names: dict[int, str] = {}

    def start(self, name, **kwargs):
        self.calls.append(("start", kwargs))
        self.names[len(self.names)] = name
        return len(self.names) - 1

    def activate(self, session):
        self.calls.append(("activate", session))

    def deactivate(self, session):
        self.calls.append(("deactivate", session))

    def finalize(self, session):
        self.calls.append(("finalize", session))
        shutil.copy(FIX / "proton" / "proton.hatchet", self.names[session] + ".hatchet")

    def scope(self, name):
        self.calls.append(("scope", name))
        import contextlib

        return contextlib.nullcontext()


@pytest.fixture
def fake(monkeypatch):
    import torch
    import triton

    proton = FakeProton()
    module = types.SimpleNamespace(start=proton.start, activate=proton.activate, deactivate=proton.deactivate,
                                   finalize=proton.finalize, scope=proton.scope)
    monkeypatch.setitem(sys.modules, "triton.profiler", module)
    monkeypatch.setattr(triton, "profiler", module, raising=False)
    monkeypatch.setitem(sys.modules, "triton.profiler.profile", types.SimpleNamespace(_select_backend=lambda: "cupti"))
    semantics = []
    module.language = types.SimpleNamespace(enable_semantic=semantics.append)
    monkeypatch.setitem(sys.modules, "triton.profiler.language", module.language)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Stand-in GPU")
    proton.semantics = semantics
    return proton


CUDA = types.SimpleNamespace(type="cuda")


def steps(hook, first: int, last: int) -> None:
    for step in range(first, last + 1):
        hook.on_step_start(step)
        for phase in ("forward", "backward", "optimizer"):
            with hook.phase(phase):
                pass
        hook.on_step_end(step)


def test_the_tracing_session_records_the_pytorch_profilers_steps(fake, tmp_path):
    cfg = RunConfig(version="v3", num_steps=12, warmup_steps=5, profilers=["proton"]).validate()
    hook = ProtonHook(cfg, tmp_path)
    hook.on_train_start(None, CUDA)
    assert fake.calls == [("start", {"context": "shadow", "data": "tree", "backend": "cupti", "hook": "triton",
                                     "mode": None}), ("deactivate", 0)]
    session = json.loads((tmp_path / "proton-session.json").read_text())
    assert session["backend"] == "cupti" and session["steps"] == [5, 7] and session["device"] == "Stand-in GPU"
    steps(hook, 0, 11)
    assert [c for c in fake.calls[2:] if c[0] != "scope"] == [("activate", 0), ("deactivate", 0)]
    assert [c[1] for c in fake.calls if c[0] == "scope"] == ["forward", "backward", "optimizer"] * 3
    result = hook.on_train_end()
    assert fake.calls[-1] == ("finalize", 0)
    assert result.format == "proton" and result.steps == 3 and len(result.table)
    assert result.note.startswith("proton cupti backend, triton ") and "steps 5..7" in result.note
    assert set(result.artifacts) == {"proton.hatchet", "proton-session.json"}


def test_the_instrumentation_session_lives_only_through_the_recorded_steps(fake, tmp_path):
    cfg = RunConfig(version="v3", num_steps=12, warmup_steps=5, profilers=["proton"],
                    proton_backend="instrumentation").validate()
    hook = ProtonHook(cfg, tmp_path)
    hook.on_train_start(None, CUDA)
    assert fake.calls == [] and fake.semantics == ["triton"]
    steps(hook, 0, 4)
    assert fake.calls == []
    steps(hook, 5, 7)
    assert fake.calls == [("start", {"context": "shadow", "data": "tree", "backend": "instrumentation", "hook": None,
                                     "mode": INSTRUMENT_MODE}), ("finalize", 0)]  # no phase scopes
    steps(hook, 8, 11)
    hook.on_train_end()
    assert fake.calls[-1] == ("finalize", 0) and len(fake.calls) == 2


def test_a_cpu_run_is_refused(tmp_path):
    hook = ProtonHook(RunConfig(version="v3", profilers=["proton"]).validate(), tmp_path)
    with pytest.raises(UserError, match="proton profiles GPU kernels"):
        hook.on_train_start(None, types.SimpleNamespace(type="cpu"))


def test_a_run_that_ends_before_the_window_says_so(fake, tmp_path):
    hook = ProtonHook(RunConfig(version="v3", profilers=["proton"], proton_backend="instrumentation").validate(),
                      tmp_path)
    hook.on_train_start(None, CUDA)
    result = hook.on_train_end()
    assert result.table is None and result.note == "proton recorded no step"


def test_the_adapter_reads_a_finished_profile_folder(tmp_path):
    for name in ("proton.hatchet", "proton-session.json"):
        shutil.copy(FIX / "proton" / name, tmp_path / name)
    result = ProtonAdapter().collect(Path(tmp_path))
    assert result.format == "proton" and "cupti" in result.note

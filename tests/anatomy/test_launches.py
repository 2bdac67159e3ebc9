"""Planning: the launches recorded from the real models are what the launch code would issue on
each target, and they cover every Triton kernel of kernels/."""

import dataclasses
import importlib
import pkgutil

import pytest
import torch

import kernels
from kernels import _utils
from tinylab.anatomy.launches import (
    KERNEL_FAULTS,
    PLANNED_LAYERS,
    Launch,
    TensorArg,
    canonical,
    describe,
    jit_closure,
    code_hash,
    plan_scenario,
    scenario_of,
    scenarios,
    source_hash,
)
from tinylab.anatomy.targets import TARGETS
from tinylab.config import FAULTS, RunConfig


def _jit_kernels() -> set[str]:
    """Every jit function of kernels/ launched from Python (named like _*_kernel)."""
    out = set()
    for info in pkgutil.iter_modules(kernels.__path__):
        module = importlib.import_module(f"kernels.{info.name}")
        for name, value in vars(module).items():
            if name.endswith("_kernel") and type(value).__name__ in ("JITFunction", "InterpretedFunction"):
                if value.fn.__module__ == module.__name__:
                    out.add(f"{module.__name__}:{name}")
    return out


def _keys(launches):
    return {lc.key() for lc in launches}


@pytest.fixture(scope="module")
def default_plans():
    """scenario -> launches for gfx942 and sm_90 at the default config (planned in-process)."""
    return {t: {label: plan_scenario(cfg, TARGETS[t]) for label, cfg in scenarios(RunConfig()).items()} for t in ("gfx942", "sm_90")}


def test_canonical_arguments_keep_only_what_triton_specializes_on():
    assert [canonical(v) for v in (1, 0, 32, 7, -100)] == [1, 16, 16, 17, 17]
    assert canonical(2**40) == 2**32 + 16 and canonical(2**40 + 3) == 2**32 + 17  # 64-bit
    assert canonical(3.5) == canonical(1e-6)
    base = torch.empty(64)
    assert canonical(base) == TensorArg("float32", True, True)
    assert canonical(base[1:]) == TensorArg("float32", False, True)  # 4 bytes in: unaligned
    assert canonical(base[4:]) == TensorArg("float32", True, True)  # 16 bytes in
    assert canonical(torch.empty(8, dtype=torch.bfloat16)).dtype == "bfloat16"
    shown = [describe(canonical(v)) for v in (1, 64, 7, 2**40, torch.empty(4)[1:], torch.empty(4, dtype=torch.bfloat16))]
    assert shown == ["1", "×16", "n", "×16", "fp32 unaligned", "bf16"]


def test_launch_json_round_trip(default_plans):
    for launch in default_plans["gfx942"]["v4"]:
        assert Launch.from_json(launch.to_json()) == launch
        assert Launch.from_json(launch.to_json()).key() == launch.key()


def test_scenarios_cover_both_versions_and_the_kernel_faults():
    labels = scenarios(RunConfig(version="v1", fault="missing-init", sdpa=None))
    assert {"v3", "v4", "v3 deterministic", "v4 deterministic", "v4 recompute-ffn"} <= set(labels)
    for fault in KERNEL_FAULTS:
        for version in FAULTS[fault]:
            assert labels[f"{version} {fault}"].fault == fault
    assert all(c.num_layers <= PLANNED_LAYERS for c in labels.values())


def test_faults_left_out_change_no_launch():
    cfg = dataclasses.replace(scenarios(RunConfig())["v3"], num_layers=1)
    plain = _keys(plan_scenario(cfg, TARGETS["sm_90"]))
    for fault in set(FAULTS) - set(KERNEL_FAULTS):
        if "v3" in FAULTS[fault]:
            faulty = _keys(plan_scenario(dataclasses.replace(cfg, fault=fault), TARGETS["sm_90"]))
            assert faulty <= plain, f"fault {fault} launches something new: add it to KERNEL_FAULTS"


def test_layers_past_the_planned_ones_launch_nothing_new():
    for version in ("v3", "v4"):
        planned = scenarios(RunConfig())[version]
        deeper = dataclasses.replace(planned, num_layers=PLANNED_LAYERS + 2)
        assert _keys(plan_scenario(deeper, TARGETS["sm_90"])) == _keys(plan_scenario(planned, TARGETS["sm_90"]))


def test_every_kernel_of_kernels_is_planned(default_plans):
    planned = {lc.kernel for plans in default_plans.values() for launches in plans.values() for lc in launches}
    assert planned == _jit_kernels()


def test_v4_plans_its_own_optimizer_kernel(default_plans):
    assert any(lc.name == "adamw" for lc in default_plans["sm_90"]["v4"])


def test_plans_use_the_targets_architecture(default_plans, monkeypatch):
    """The recorded attention configs are the launch code's own for each architecture."""
    fa = importlib.import_module("kernels.flash_attention")
    monkeypatch.setattr(_utils, "GPU_CONFIG_IN_INTERPRETER", True)
    cfg = RunConfig()
    for target, plans in default_plans.items():
        fwd = next(lc for lc in plans["v3"] if lc.name == "attn_fwd")
        expected = fa._fwd_config(cfg.head_dim, cfg.seq_len, True, target)  # fp32 strict: exact dots
        assert {k: fwd.config[k] for k in expected} == expected
    amd_fwd, nv_fwd = (next(lc for lc in plans["v3"] if lc.name == "attn_fwd") for plans in default_plans.values())
    assert amd_fwd.config != nv_fwd.config


def test_persistent_grids_follow_the_targets_unit_count():
    cfg = scenarios(RunConfig(precision="bf16"))["v3"]
    rows = cfg.batch_size * cfg.seq_len
    for name in ("gfx942", "gfx950", "sm_90"):
        bwd = next(lc for lc in plan_scenario(cfg, TARGETS[name]) if lc.name == "rmsnorm_bwd")
        # narrow rows: one program per CU/SM, at most one per two rows (kernels/rmsnorm.py)
        assert bwd.grid == (min(TARGETS[name].units, rows // 2),)


def test_source_hash_covers_the_jit_functions_a_kernel_calls():
    fa = importlib.import_module("kernels.flash_attention")
    names = {f.__name__ for f in jit_closure(fa._attn_fwd_kernel.fn)}
    assert {"_attn_fwd_kernel", "_fwd_inner", "_dot", "_query_block"} <= names
    assert source_hash(fa._attn_fwd_kernel) != source_hash(fa._attn_bwd_dq_kernel)
    assert code_hash() == code_hash()


def test_planning_restores_the_process_state():
    before = torch.are_deterministic_algorithms_enabled(), torch.backends.cuda.matmul.allow_tf32
    plan_scenario(scenarios(RunConfig(tf32=True))["v3 deterministic"], TARGETS["sm_90"])
    assert (torch.are_deterministic_algorithms_enabled(), torch.backends.cuda.matmul.allow_tf32) == before
    assert _utils._plan is None


def test_scenario_of_finds_the_planned_step_a_config_launches():
    assert scenario_of(RunConfig(version="v3")) == "v3"
    assert scenario_of(RunConfig(version="v3", deterministic=True)) == "v3 deterministic"
    assert scenario_of(RunConfig(version="v3", fault="non-contiguous")) == "v3 non-contiguous"
    assert scenario_of(RunConfig(version="v3", fault="missing-init")) == "v3"  # launches what v3 does
    assert scenario_of(RunConfig(version="v4")) == "v4"  # strict fp32: torch's SDPA by default
    assert scenario_of(RunConfig(version="v4", sdpa=False)) == "v4 no-sdpa"
    assert scenario_of(RunConfig(version="v4", precision="bf16", sdpa=True)) == "v4 sdpa"
    assert scenario_of(RunConfig(version="v4", cuda_graph=False)) == "v4"  # a graph replays the same launches
    assert scenario_of(RunConfig(version="v3", recompute_ffn=True)) is None  # no planned step is like it
    assert scenario_of(RunConfig(version="v1")) is None


def test_triton_kernel_names_are_read_from_the_source_without_importing_it():
    from tinylab.anatomy.launches import triton_kernel_names

    names = triton_kernel_names()
    assert {"_attn_fwd_kernel", "_rmsnorm_fwd_kernel", "_adamw_kernel"} <= names
    assert "aten::mm" not in names and "rmsnorm" not in names  # a PyTorch operator, an autograd op's wrapper

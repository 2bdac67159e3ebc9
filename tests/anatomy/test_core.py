"""What the lab and the exercises ask of an analysis besides its table: the variant a profiler or a
training step names, a sweep's default values and targets, and the Lab's stage and sweep of an
Anatomy it already has. Read back from the session's compiles (conftest.shipped)."""

import pytest

from tinylab.anatomy import TARGETS, sweep, sweep_values
from tinylab.anatomy.launches import Launch, TensorArg
from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.service.lab import Lab


@pytest.fixture
def bf16(shipped):
    return shipped["default-bf16"][0]


@pytest.fixture
def lab(tmp_path, cache_home, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))  # the session's compiles
    return Lab(tmp_path / "runs")


def test_sweep_values_center_on_what_the_step_launches():
    launch = Launch("m:_k_kernel", (("X", TensorArg("float32")), ("BLOCK_N", 64), ("ROWS", 3), ("ONE", 1),
                                    ("num_warps", 4)), ("BLOCK_N", "ROWS", "ONE"), "src")
    gfx942, sm_90 = TARGETS["gfx942"], TARGETS["sm_90"]
    assert sweep_values(launch, gfx942, "BLOCK_N") == [16, 32, 64, 128, 256]
    assert sweep_values(launch, gfx942, "ONE") == [1, 2, 4]
    assert sweep_values(launch, gfx942, "ROWS") == [1, 3, 6]
    assert sweep_values(launch, gfx942, "num_warps") == [1, 2, 4, 8, 16]
    assert sweep_values(launch, gfx942, "waves_per_eu") == [0, 1, 2, 3, 4]
    with pytest.raises(UserError, match="cannot sweep 'waves_per_eu' on sm_90: choose one of BLOCK_N, ROWS, ONE, num_warps, num_stages"):
        sweep_values(launch, sm_90, "waves_per_eu")


def test_a_profilers_name_and_a_steps_config_pick_variants(bf16):
    assert [v.name for v in bf16.profiled("_attn_bwd_dq_kernel")] == ["attn_bwd_dq.1", "attn_bwd_dq.2"]
    assert [v.name for v in bf16.profiled("attn_fwd")] == ["attn_fwd"]
    assert bf16.profiled("triton_poi_fused_mul_silu_0") == []
    v3, v4 = RunConfig(version="v3", precision="bf16"), RunConfig(version="v4", precision="bf16")
    assert "UNROPE=False" in bf16.launched_by("attn_bwd_dkdv", v3).summary
    assert "UNROPE=True" in bf16.launched_by("attn_bwd_dkdv", v4).summary
    with pytest.raises(UserError, match="v4 launches rmsnorm_fwd in 2 ways"):
        bf16.launched_by("rmsnorm_fwd", v4)
    with pytest.raises(UserError, match="v3 does not launch cross_entropy"):
        bf16.launched_by("cross_entropy", v3)
    with pytest.raises(UserError, match="no planned step"):
        bf16.launched_by("attn_fwd", RunConfig(version="v1"))


def test_the_labs_stage_and_sweep_of_an_anatomy_it_has(lab, bf16):
    amdgcn = lab.kernel_stage(bf16, "attn_fwd", "gfx942", "amdgcn")
    assert ".amdgcn_target" in amdgcn and "v_mfma" in amdgcn
    points = lab.kernel_sweep(bf16, "attn_fwd", "sm_90", "BLOCK_N", [64])
    assert [(p.value, p.target, p.shipped) for p in points] == [(64, "sm_90", True)]
    assert points[0].report == bf16.variant("attn_fwd").reports["sm_90"]  # the table's own compile
    with pytest.raises(UserError, match="target 'gfx1100' was not compiled"):
        lab.kernel_sweep(bf16, "attn_fwd", "gfx1100", "BLOCK_N")
    with pytest.raises(UserError, match="cannot sweep 'kpack' on sm_90"):
        lab.kernel_sweep(bf16, "attn_fwd", "sm_90", "kpack")
    with pytest.raises(UserError, match="target 'gfx1100' was not compiled"):
        sweep(bf16, "attn_fwd", "BLOCK_N", [64], targets=["gfx1100"])

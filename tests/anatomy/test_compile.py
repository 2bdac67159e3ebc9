"""Compiling for GPUs on a CPU: the compiler's reports are read right, the hardware's limits hold,
the occupancy bounds explain LLVM's own figure, and TRITON_INTERPRET does not get in the way."""

import os

import pytest

from tinylab.anatomy import TARGETS, Cache, Pool, analyze
from tinylab.anatomy.compile import KernelReport, compile_key, compile_launch
from tinylab.anatomy.core import stage_text
from tinylab.anatomy.launches import Launch, TensorArg
from tinylab.anatomy.targets import get_target
from tinylab.config import RunConfig

KIB = 1024


def _reports(shipped, vendor=None):
    for anatomy, _ in shipped.values():
        for v in anatomy.variants:
            for t, r in v.reports.items():
                if r.ok and (vendor is None or TARGETS[t].vendor == vendor):
                    yield v, t, r


def test_amd_bounds_explain_llvms_occupancy(shipped):
    """LLVM's figure comes from registers and the launch (static LDS is 0: Triton's LDS is
    dynamic); the bounds computed from the same counts must give the same number."""
    for v, t, r in _reports(shipped, "amd"):
        bounds = r.occupancy.bounds
        assert min(bounds["VGPRs"], bounds["SGPRs"], bounds["launch"]) == r.occupancy.reported, f"{v.name} on {t}: {r}"
        assert r.occupancy.value == min(r.occupancy.reported, bounds["LDS"])


def test_hardware_limits_hold(shipped):
    for v, t, r in _reports(shipped):
        if TARGETS[t].vendor == "amd":
            # 512 VGPRs + AGPRs a lane (256 each at most), LDS within the CU (64 KiB on CDNA2/3)
            assert r.registers["VGPR"] <= 256 and r.registers["AGPR"] <= 256, v.name
            if t in ("gfx90a", "gfx942"):
                assert r.lds <= 64 * KIB, f"{v.name} on {t}"
            assert 1 <= r.occupancy.value <= 8
        else:
            assert r.registers["regs"] <= 255, v.name  # the most a thread can address
            assert 0 <= r.occupancy.value <= 64 and r.occupancy.value % r.num_warps == 0


def test_stages_are_the_targets_code(shipped, cache, pool):
    anatomy, _ = shipped["default-bf16"]
    amdgcn = stage_text(anatomy, "attn_fwd", "gfx942", "amdgcn", cache=cache, pool=pool)
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx942' in amdgcn and "v_mfma" in amdgcn  # matrix cores
    ptx = stage_text(anatomy, "attn_fwd", "sm_90", "ptx", cache=cache, pool=pool)
    assert ".target sm_90a" in ptx and "mma" in ptx
    sass = stage_text(anatomy, "attn_fwd", "sm_80", "sass", cache=cache, pool=pool)
    assert "HMMA" in sass  # tensor-core instructions in the machine code
    for stage in ("ttir", "ttgir", "llir"):
        assert "_attn_fwd_kernel" in stage_text(anatomy, "attn_fwd", "gfx90a", stage, cache=cache, pool=pool)


def test_a_report_kept_without_its_stages_is_compiled_again_for_them(shipped, cache, pool, tmp_path):
    """The tests seed their slowest compiles as reports alone: asking such an entry for a stage
    said "attn_fwd did not compile for gfx942: None". It compiles the kernel for its stages and
    keeps the report it had."""
    anatomy, _ = shipped["default-bf16"]
    key = compile_key(anatomy.variant("attn_fwd").launches["gfx942"], get_target("gfx942"))
    alone = Cache(tmp_path / "anatomy")
    alone.put_kernel(key, cache.get_report(key), {})
    assert alone.get_stage(key, "amdgcn") is None
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx942' in stage_text(anatomy, "attn_fwd", "gfx942", "amdgcn", cache=alone, pool=pool)
    assert "_attn_fwd_kernel" in alone.get_stage(key, "ttir") and alone.get_report(key) == cache.get_report(key)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="only an interpreter session has interpreted kernels")
def test_interpreted_kernels_are_refused_with_the_reason():
    launch = Launch("kernels.cross_entropy:_scale_kernel", (("BLOCK", 64),), ("BLOCK",), "")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET"):
        compile_launch(launch, "sm_90")


def test_a_second_call_starts_no_process(tmp_path, pool):
    from tinylab.anatomy import Cache

    cache = Cache(tmp_path)
    analyze(RunConfig(), ["gfx942"], kernels=["mean"], cache=cache, pool=pool)
    with Pool(1) as fresh:
        again = analyze(RunConfig(), ["gfx942"], kernels=["mean"], cache=cache, pool=fresh)
        assert not fresh.started, "everything was cached: no worker may start"
    assert again.variants[0].reports["gfx942"].ok


_PROBES = """
import triton
import triton.language as tl


@triton.jit
def lds_kernel(X, Y, M: tl.constexpr, N: tl.constexpr):
    rows, cols = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(X + rows[:, None] * N + cols[None, :])
    tl.store(Y + cols[:, None] * M + rows[None, :], tl.trans(x))  # the transpose goes through LDS


@triton.jit
def bad_kernel(X, BLOCK: tl.constexpr):
    tl.store(X + tl.arange(0, BLOCK), 1.0)
"""


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    """Compile results of two probe kernels, from workers spawned with TRITON_INTERPRET=1 set
    (as CI sets it): target -> report of a kernel staging 128 KiB in LDS, and the report of a
    kernel that cannot compile."""
    root = tmp_path_factory.mktemp("probes")
    (root / "anatomy_probes.py").write_text(_PROBES)
    x = TensorArg("float32")
    lds = Launch("anatomy_probes:lds_kernel", (("X", x), ("Y", x), ("M", 256), ("N", 128)), ("M", "N"), "probe")
    bad = Launch("anatomy_probes:bad_kernel", (("X", x), ("BLOCK", 3)), ("BLOCK",), "probe")
    jobs = [(lds, t) for t in ("gfx90a", "gfx942", "gfx950")] + [(bad, "sm_90")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITON_INTERPRET", "1")
        mp.syspath_prepend(str(root))  # spawned workers inherit sys.path and the environment
        with Pool(2) as pool:
            results = {(job[0].kernel, job[1]): result for _, _, job, result in pool.run(compile_launch, jobs)}
    return {t: r[0] for (k, t), r in results.items() if k.endswith("lds_kernel")}, results["anatomy_probes:bad_kernel", "sm_90"]


def test_lds_capacity_per_architecture(probes):
    """A kernel that stages a 256 x 128 fp32 tile (128 KiB) in LDS cannot launch on gfx90a or
    gfx942 (64 KiB a CU) and can on gfx950 (160 KiB a CU); it compiled with TRITON_INTERPRET=1
    set in the parent."""
    reports, _ = probes
    assert {t: r["lds"] for t, r in reports.items()} == {t: 256 * 128 * 4 for t in ("gfx90a", "gfx942", "gfx950")}
    assert reports["gfx90a"]["occupancy"]["value"] == reports["gfx942"]["occupancy"]["value"] == 0
    assert reports["gfx950"]["occupancy"]["value"] >= 1


def test_a_failed_compile_is_reported_not_raised(probes):
    _, (report, stages) = probes
    assert report["error"] and "\n" not in report["error"] and "power of 2" in report["error"]
    assert stages == {}


def test_lane_registers_are_what_one_lane_or_thread_holds():
    """The sweep chart's and the exercises' compiled_regs figure: AMD's VGPRs and AGPRs share one
    file a lane (SGPRs are the wave's), NVIDIA's registers are a thread's; a failed compile has none."""
    amd = KernelReport("gfx942", 4, {"VGPR": 140, "AGPR": 8, "SGPR": 78}, 0, 0, {"VGPR": 0, "SGPR": 0}, None)
    nvidia = KernelReport("sm_90", 4, {"regs": 125}, 0, 0, {"stores": 0, "loads": 0}, None)
    failed = KernelReport("gfx950", 4, {}, 0, 0, {}, None, "LLVM ERROR: cannot select")
    assert (amd.lane_registers, nvidia.lane_registers, failed.lane_registers) == (148, 125, None)

"""Targets and the occupancy rules, against facts from the vendors' documentation and examples
worked by hand (not against numbers taken from the code under test)."""

import pytest

from tinylab.anatomy.targets import TARGETS, amd_occupancy, get_target, nvidia_occupancy

KIB = 1024


def test_the_five_targets_and_their_vendors():
    assert {n: t.vendor for n, t in TARGETS.items()} == {
        "gfx90a": "amd", "gfx942": "amd", "gfx950": "amd", "sm_80": "nvidia", "sm_90": "nvidia",
    }
    assert [t.warp_size for t in TARGETS.values()] == [64, 64, 64, 32, 32]  # CDNA wave64, NVIDIA warp32


@pytest.mark.parametrize("name, lds", [("gfx90a", 64), ("gfx942", 64), ("gfx950", 160), ("sm_80", 164), ("sm_90", 228)])
def test_lds_and_shared_memory_per_unit(name, lds):
    # CDNA2/3 ISA guides: 64 KiB LDS per CU; CDNA4: 160 KiB; A100 164 KiB, H100 228 KiB per SM
    assert TARGETS[name].lds_bytes == lds * KIB


@pytest.mark.parametrize("name, units", [("gfx942", 304), ("sm_90", 132), ("sm_80", 108)])
def test_unit_counts_of_the_representative_gpus(name, units):
    # MI300X: 304 CUs; H100 SXM: 132 SMs; A100: 108 SMs
    assert TARGETS[name].units == units


def test_triton_targets():
    amd, nv = TARGETS["gfx942"].triton_target(), TARGETS["sm_90"].triton_target()
    assert (amd.backend, amd.arch, amd.warp_size) == ("hip", "gfx942", 64)
    assert (nv.backend, nv.arch, nv.warp_size) == ("cuda", 90, 32)


def test_unknown_target_names_the_choices():
    with pytest.raises(KeyError, match="gfx942, gfx950"):
        get_target("gfx1100")


def _amd(vgprs=32, sgprs=32, lds=0, num_warps=4, waves_per_eu=0, llvm=8, target="gfx942"):
    return amd_occupancy(TARGETS[target], vgprs, sgprs, lds, num_warps, waves_per_eu, llvm)


@pytest.mark.parametrize("vgprs, waves", [(9, 8), (64, 8), (65, 7), (128, 4), (129, 3), (256, 2), (257, 1), (512, 1)])
def test_amd_vgpr_bound(vgprs, waves):
    # 512 registers a lane per SIMD, allocated in blocks of 8, at most 8 waves (gfx90a and later)
    assert _amd(vgprs=vgprs).bounds["VGPRs"] == waves


@pytest.mark.parametrize("sgprs, waves", [(80, 8), (100, 8), (101, 7), (106, 7)])
def test_amd_sgpr_bound(sgprs, waves):
    assert _amd(sgprs=sgprs).bounds["SGPRs"] == waves


def test_amd_lds_bound_and_limiter():
    # 24 KiB per 4-wave workgroup: 2 workgroups fit 64 KiB, 8 waves over 4 SIMDs
    occ = _amd(lds=24 * KIB, llvm=8)
    assert (occ.bounds["LDS"], occ.value, occ.limiter) == (2, 2, "LDS")
    # the same on gfx950's 160 KiB: 6 workgroups, 24 waves, 6 a SIMD
    assert _amd(lds=24 * KIB, target="gfx950").bounds["LDS"] == 6
    # more than a CU holds: it cannot launch
    assert _amd(lds=65 * KIB).value == 0


def test_amd_occupancy_is_llvms_capped_by_dynamic_lds():
    occ = _amd(vgprs=156, llvm=3)
    assert (occ.value, occ.limiter, occ.reported) == (3, "VGPRs", 3)
    assert _amd(llvm=8).limiter == "none"
    assert _amd(vgprs=100, waves_per_eu=2, llvm=2).limiter == "launch"


@pytest.mark.parametrize(
    "regs, warps, shared, target, expected",
    [
        (32, 4, 0, "sm_90", 64),  # 32 x 2048 threads = the whole file: full occupancy
        (64, 4, 0, "sm_90", 32),  # 65536 / 64 = 1024 threads
        (128, 4, 0, "sm_90", 16),
        (255, 4, 0, "sm_90", 8),  # 255 -> 256 a thread, 8192 a warp: 2 warps per scheduler
        (33, 8, 0, "sm_90", 48),  # 33 x 32 = 1056 -> 1280 a warp: 12 per scheduler, 6 blocks of 8
        (32, 4, 100 * KIB, "sm_90", 8),  # 228 / (100 + 1 reserved) = 2 blocks
        (32, 4, 100 * KIB, "sm_80", 4),  # 164 / 101 = 1 block
        (32, 1, 0, "sm_90", 32),  # 32 blocks per SM at most, one warp each
    ],
)
def test_nvidia_occupancy_calculator(regs, warps, shared, target, expected):
    assert nvidia_occupancy(TARGETS[target], regs, shared, warps).value == expected


def test_nvidia_limiters():
    assert nvidia_occupancy(TARGETS["sm_90"], 128, 0, 4).limiter == "registers"
    assert nvidia_occupancy(TARGETS["sm_90"], 32, 100 * KIB, 4).limiter == "shared"
    assert nvidia_occupancy(TARGETS["sm_90"], 32, 0, 1).limiter == "launch"
    assert nvidia_occupancy(TARGETS["sm_90"], 32, 0, 4).limiter == "none"
    assert nvidia_occupancy(TARGETS["sm_90"], 32, 228 * KIB, 4).value == 0  # does not fit: no launch

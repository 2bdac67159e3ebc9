"""The GPUs the kernel anatomy compiles for, and how their limits turn a kernel's registers and
LDS/shared memory into an occupancy.

Occupancy is how many warps (NVIDIA) or waves (AMD) of a kernel one scheduler keeps resident at
once: while one waits hundreds of cycles on memory, the scheduler issues from another. It is
bounded by every per-unit resource a warp or workgroup holds for its whole life (registers,
LDS/shared memory, workgroup slots), so the smallest bound is the occupancy and names the
limiter. The numbers below are the hardware's, each with its source; an AMD kernel's own
occupancy is the one LLVM reports in the AMDGCN it emits (``; Occupancy:``), which these bounds
only explain (tests check that they agree).

Kept free of torch and triton: the CLI lists targets without importing either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# --------------------------------------------------------------------------------------- AMD
# LLVM AMDGPU (llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp, IsaInfo): for gfx90a and later
# CDNA (FeatureGFX90AInsts: gfx90a, gfx942, gfx950) getMaxWavesPerEU = 8 waves per SIMD,
# getEUsPerCU = 4 SIMDs per CU, getTotalNumVGPRs = 512 (VGPRs and AGPRs share one file per
# lane), getVGPRAllocGranule = 8; GCNSubtarget::getOccupancyWithNumVGPRs =
# min(512 / roundup(vgprs, 8), 8).
AMD_MAX_WAVES_PER_SIMD = 8
AMD_SIMDS_PER_CU = 4
AMD_VGPRS_PER_LANE = 512
AMD_VGPR_GRANULE = 8
# GCNSubtarget::getOccupancyWithNumSGPRs for gfx8/gfx9 (VOLCANIC_ISLANDS..GFX9, which includes
# CDNA): waves per SIMD by SGPRs per wave.
AMD_SGPR_OCCUPANCY = ((80, 10), (88, 9), (100, 8))
AMD_SGPR_OCCUPANCY_ABOVE = 7
# AMDGPUBaseInfo.cpp getMaxWorkGroupsPerCU: 40 single-wave workgroups, else min(40 / waves, 16)
# (16 barriers per CU).
AMD_MAX_WAVE_SLOTS_PER_CU = 40
AMD_MAX_BARRIERS_PER_CU = 16

# ------------------------------------------------------------------------------------ NVIDIA
# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (8.0 and 9.0
# alike): 64K 32-bit registers per SM, at most 64 resident warps and 32 resident blocks per SM.
# cuda_occupancy.h (CUDA 12): cudaOccRegAllocationGranularity = 256 registers per warp,
# cudaOccSubPartitionsPerMultiprocessor = 4 (the register file is split between the SM's four
# schedulers), cudaOccSMemAllocationGranularity = 128 bytes, and each block reserves
# reservedSharedMemPerBlock = 1 KiB of shared memory for the system.
NV_REGS_PER_SM = 65536
NV_REG_GRANULE = 256
NV_SUBPARTITIONS = 4
NV_MAX_WARPS_PER_SM = 64
NV_MAX_BLOCKS_PER_SM = 32
NV_SMEM_GRANULE = 128
NV_SMEM_RESERVED_PER_BLOCK = 1024
NV_WARP_SIZE = 32
AMD_WAVE_SIZE = 64


@dataclass(frozen=True)
class Target:
    """One GPU architecture to compile for, named as kernels._utils.device_arch names it.

    ``units`` is the CU (AMD; per GCD on MI250X, which ROCm shows as two devices) or SM
    (NVIDIA) count of ``gpu``, a representative part (H200 has H100's 132 SMs): it sizes
    the persistent grids of the launch code (the RMSNorm backward launches one program per
    unit), so a plan for this target launches what it would launch on that GPU.
    ``lds_bytes``: LDS per CU (AMD) or the most shared memory per SM (NVIDIA).
    """

    name: str
    vendor: str
    gpu: str
    units: int
    lds_bytes: int
    note: str = field(default="", compare=False)

    @property
    def amd(self) -> bool:
        return self.vendor == "amd"

    @property
    def warp_size(self) -> int:
        return AMD_WAVE_SIZE if self.amd else NV_WARP_SIZE

    @property
    def occupancy_unit(self) -> str:
        return "waves/SIMD" if self.amd else "warps/SM"

    def triton_target(self):
        """Triton's GPUTarget for this architecture (imports triton)."""
        from triton.backends.compiler import GPUTarget

        if self.amd:
            return GPUTarget("hip", self.name, AMD_WAVE_SIZE)
        return GPUTarget("cuda", int(self.name.removeprefix("sm_")), NV_WARP_SIZE)


TARGETS: dict[str, Target] = {
    # MI250X: 220 CUs over two GCDs, each its own device to ROCm (AMD Instinct MI250X data
    # sheet); LDS 64 KiB per CU (AMD "Instinct MI200" CDNA2 ISA guide, 2.x "LDS").
    "gfx90a": Target("gfx90a", "amd", "MI250X", 110, 64 * 1024, "CDNA2"),
    # MI300X: 304 CUs (AMD CDNA3 white paper); LDS 64 KiB per CU (AMD CDNA3 ISA guide, 2.x).
    "gfx942": Target("gfx942", "amd", "MI300X", 304, 64 * 1024, "CDNA3"),
    # MI355X: 256 CUs (AMD Instinct MI355X data sheet); LDS 160 KiB per CU (LLVM AMDGPU.td:
    # gfx950 has FeatureAddressableLocalMemorySize163840; AMD CDNA4 ISA guide).
    "gfx950": Target("gfx950", "amd", "MI355X", 256, 160 * 1024, "CDNA4"),
    # A100 SXM: 108 SMs; 164 KiB shared memory per SM, 163 KiB per block (NVIDIA Ampere tuning
    # guide, "Increased shared memory capacity").
    "sm_80": Target("sm_80", "nvidia", "A100", 108, 164 * 1024, "Ampere"),
    # H100 SXM (and H200): 132 SMs; 228 KiB shared memory per SM, 227 KiB per block (NVIDIA
    # Hopper tuning guide, "Increased shared memory capacity").
    "sm_90": Target("sm_90", "nvidia", "H100", 132, 228 * 1024, "Hopper"),
}


def get_target(name: str) -> Target:
    """The Target called ``name``; KeyError names the choices."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r}: choose from {', '.join(TARGETS)}") from None


@dataclass(frozen=True)
class Occupancy:
    """Resident waves per SIMD (AMD) or warps per SM (NVIDIA), the resource that limits it
    ("none" at the hardware's maximum), each resource's own bound in the same unit (the
    occupancy is their minimum), and the compiler's own figure where it reports one (LLVM's
    on AMD, which leaves out Triton's dynamic LDS; None on NVIDIA)."""

    value: int
    unit: str
    limiter: str
    bounds: dict[str, int]
    reported: int | None = None


def _limiter(value: int, bounds: dict[str, int], ceiling: int) -> str:
    if value >= ceiling:
        return "none"  # the hardware's maximum: nothing the kernel holds limits it
    tight = [name for name, bound in bounds.items() if bound == value]
    return "+".join(tight) if tight else "other"


def amd_occupancy(
    target: Target, vgprs: int, sgprs: int, lds: int, num_warps: int, waves_per_eu: int, llvm: int
) -> Occupancy:
    """Waves per SIMD of a kernel using ``vgprs`` (VGPRs + AGPRs, LLVM's
    NumVGPRsForWavesPerEU), ``sgprs`` (NumSGPRsForWavesPerEU) and ``lds`` bytes of LDS per
    workgroup of ``num_warps`` waves, launched with Triton's ``waves_per_eu`` option (0: none);
    ``llvm`` is LLVM's own ``; Occupancy:``.

    LLVM computes its occupancy from registers, the waves-per-EU request and static LDS only:
    Triton allocates its LDS dynamically (sized at launch), so the occupancy is LLVM's, further
    capped by the LDS bound. The bounds follow LLVM's formulas (see the constants above) and
    name the limiter; "launch" is what the workgroup size and waves_per_eu allow.
    """
    ceiling = AMD_MAX_WAVES_PER_SIMD
    rounded = math.ceil(max(vgprs, 1) / AMD_VGPR_GRANULE) * AMD_VGPR_GRANULE
    by_sgprs = next((w for limit, w in AMD_SGPR_OCCUPANCY if sgprs <= limit), AMD_SGPR_OCCUPANCY_ABOVE)
    slots = AMD_MAX_WAVE_SLOTS_PER_CU if num_warps == 1 else min(AMD_MAX_WAVE_SLOTS_PER_CU // num_warps, AMD_MAX_BARRIERS_PER_CU)
    groups = min(target.lds_bytes // lds, slots) if lds else slots
    bounds = {
        "VGPRs": min(ceiling, max(1, AMD_VGPRS_PER_LANE // rounded)),
        "SGPRs": min(ceiling, by_sgprs),
        # a workgroup's waves spread over the CU's SIMDs; none fits: 0 (it cannot launch)
        "LDS": min(ceiling, math.ceil(groups * num_warps / AMD_SIMDS_PER_CU)),
        # Triton passes "amdgpu-waves-per-eu"="W, W": LLVM takes W as the most it may reach
        "launch": min(ceiling, math.ceil(slots * num_warps / AMD_SIMDS_PER_CU), waves_per_eu or ceiling),
    }
    value = min(llvm, bounds["LDS"])
    return Occupancy(value, "waves/SIMD", _limiter(value, bounds, ceiling), bounds, llvm)


def nvidia_occupancy(target: Target, regs: int, shared: int, num_warps: int) -> Occupancy:
    """Resident warps per SM of a kernel using ``regs`` registers per thread and ``shared``
    bytes of shared memory per block of ``num_warps`` warps, by the CUDA occupancy calculator's
    rules (cuda_occupancy.h: cudaOccMaxBlocksPerSMRegsLimit, ...SmemLimit, ...WarpsLimit)."""
    regs_per_warp = math.ceil(regs * NV_WARP_SIZE / NV_REG_GRANULE) * NV_REG_GRANULE
    warps_by_regs = (NV_REGS_PER_SM // NV_SUBPARTITIONS // regs_per_warp) * NV_SUBPARTITIONS if regs_per_warp else NV_MAX_WARPS_PER_SM
    smem_per_block = math.ceil(shared / NV_SMEM_GRANULE) * NV_SMEM_GRANULE + NV_SMEM_RESERVED_PER_BLOCK
    blocks = {
        "registers": warps_by_regs // num_warps,
        "shared": target.lds_bytes // smem_per_block,
        "launch": min(NV_MAX_BLOCKS_PER_SM, NV_MAX_WARPS_PER_SM // num_warps),
    }
    bounds = {name: b * num_warps for name, b in blocks.items()}
    value = min(bounds.values())
    return Occupancy(value, "warps/SM", _limiter(value, bounds, NV_MAX_WARPS_PER_SM), bounds)

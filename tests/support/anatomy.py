"""A kernel anatomy as tinylab.anatomy.analyze returns one, made by hand in no time: five variants
on all five targets, with the numbers `tinylab kernels` printed for them (triton 3.7.1, the
workshop's model in fp32), a spill on NVIDIA and a compile error on gfx950; and the sweeps of it."""

from __future__ import annotations

import dataclasses

from tinylab.anatomy import TARGETS, Anatomy, KernelReport, Occupancy, SweepPoint, Variant
from tinylab.anatomy.launches import Launch, TensorArg
from tinylab.config import RunConfig

#: (variant, jit function, launch config, per target: registers, LDS, spills, occupancy, limiter),
#: numbers from `tinylab kernels` (triton 3.7.1, the workshop's model in fp32); AMD registers are
#: (VGPR, AGPR, SGPR), NVIDIA's one count a thread; a string is a compile error.
ANATOMY = [
    ("rmsnorm_fwd.1", "kernels.rmsnorm:_rmsnorm_fwd_kernel", {"BLOCK_N": 512, "num_warps": 4}, "HAS_RESIDUAL=False",
     {"gfx90a": ((15, 0, 28), 16, 0, 8, "none"), "gfx942": ((15, 0, 30), 16, 0, 8, "none"),
      "gfx950": ((15, 0, 30), 16, 0, 8, "none"), "sm_80": (20, 16, 0, 64, "none"), "sm_90": (21, 16, 0, 64, "none")}),
    ("rmsnorm_fwd.2", "kernels.rmsnorm:_rmsnorm_fwd_kernel", {"BLOCK_N": 512, "num_warps": 4}, "HAS_RESIDUAL=True",
     {"gfx90a": ((15, 0, 32), 16, 0, 8, "none"), "gfx942": ((14, 0, 46), 16, 0, 8, "none"),
      "gfx950": ((14, 0, 46), 16, 0, 8, "none"), "sm_80": (32, 16, 0, 64, "none"), "sm_90": (30, 16, 0, 64, "none")}),
    ("attn_fwd", "kernels.flash_attention:_attn_fwd_kernel", {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4},
     "", {"gfx90a": ((108, 0, 52), 8192, 0, 4, "VGPRs"), "gfx942": ((126, 0, 51), 8192, 0, 4, "VGPRs"),
          "gfx950": ((122, 0, 52), 8192, 0, 4, "VGPRs"), "sm_80": (90, 28800, 0, 20, "registers+shared"),
          "sm_90": (206, 28800, 0, 8, "registers")}),
    ("attn_bwd_dkdv.2", "kernels.flash_attention:_attn_bwd_dkdv_kernel", {"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 4},
     "UNROPE=True", {"gfx90a": ((104, 0, 60), 8192, 0, 4, "VGPRs"), "gfx942": ((122, 0, 64), 8192, 0, 4, "VGPRs"),
                     "gfx950": ((120, 0, 64), 8192, 0, 4, "VGPRs"), "sm_80": (128, 37120, 16, 16, "registers"),
                     "sm_90": (128, 37120, 16, 16, "registers")}),
    ("swiglu_fwd", "kernels.swiglu:_swiglu_fwd_kernel", {"BLOCK": 1024, "num_warps": 4}, "",
     {"gfx90a": ((32, 0, 28), 0, 0, 8, "none"), "gfx942": ((31, 0, 26), 0, 0, 8, "none"),
      "gfx950": "LLVM ERROR: cannot select", "sm_80": (31, 0, 0, 64, "none"), "sm_90": (31, 0, 0, 64, "none")}),
]


def _fake_report(target: str, numbers):
    if isinstance(numbers, str):
        return KernelReport(target, 4, {}, 0, 0, {}, None, numbers)
    regs, lds, spills, occ, limiter = numbers
    if target.startswith("gfx"):
        vgpr, agpr, sgpr = regs
        return KernelReport(target, 4, {"VGPR": vgpr, "AGPR": agpr, "SGPR": sgpr}, lds, 0,
                            {"VGPR": spills, "SGPR": 0}, Occupancy(occ, "waves/SIMD", limiter, {}, occ))
    return KernelReport(target, 4, {"regs": regs}, lds, spills, {"stores": spills, "loads": spills},
                        Occupancy(occ, "warps/SM", limiter, {}))


def fake_anatomy(precision: str = "fp32"):
    """An Anatomy of five variants on all five targets, as tinylab.anatomy.analyze returns it."""
    variants = []
    for name, kernel, config, summary, per_target in ANATOMY:
        params = (("X", TensorArg("float32")), ("stride_xm", 16), *config.items())
        constexprs = tuple(k for k in config if k.isupper())
        launches = {t: Launch(kernel, params, constexprs, "src", (1024, 1, 1)) for t in TARGETS}
        variants.append(Variant(name, kernel, ("v3",) if "rmsnorm" in name else ("v3", "v4"), summary, launches,
                                {t: _fake_report(t, n) for t, n in per_target.items()}))
    return Anatomy(RunConfig(version="v3", precision=precision), list(TARGETS.values()), {}, variants)


def fake_sweep(anatomy, name: str, target: str, param: str):
    """Points as tinylab.anatomy.sweep returns them: registers grow and occupancy falls with the value."""
    base = anatomy.variant(name).reports[target]
    shipped = dict(anatomy.variant(name).launches[target].params)[param]
    points = []
    for i, value in enumerate((shipped // 2, shipped, shipped * 2)):
        grown = {k: v + 40 * (i - 1) if k in ("VGPR", "regs") else v for k, v in base.registers.items()}
        occupancy = dataclasses.replace(base.occupancy, value=max(1, base.occupancy.value - i + 1))
        spills = {k: (4 if i == 2 else 0) for k in base.spills}
        points.append(SweepPoint(value, target, value == shipped,
                                 dataclasses.replace(base, registers=grown, occupancy=occupancy, spills=spills)))
    return points


def fake_compiles(monkeypatch) -> list:
    """tinylab.anatomy's analyze and sweep answered from this module (what the exercises' compiled
    checks call); returns the list of the calls they got. A kernel called "nope" is unknown, one
    called "crash" breaks the planning."""
    import tinylab.anatomy
    from tinylab.core.errors import UserError

    calls: list = []

    def analyze(cfg, targets, *, kernels, pool):
        calls.append(("analyze", cfg.precision, tuple(targets), tuple(kernels)))
        if "nope" in kernels:
            raise UserError("unknown kernel 'nope': choose one of attn_fwd, ...")
        if "crash" in kernels:
            raise RuntimeError("a planning worker died")
        return fake_anatomy(cfg.precision)

    def sweep(anatomy, name, param, values, *, targets, pool):
        calls.append(("sweep", name, param, tuple(values), tuple(targets)))
        return [p for p in fake_sweep(anatomy, name, targets[0], param) if p.value in values]

    monkeypatch.setattr(tinylab.anatomy, "analyze", analyze)
    monkeypatch.setattr(tinylab.anatomy, "sweep", sweep)
    return calls

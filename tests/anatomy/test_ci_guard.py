"""CI guard: every Triton kernel compiles, at every shipped launch configuration, for every
target, and nothing spills that did not spill before.

The shipped configs (tinylab.anatomy.launches.SHIPPED_CONFIGS) are compiled once per session
(conftest.shipped) for the targets conftest.TIERS gives them. A failure names the kernel
variant, the steps that launch it, the config and the target.
"""

import importlib

from kernels import _utils
from tinylab.anatomy import TARGETS
from tinylab.anatomy.launches import SHIPPED_CONFIGS, scenarios

# Spills that predate this guard, all in NVIDIA configs kept as they were tuned on an H200;
# a kernel may only leave this list.
KNOWN_SPILLS = {
    # exact-fp32 32x32 dK/dV with RoPE's inverse fused (v4 --no-sdpa in strict fp32): 16 bytes
    ("attn_bwd_dkdv", "default", "sm_90"): "exact fp32, S=128",
    # 64x64 dK/dV blocks at S <= 1024: 128 bytes
    ("attn_bwd_dkdv", "seq1024-bf16", "sm_90"): "bf16, S=1024",
}


def _base(name: str) -> str:
    return name.rsplit(".", 1)[0]


def _reports(shipped):
    for label, (anatomy, _) in shipped.items():
        for v in anatomy.variants:
            for target, report in v.reports.items():
                yield label, v, target, report


def test_the_shipped_configs_are_compiled_for_their_targets(shipped, tiers):
    assert set(shipped) == set(SHIPPED_CONFIGS)
    for label, (anatomy, _) in shipped.items():
        assert not anatomy.skipped, f"the installed Triton does not know {anatomy.skipped}"
        assert [t.name for t in anatomy.targets] == (tiers[label] or list(TARGETS))


def test_every_kernel_compiles_and_nothing_new_spills(shipped):
    problems = []
    for label, v, target, report in _reports(shipped):
        where = f"{v.name} (launched by {', '.join(v.scenarios)}) at config {label!r} on {target}"
        if not report.ok:
            problems.append(f"{where} does not compile: {report.error}")
        elif report.occupancy.value == 0:
            problems.append(f"{where} cannot launch: {report.lds} bytes of LDS/shared memory a block")
        elif report.spilled and (_base(v.name), label, target) not in KNOWN_SPILLS:
            problems.append(f"{where} spills {report.spills}, scratch {report.scratch} bytes")
    assert not problems, "\n".join(problems)


def test_known_spills_still_spill(shipped):
    """A spill that went away leaves KNOWN_SPILLS, so that it cannot come back unnoticed."""
    spilling = {(_base(v.name), label, target) for label, v, target, r in _reports(shipped) if r.spilled}
    assert set(KNOWN_SPILLS) <= spilling, f"no longer spill, remove from KNOWN_SPILLS: {set(KNOWN_SPILLS) - spilling}"


def test_every_kernel_is_compiled_for_every_target(shipped, tiers):
    full = [label for label, targets in tiers.items() if targets is None]
    compiled = {(v.kernel, t) for label in full for v in shipped[label][0].variants for t in v.reports}
    kernels = {v.kernel for anatomy, _ in shipped.values() for v in anatomy.variants}
    assert len(kernels) == 17  # every jit kernel of kernels/ (test_launches checks which)
    assert compiled == {(k, t) for k in kernels for t in TARGETS}


def test_shipped_configs_reach_every_flash_attention_config(shipped, tiers, monkeypatch):
    """Each config the attention selection can return, for any supported head size, sequence
    length and dot precision, is among the launches the shipped configs compile."""
    fa = importlib.import_module("kernels.flash_attention")
    monkeypatch.setattr(_utils, "GPU_CONFIG_IN_INTERPRETER", True)  # the GPU tables, not the interpreter's
    keys = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack")

    def shape(cfg: dict) -> tuple:
        return tuple(cfg.get(k) for k in keys)

    for target in ("gfx942", "sm_90"):
        possible = set()
        for d in fa.SUPPORTED_HEAD_DIMS:
            for s in (16, 128, 256, 257, 1024, 1025, 8192):
                for exact in (False, True):
                    fwd = fa._fwd_config(d, s, exact, target)
                    dkdv, dq = fa._bwd_config(d, s, exact, target)
                    possible |= {("attn_fwd", shape(fwd)), ("attn_bwd_dkdv", shape(dkdv)), ("attn_bwd_dq", shape(dq))}
        compiled = {
            (_base(v.name), shape(v.launches[target].config))
            for anatomy, _ in shipped.values() for v in anatomy.variants if v.name.startswith("attn") and target in v.launches
        }
        assert possible <= compiled, f"{target}: no shipped config compiles {sorted(possible - compiled)}"


def test_every_config_holds_every_scenario(shipped):
    for label, (anatomy, cfg) in shipped.items():
        used = {s for v in anatomy.variants for s in v.scenarios}
        assert used == set(scenarios(cfg)), label

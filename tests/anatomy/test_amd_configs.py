"""AMD launch configurations (item 4 of issue 16): the launch code picks its config by the device's
architecture; on gfx942 nothing spills and flash attention fits the CU's LDS at 2 waves per
SIMD or more wherever H100 reaches its own target; and the CDNA block shapes compute the same
attention (checked in the interpreter, which runs any block shape)."""

import importlib

import pytest
import torch

from kernels import _utils, flash_attention, flash_attention_qkv, rope_cos_sin
from kernels.reference import attention_reference, rope_reference

fa = importlib.import_module("kernels.flash_attention")

KIB = 1024
# CDNA3: 64 KiB of LDS per CU (AMD CDNA3 ISA guide); 2 waves per SIMD, the flash-attention goal
CDNA3_LDS = 64 * KIB
# H100's own target: 2 warps per scheduler, 8 warps on the SM's 4 schedulers
H100_TARGET_WARPS = 8


def test_launch_code_picks_the_devices_architecture(monkeypatch):
    class Props:
        gcnArchName, major, minor = "gfx942:sramecc+:xnack-", 9, 0

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: Props)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    cuda = torch.device("cuda", 0)
    for hip, expected in (("6.4", "gfx942"), (None, "sm_90")):
        monkeypatch.setattr(torch.version, "hip", hip)
        _utils._device_arch.cache_clear()
        assert _utils.device_arch(cuda) == expected
    _utils._device_arch.cache_clear()
    assert _utils.device_arch(torch.device("cpu")) is None


def test_amd_and_nvidia_get_their_own_configs(monkeypatch):
    monkeypatch.setattr(_utils, "GPU_CONFIG_IN_INTERPRETER", True)
    for d, s, exact in ((64, 128, False), (64, 2048, False), (128, 128, False), (64, 128, True), (128, 1024, True)):
        amd = fa._fwd_config(d, s, exact, "gfx942"), *fa._bwd_config(d, s, exact, "gfx942")
        nvidia = fa._fwd_config(d, s, exact, "sm_90"), *fa._bwd_config(d, s, exact, "sm_90")
        assert all(c["num_stages"] == 1 for c in amd)
        assert fa._fwd_config(d, s, exact, None) == nvidia[0]  # the interpreter's GPU config is NVIDIA's
        for cfg in amd + nvidia:  # the kernels' causal block constraints
            assert cfg["BLOCK_M"] % cfg["BLOCK_N"] == 0 or cfg["BLOCK_N"] % cfg["BLOCK_M"] == 0


def test_gfx942_spills_nothing(shipped):
    spills = [
        f"{v.name} at {label}: {r.spills}" for label, (anatomy, _) in shipped.items()
        for v in anatomy.variants for t, r in v.reports.items() if t == "gfx942" and (r.spilled or r.scratch)
    ]
    assert not spills, "\n".join(spills)


def test_gfx942_flash_attention_fits_lds_at_two_waves(shipped):
    misses = []
    for label, (anatomy, _) in shipped.items():
        for v in anatomy.variants:
            if not v.name.startswith("attn") or "gfx942" not in v.reports:
                continue
            amd = v.reports["gfx942"]
            assert amd.lds <= CDNA3_LDS, f"{v.name} at {label}: {amd.lds} bytes of LDS"
            nvidia = v.reports.get("sm_90")
            if nvidia is not None and nvidia.occupancy.value >= H100_TARGET_WARPS and amd.occupancy.value < 2:
                misses.append(f"{v.name} at {label}: {amd.occupancy} on gfx942, {nvidia.occupancy.value} warps/SM on sm_90")
    assert not misses, "\n".join(misses)


@pytest.fixture(params=[False, True], ids=["bf16-blocks", "fp32-dot-blocks"])
def cdna(request, monkeypatch):
    """The interpreter launching what a gfx942 would: GPU configs chosen for CDNA, sized for
    low-precision dots or for fp32 dots (the interpreter itself always computes in fp32).
    Yields the configs the attention kernels were launched with."""
    monkeypatch.setattr(_utils, "GPU_CONFIG_IN_INTERPRETER", True)
    monkeypatch.setattr(fa, "device_arch", lambda device: "gfx942")
    monkeypatch.setattr(fa, "_fp32_dots", lambda t, arch: request.param)
    used = []

    def recording(kernel, grid, *args, **kwargs):
        used.append({k: v for k, v in kwargs.items() if k.startswith(("BLOCK", "num_", "matrix_", "waves"))})
        return _utils.launch(kernel, grid, *args, **kwargs)

    monkeypatch.setattr(fa, "launch", recording)
    yield used
    assert used and all(cfg["num_stages"] == 1 for cfg in used), "the CDNA configs were not used"


def _close(out, ref, tol):
    err = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
    assert err < tol, err


@pytest.mark.parametrize("s, d", [(300, 16), (40, 128)])  # 64x64 / 64x32 / 32x64 blocks; the D=128 ones
def test_cdna_blocks_compute_attention(cdna, s, d):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, h, s, d, requires_grad=True) for h in (2, 1, 1))
    out = flash_attention(q, k, v, causal=True)
    qr, kr, vr = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref = attention_reference(qr, kr, vr, causal=True)
    _close(out, ref, 1e-5)
    grads = torch.autograd.grad(out, (q, k, v), torch.ones_like(out))
    ref_grads = torch.autograd.grad(ref, (qr, kr, vr), torch.ones_like(ref))
    for g, r in zip(grads, ref_grads):
        _close(g, r, 1e-5)


def test_cdna_blocks_compute_attention_off_the_fused_projection(cdna):
    torch.manual_seed(0)
    b, s, h, kvh, d = 1, 70, 2, 1, 32
    qkv = torch.randn(b, s, (h + 2 * kvh) * d, requires_grad=True)
    cos, sin = rope_cos_sin(s, d)
    out = flash_attention_qkv(qkv, cos, sin, h, kvh)
    ref_qkv = qkv.detach().double().requires_grad_()
    heads = ref_qkv.view(b, s, h + 2 * kvh, d)
    q, k = (rope_reference(heads[:, :, a:z], cos.double(), sin.double()).transpose(1, 2) for a, z in ((0, h), (h, h + kvh)))
    v = heads[:, :, h + kvh:].transpose(1, 2)
    ref = attention_reference(q, k, v, causal=True).transpose(1, 2).reshape(b, s, h * d)
    _close(out, ref, 1e-5)
    (grad,) = torch.autograd.grad(out, qkv, torch.ones_like(out))
    (ref_grad,) = torch.autograd.grad(ref, ref_qkv, torch.ones_like(ref))
    _close(grad, ref_grad, 1e-5)

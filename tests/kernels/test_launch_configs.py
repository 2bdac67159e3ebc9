"""Every kernel under every launch configuration, and the GPU launch parameters themselves.

The interpreter's configuration (many rows per program) and the GPU's (one row per program,
GPU block sizes) run different code paths of the same kernels; the ``launch`` fixture (see
conftest) runs these tests in each, so the GPU's path is checked on CPU-only machines too.
Shapes are small because the GPU configuration costs the interpreter one program per row.
"""

import importlib

import pytest
import torch
import triton

from kernels import (
    _utils,
    add_rmsnorm,
    cross_entropy,
    flash_attention,
    naive_swiglu_ffn,
    rmsnorm,
    rope,
    rope_cos_sin,
    swiglu,
)
from kernels.reference import (
    add_rmsnorm_reference,
    attention_reference,
    cross_entropy_reference,
    rmsnorm_reference,
    rope_reference,
    swiglu_ffn_reference,
    swiglu_reference,
)

# kernels re-exports functions under their modules' names: fetch the modules themselves.
rmsnorm_mod, swiglu_mod, rope_mod, ce_mod, naive_mod, fa_mod = (
    importlib.import_module(f"kernels.{name}")
    for name in ("rmsnorm", "swiglu", "rope", "cross_entropy", "naive_swiglu", "flash_attention")
)

DTYPES = [torch.float32, torch.bfloat16]
FP32_TOL = 3e-3 if torch.cuda.is_available() else 1e-4  # tf32 dots on NVIDIA GPUs


def _randn(*shape, dtype=torch.float32, device="cpu", scale=1.0):
    return (scale * torch.randn(*shape, device=device)).to(dtype).requires_grad_()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "column-major", "strided", "wide-rows"])
def test_rmsnorm(check, device, launch, monkeypatch, dtype, layout):
    w = (1 + 0.5 * torch.randn(200, device=device)).to(dtype).requires_grad_()
    if layout == "contiguous":
        x = _randn(2, 9, 200, dtype=dtype, device=device)
    elif layout == "column-major":
        x = _randn(200, 9, dtype=dtype, device=device).t()
    elif layout == "strided":
        x = _randn(2, 12, 256, dtype=dtype, device=device)[:, ::3, 16:216]
    else:
        monkeypatch.setattr(rmsnorm_mod, "MAX_FUSED_N", 64)
        x = _randn(11, 200, dtype=dtype, device=device)
    check(rmsnorm, rmsnorm_reference, [x, w], dtype=dtype, grad_inputs=[0, 1])


@pytest.mark.parametrize("case", ["bf16", "fp32", "non-contiguous", "wide-rows", "bf16-into-fp32"])
def test_add_rmsnorm(check, device, launch, monkeypatch, case):
    dtype = torch.bfloat16 if case.startswith("bf16") else torch.float32
    w = _randn(200, dtype=dtype, device=device)
    x, r = (_randn(2, 9, 200, dtype=dtype, device=device) for _ in range(2))
    if case == "non-contiguous":
        x, r = _randn(200, 9, device=device).t(), _randn(9, 256, device=device)[:, 50:250]
    elif case == "wide-rows":
        monkeypatch.setattr(rmsnorm_mod, "MAX_FUSED_N", 64)
    elif case == "bf16-into-fp32":
        r, w = _randn(2, 9, 200, device=device), _randn(200, device=device)
    check(add_rmsnorm, add_rmsnorm_reference, [x, r, w], dtype=dtype, grad_inputs=[0, 1, 2])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "column-major"])
def test_swiglu(check, device, launch, dtype, layout):
    if layout == "contiguous":
        gu = _randn(2, 9, 400, dtype=dtype, device=device, scale=2.0)
    elif layout == "strided":
        gu = _randn(2, 18, 512, dtype=dtype, device=device, scale=2.0)[:, ::2, 100:500]
    else:
        gu = _randn(400, 9, dtype=dtype, device=device, scale=2.0).t()
    check(swiglu, swiglu_reference, [gu], dtype=dtype, grad_inputs=[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "fused-qkv-slice", "head-blocks"])
def test_rope(check, device, launch, monkeypatch, dtype, layout):
    cos, sin = rope_cos_sin(16, 32, device=device)
    if layout == "contiguous":
        x = _randn(2, 9, 3, 32, dtype=dtype, device=device)
    elif layout == "transposed":
        x = _randn(2, 3, 9, 32, dtype=dtype, device=device).transpose(1, 2)
    elif layout == "fused-qkv-slice":
        x = _randn(2, 9, 3, 3, 32, dtype=dtype, device=device)[:, :, 1]
    else:
        # Two heads per program on a GPU: three head blocks, the last one ragged.
        monkeypatch.setattr(rope_mod, "MAX_BLOCK_ELEMS", 32)
        x = _randn(2, 9, 5, 32, dtype=dtype, device=device)
    check(rope, rope_reference, [x, cos, sin], dtype=dtype, grad_inputs=[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["one-block", "blocks", "strided-custom-ignore"])
def test_cross_entropy(check, device, launch, monkeypatch, dtype, case):
    n, v, ignore_index = 11, 300, -100
    logits = _randn(n, v, dtype=dtype, device=device, scale=3.0)
    if case == "blocks":
        monkeypatch.setattr(ce_mod, "MAX_BLOCK_V", 64)
    elif case == "strided-custom-ignore":
        logits, ignore_index = _randn(v, n, dtype=dtype, device=device, scale=3.0).t(), 7
    targets = torch.randint(0, v, (n,), device=device)
    targets[targets == ignore_index] = 8
    targets[1::4] = ignore_index
    check(
        lambda x, t: cross_entropy(x, t, ignore_index=ignore_index),
        lambda x, t: cross_entropy_reference(x, t, ignore_index=ignore_index),
        [logits, targets], dtype=dtype, grad_inputs=[0],
    )
    with torch.no_grad():
        torch.testing.assert_close(
            cross_entropy(logits, targets, ignore_index=ignore_index),
            cross_entropy_reference(logits, targets, ignore_index=ignore_index).float(),
            atol=1e-4, rtol=1e-4,
        )


def test_cross_entropy_all_ignored(device, launch):
    logits = torch.randn(5, 20, device=device, requires_grad=True)
    loss = cross_entropy(logits, torch.full((5,), -100, device=device))
    assert loss.isnan()
    g, = torch.autograd.grad(loss, logits)
    assert torch.equal(g, torch.zeros_like(g))


@pytest.mark.parametrize("dtype", DTYPES)
def test_naive_swiglu_ffn(check, device, launch, dtype):
    x = _randn(40, 5, dtype=dtype, device=device).t()
    w_gate = _randn(24, 40, dtype=dtype, device=device, scale=0.2)
    w_up = _randn(24, 80, dtype=dtype, device=device, scale=0.2)[:, ::2]
    check(naive_swiglu_ffn, swiglu_ffn_reference, [x, w_gate, w_up], dtype=dtype, grad_inputs=[0, 1, 2])


@pytest.mark.parametrize(
    "b,h,kvh,s,d,causal,dtype",
    [
        # Several blocks in every configuration (16 wide with small tiles): masked and unmasked
        # key ranges, a ragged end.
        (1, 2, 1, 70, 16, True, torch.float32),
        (1, 2, 2, 70, 32, False, torch.bfloat16),
        (1, 4, 2, 37, 16, True, torch.bfloat16),
    ],
)
def test_flash_attention(check, device, launch, b, h, kvh, s, d, causal, dtype):
    q, k, v = (_randn(b, heads, s, d, dtype=dtype, device=device) for heads in (h, kvh, kvh))
    check(
        lambda q, k, v: flash_attention(q, k, v, causal=causal),
        lambda q, k, v: attention_reference(q, k, v, causal=causal),
        [q, k, v], dtype=dtype, grad_inputs=[0, 1, 2],
        tol=FP32_TOL if dtype == torch.float32 else None,
    )


class _Recorder:
    """Stands in for a Triton kernel: records each launch (grid, launch options), runs nothing."""

    def __init__(self, name: str, log: list):
        self.name, self.log = name, log

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            options = {k: v for k, v in kwargs.items() if k.isupper() or k.startswith("num_")}
            options.pop("FP32_DOT", None)  # numerics, not launch shape
            self.log.append((self.name, tuple(grid), options))

        return launch


KERNELS = {
    rmsnorm_mod: ["_rmsnorm_fwd_kernel", "_rmsnorm_bwd_kernel"],
    swiglu_mod: ["_swiglu_fwd_kernel", "_swiglu_bwd_kernel"],
    rope_mod: ["_rope_kernel"],
    ce_mod: ["_cross_entropy_kernel"],
    naive_mod: ["_naive_swiglu_ffn_kernel"],
    fa_mod: ["_attn_fwd_kernel", "_attn_bwd_dkdv_kernel", "_attn_bwd_dq_kernel"],
}


def _gpu_launches(device):
    """(what, forward call, expected launches of its forward and backward). The expected grids
    and options are those of the GPU path before the interpreter got row tiles, plus ROWS=1
    (and COLS=1) where a kernel takes it now, and the RMSNorm backward's later options (a
    second dx dtype, multi-row tiles for narrow rows) and attention's backward (delta computed
    by the dQ kernel, which now runs first; RoPE's inverse as an option of both kernels; small
    blocks for exact-fp32 dots on short sequences)."""
    def t(*shape):
        return _randn(*shape, device=device)

    bwd_programs = _utils.sm_count(device) * rmsnorm_mod.BWD_PROGRAMS_PER_SM

    def norm(block, warps, single=True):
        return dict(ROWS=1, BLOCK_N=block, SINGLE_BLOCK=single, num_warps=warps)

    def attn(block_m, block_n, warps, stages=3):
        return dict(BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps, num_stages=stages)

    def norm_bwd(programs, rows, block, warps, single=True, **flags):
        return ("_rmsnorm_bwd_kernel", (min(programs, bwd_programs),), dict(
            flags, HAS_DX2=False, ATOMIC_DW=single, ROWS=rows, BLOCK_N=block, SINGLE_BLOCK=single, num_warps=warps,
        ))

    def narrow_norm_bwd(m, **flags):
        """Rows of <= 1024: a program per SM (at most one per 2 rows), each walking about 4
        tiles (a power of two rows, at most 4096 elements)."""
        programs = min(_utils.sm_count(device), -(-m // 2))
        quarter = max(1, -(-m // programs) // 4)
        rows = 1 << (quarter.bit_length() - 1)
        return ("_rmsnorm_bwd_kernel", (programs,), dict(
            flags, HAS_DX2=False, ATOMIC_DW=True, ROWS=rows, BLOCK_N=256, SINGLE_BLOCK=True,
            num_warps=4 if rows * 256 < 2048 else 8,
        ))

    cases = []
    # wide rows: one-row tiles, two tiles a program at least
    for n, block, warps, single, bwd in [
        (200, 256, 4, True, narrow_norm_bwd(37, HAS_DRESIDUAL=False)),
        (3000, 4096, 8, True, norm_bwd(19, 1, 4096, 8, HAS_DRESIDUAL=False)),
        (9000, 8192, 16, False, norm_bwd(19, 1, 8192, 16, single=False, HAS_DRESIDUAL=False)),
    ]:
        cases.append((f"rmsnorm N={n}", lambda n=n: rmsnorm(t(37, n), t(n)), [
            ("_rmsnorm_fwd_kernel", (37,), dict(HAS_RESIDUAL=False, **norm(block, warps, single))),
            bwd,
        ]))
    cases.append(("add_rmsnorm", lambda: add_rmsnorm(t(5, 7, 200), t(5, 7, 200), t(200)), [
        ("_rmsnorm_fwd_kernel", (35,), dict(HAS_RESIDUAL=True, **norm(256, 4))),
        narrow_norm_bwd(35, HAS_DRESIDUAL=True),
    ]))
    for f, block, col_blocks, warps in [(100, 128, 1, 4), (3000, 2048, 2, 8)]:
        cases.append((f"swiglu F={f}", lambda f=f: swiglu(t(37, 2 * f)), [
            ("_swiglu_fwd_kernel", (37, col_blocks), dict(ROWS=1, BLOCK=block, num_warps=warps)),
            ("_swiglu_bwd_kernel", (37, col_blocks), dict(STORE_Y=False, ROWS=1, BLOCK=block, num_warps=warps)),
        ]))
    for (b, s, h, d), block_h, head_blocks in [((2, 37, 12, 64), 16, 1), ((2, 5, 96, 128), 32, 3)]:
        grid, options = (b * s, head_blocks), dict(ROWS=1, BLOCK_H=block_h, BLOCK_D=d // 2, num_warps=4)
        cases.append((f"rope H={h} D={d}", lambda b=b, s=s, h=h, d=d: rope(t(b, s, h, d), *rope_cos_sin(s, d, device=device)), [
            ("_rope_kernel", grid, dict(INVERSE=False, **options)),
            ("_rope_kernel", grid, dict(INVERSE=True, **options)),
        ]))
    for v, block, warps in [(1000, 1024, 4), (32000, 4096, 8)]:
        cases.append((f"cross_entropy V={v}", lambda v=v: cross_entropy(t(13, v), torch.randint(0, v, (13,), device=device)), [
            ("_cross_entropy_kernel", (13,), dict(COMPUTE_GRAD=True, ROWS=1, BLOCK_V=block, num_warps=warps)),
        ]))
    for d, block_k in [(40, 64), (300, 128)]:
        cases.append((f"naive_swiglu D={d}", lambda d=d: naive_swiglu_ffn(t(3, d), t(24, d), t(24, d)), [
            ("_naive_swiglu_ffn_kernel", (72,), dict(ROWS=1, COLS=1, BLOCK_K=block_k, num_warps=1)),
        ]))
    # exact-fp32 dots: 32x32 blocks everywhere for short sequences at D <= 64
    small = attn(32, 32, 4, stages=2)
    for d, fwd, dq, dkdv in [(64, small, small, small), (128, attn(64, 64, 4), attn(128, 64, 8), attn(32, 64, 4))]:
        # grids are (batch * heads, blocks): every head's longest blocks start first
        dq_grid = (8, triton.cdiv(100, dq["BLOCK_M"]))
        cases.append((f"flash_attention D={d}", lambda d=d: flash_attention(t(2, 4, 100, d), t(2, 2, 100, d), t(2, 2, 100, d)), [
            ("_attn_fwd_kernel", (8, triton.cdiv(100, fwd["BLOCK_M"])), dict(CAUSAL=True, HEAD_DIM=d, **fwd)),
            ("_attn_bwd_dq_kernel", dq_grid, dict(CAUSAL=True, UNROPE=False, HEAD_DIM=d, **dq)),
            ("_attn_bwd_dkdv_kernel", (4, triton.cdiv(100, dkdv["BLOCK_N"])), dict(CAUSAL=True, UNROPE=False, HEAD_DIM=d, **dkdv)),
        ]))
    return cases


@pytest.mark.skipif(torch.version.hip is not None, reason="expected stage counts are NVIDIA's")
def test_gpu_launch_parameters_unchanged(device, monkeypatch):
    """The GPU path launches what it did before the interpreter's row tiles existed (kernels
    are replaced by recorders: nothing runs, so shapes can be GPU-sized)."""
    monkeypatch.setattr(_utils, "GPU_CONFIG_IN_INTERPRETER", True)
    log = []
    for module, names in KERNELS.items():
        for name in names:
            monkeypatch.setattr(module, name, _Recorder(name, log))
    for what, call, expected in _gpu_launches(device):
        log.clear()
        out = call()
        out = out if isinstance(out, tuple) else (out,)
        torch.autograd.backward(out, [torch.ones_like(o) for o in out])
        assert log == expected, what

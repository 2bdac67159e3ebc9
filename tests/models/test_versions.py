"""Every version computes the same function: same loss and same gradients from the same weights."""

import itertools

import pytest
import torch

from models import build_model, canonical_init
from tinylab.config import RunConfig

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SMALL = dict(hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=2, seq_len=16, vocab_size=211)
LOSS_RTOL = 1e-5  # fp32 end to end; the Triton kernels accumulate in fp32 too
GRAD_RTOL = 1e-4  # relative norm error per canonical parameter tensor


def loss_and_grads(version, seed=0, autocast=None, **kw):
    cfg = RunConfig(version=version, **SMALL, **kw).validate()
    model = build_model(cfg)
    model.load_canonical(canonical_init(model.config, seed))
    model.to(DEVICE)
    gen = torch.Generator().manual_seed(seed + 1)
    idx = torch.randint(0, cfg.vocab_size, (3, cfg.seq_len), generator=gen).to(DEVICE)
    tgt = torch.randint(0, cfg.vocab_size, (3, cfg.seq_len), generator=gen).to(DEVICE)
    with _strict_fp32():
        with torch.autocast(DEVICE.type, dtype=autocast, enabled=autocast is not None):
            loss = model(idx, tgt)
        loss.backward()
    return loss.item(), {k: v.cpu() for k, v in model.canonical_grads().items()}, model


class _strict_fp32:
    """No TF32 on GPUs, so the comparison is fp32 against fp32."""

    def __enter__(self):
        self.prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False

    def __exit__(self, *exc):
        torch.backends.cuda.matmul.allow_tf32 = self.prev


@pytest.fixture(scope="module")
def v1_reference():
    loss, grads, _ = loss_and_grads("v1")
    return loss, grads


def assert_same(reference, loss, grads):
    ref_loss, ref_grads = reference
    assert loss == pytest.approx(ref_loss, rel=LOSS_RTOL)
    assert set(grads) == set(ref_grads)
    for name, ref in ref_grads.items():
        assert ref.norm() > 0, f"{name}: reference gradient is zero, the test would prove nothing"
        err = ((grads[name] - ref).norm() / ref.norm()).item()
        assert err < GRAD_RTOL, f"{name}: relative gradient error {err:.2e}"


@pytest.mark.parametrize("qkv,sdpa,swiglu", list(itertools.product([False, True], repeat=3)))
def test_v2_toggles_compute_v1s_function(v1_reference, qkv, sdpa, swiglu):
    loss, grads, _ = loss_and_grads("v2", qkv_fusion=qkv, sdpa=sdpa, swiglu_fusion=swiglu)
    assert_same(v1_reference, loss, grads)


RECOMPUTE = [("v3", {"recompute_ffn": True}), ("v4", {"sdpa": False, "recompute_ffn": True})]


@pytest.mark.parametrize("version,kw", [("v3", {}), ("v4", {"sdpa": False}), ("v4", {"sdpa": True}), *RECOMPUTE])
def test_triton_versions_compute_v1s_function(v1_reference, version, kw):
    loss, grads, _ = loss_and_grads(version, **kw)
    assert_same(v1_reference, loss, grads)


# bf16 gradients against the fp32 reference: v1 under autocast lands near 1e-2 (its own
# rounding); the Triton versions must stay within a small multiple of that. (The Triton
# interpreter truncates fp32 -> bf16 where GPUs round to nearest, so CPU runs land higher.)
BF16_GRAD_RTOL = 5e-2


@pytest.mark.parametrize(
    "version,kw", [("v1", {}), ("v3", {}), ("v4", {"sdpa": False}), ("v4", {"sdpa": True}), *RECOMPUTE]
)
def test_bf16_autocast_tracks_the_fp32_function(v1_reference, version, kw):
    loss, grads, model = loss_and_grads(version, autocast=torch.bfloat16, **kw)
    ref_loss, ref_grads = v1_reference
    assert loss == pytest.approx(ref_loss, rel=1e-3)
    for name, ref in ref_grads.items():
        err = ((grads[name] - ref).norm() / ref.norm()).item()
        assert err < BF16_GRAD_RTOL, f"{name}: relative gradient error {err:.2e}"
    assert all(p.dtype == p.grad.dtype == torch.float32 for p in model.parameters())


def _tensor_casts(version, **kw) -> list[str]:
    """The tensor (not scalar) dtype casts of one bf16 autocast forward + backward, by parent op.

    Where the build has no bf16 GEMM with fp32 output (CPU), v4's weight-gradient GEMMs round
    to bf16 and cast: those casts are left out, as a GPU does not make them.
    """
    from torch.profiler import profile

    model = build_model(RunConfig(version=version, **SMALL, **kw).validate()).to(DEVICE)
    idx = torch.randint(0, SMALL["vocab_size"], (3, SMALL["seq_len"]), device=DEVICE)
    with profile(record_shapes=True) as prof:
        with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
            loss = model(idx, idx)
        loss.backward()
    casts = []
    for e in prof.events():
        parents, p = [], e.cpu_parent
        while p is not None:
            parents.append(p.name)
            p = p.cpu_parent
        if e.name == "aten::_to_copy" and e.input_shapes and e.input_shapes[0] and "mm_fp32_fallback" not in parents:
            casts.append(f"{e.input_shapes[0]} in {' < '.join(parents[1:3])}")
    return casts


def test_v4_bf16_casts_its_weights_once_per_step():
    """Autocast casts every weight at each use and every bf16 gradient back (2 casts a weight)
    plus each norm output and its gradient; v4 does one cast of its flat weight buffer."""
    v4 = _tensor_casts("v4", sdpa=False)
    v3 = _tensor_casts("v3")
    assert len(v4) <= 2, v4
    assert len(v3) > 4 * SMALL["num_layers"] * 2, v3  # what autocast alone does


def test_v4_weights_share_one_buffer_and_survive_a_move():
    """The flat buffer is rebuilt when the weights move (model.to), keeping the Parameters."""
    _, _, model = loss_and_grads("v4", autocast=torch.bfloat16)
    params_before = list(model.parameters())
    weights = model._gemm_weights()
    base = weights[0].untyped_storage().data_ptr()
    assert all(w.untyped_storage().data_ptr() == base for w in weights)
    model.to(torch.float64).to(torch.float32)
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        model(torch.zeros(1, 4, dtype=torch.long, device=DEVICE), torch.zeros(1, 4, dtype=torch.long, device=DEVICE))
    weights = model._gemm_weights()
    assert weights[0].untyped_storage().data_ptr() != base
    assert all(w.untyped_storage().data_ptr() == weights[0].untyped_storage().data_ptr() for w in weights)
    assert list(model.parameters()) == params_before


def _saved_activation_bytes(version, **kw) -> int:
    """Bytes of the distinct storages autograd keeps for the backward, parameters excluded."""
    cfg = RunConfig(version=version, **SMALL, **kw).validate()
    model = build_model(cfg).to(DEVICE)
    storages: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        # v4's first forward moves its weights into one flat buffer: look at where they are now
        if st.data_ptr() not in {p.untyped_storage().data_ptr() for p in model.parameters()}:
            storages[st.data_ptr()] = st.nbytes()
        return t

    idx = torch.randint(0, cfg.vocab_size, (3, cfg.seq_len), device=DEVICE)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(idx, idx)
    return sum(storages.values())


def test_v4_keeps_less_for_the_backward_than_v3():
    """v4 keeps no second copy of q and k (its attention keeps one rotated qkv buffer, not the
    projection too): per token and layer, (H + KVH) * D fewer values than v3, which keeps both."""
    v3, v4 = _saved_activation_bytes("v3"), _saved_activation_bytes("v4", sdpa=False)
    mc = build_model(RunConfig(version="v4", **SMALL).validate()).config
    per_token = (mc.num_heads + mc.num_kv_heads) * mc.head_dim
    expected = 3 * SMALL["seq_len"] * SMALL["num_layers"] * per_token * 4
    assert v3 - v4 >= expected, (v3, v4, expected)


@pytest.mark.parametrize("version,kw,dropped", [
    ("v3", {}, 3),  # gate_up (2 * ffn_dim) and the activation (ffn_dim)
    ("v4", {"sdpa": False}, 3),
])
def test_recompute_ffn_keeps_only_the_ffn_input(version, kw, dropped):
    """With recompute_ffn the FFN keeps its input (already kept) and nothing else: per token and
    layer, `dropped` * ffn_dim values fewer."""
    full = _saved_activation_bytes(version, **kw)
    lean = _saved_activation_bytes(version, recompute_ffn=True, **kw)
    mc = build_model(RunConfig(version=version, **SMALL).validate()).config
    assert full - lean == 3 * SMALL["seq_len"] * SMALL["num_layers"] * dropped * mc.ffn_dim * 4


def test_fused_layouts_round_trip():
    _, _, model = loss_and_grads("v2")
    state = model.canonical_state()
    assert "layers.0.attn.q_proj.weight" in state and "layers.0.ffn.up_proj.weight" in state
    twin = build_model(RunConfig(version="v2", **SMALL).validate()).to(DEVICE)
    twin.load_canonical(state)
    for (n, a), (_, b) in zip(model.named_parameters(), twin.named_parameters()):
        assert torch.equal(a, b), n


def test_parameter_tensor_counts():
    counts = {v: len(list(build_model(RunConfig(version=v, **SMALL).validate()).parameters())) for v in ("v1", "v2", "v3", "v4")}
    layers = SMALL["num_layers"]
    assert counts == {"v1": 9 * layers + 2, "v2": 6 * layers + 2, "v3": 6 * layers + 2, "v4": 6 * layers + 2}


def test_detached_backward_reproduces_the_reference_bug():
    _, grads, model = loss_and_grads("v3", fault="detached-backward")
    raw = {n: p.grad for n, p in model.named_parameters()}
    with_grad = [n for n, g in raw.items() if g is not None and g.abs().sum() > 0]
    assert with_grad == ["embed.weight"]


@pytest.mark.parametrize("deterministic", [False, True])
def test_v4_embedding_gradient_matches_torchs(deterministic):
    from models.v4_ultra import embed

    torch.manual_seed(0)
    weight = torch.randn(37, 24, device=DEVICE, requires_grad=True)
    idx = torch.randint(0, 37, (3, 29), device=DEVICE)
    idx[0, :5] = 7  # repeated tokens: the scatter must add, not overwrite
    upstream = torch.randn(3, 29, 24, device=DEVICE)
    ref = torch.autograd.grad(torch.nn.functional.embedding(idx, weight), weight, upstream)[0]
    prior = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic)
    try:
        out = embed(idx, weight)
        got = torch.autograd.grad(out, weight, upstream)[0]
    finally:
        torch.use_deterministic_algorithms(prior)
    assert torch.equal(out, torch.nn.functional.embedding(idx, weight))
    assert (out.grad_fn.name() == "_EmbeddingBackward") != deterministic  # kernels.embedding
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)  # atomics add in another order

"""v4's optimizer (models.flat_adamw): torch's AdamW, one kernel over the flat weight buffer."""

import pytest
import torch

from models import build_model, canonical_init
from models.flat_adamw import FlatAdamW
from tinylab.config import RunConfig

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SMALL = dict(hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=2, seq_len=16, vocab_size=211)
HYPER = dict(lr=1e-2, weight_decay=0.1)


def _v4(seed=0):
    cfg = RunConfig(version="v4", **SMALL).validate()
    model = build_model(cfg)
    model.load_canonical(canonical_init(model.config, seed))
    return model.to(DEVICE), cfg


def _batches(cfg, n):
    gen = torch.Generator().manual_seed(1)
    return [tuple(torch.randint(0, cfg.vocab_size, (3, cfg.seq_len), generator=gen).to(DEVICE) for _ in "xy")
            for _ in range(n)]


def _train(model, opt, batches, autocast):
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for x, y in batches:
            with torch.autocast(DEVICE.type, dtype=torch.bfloat16, enabled=autocast):
                loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


@pytest.mark.parametrize("autocast", [False, True])
@pytest.mark.parametrize("steps", [1, 3])
def test_flat_adamw_trains_like_torchs_adamw(autocast, steps):
    """Every parameter (flat GEMM weights, and the norm weights beside them) ends where torch's
    AdamW takes it from the same start and batches, and moved: to rounding after one step, and
    in fp32 on a CPU after three. Past one step, differences in the last bits of the weights (a
    GPU's atomics add in a varying order; under bf16 autocast a weight can round to the other
    bf16 neighbour: 6 of 170K here after one step) change the next gradients a little, and
    Adam's normalized update carries them on: the weights then agree as a whole (relative norm
    error ~1e-3, where a wrong bias correction or decay gives ~1e-1), not elementwise."""
    batches = _batches(_v4()[1], steps)
    model, _ = _v4()
    start = {n: p.detach().clone() for n, p in model.named_parameters()}
    _train(model, FlatAdamW(model, **HYPER), batches, autocast)
    twin, _ = _v4()
    _train(twin, torch.optim.AdamW(twin.parameters(), foreach=False, **HYPER), batches, autocast)
    for (name, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):
        assert not torch.equal(p, start[name]), f"{name} did not train"
        if steps > 1 and (autocast or DEVICE.type == "cuda"):
            moved = (q - start[name]).norm()
            assert (p - q).norm() / moved < 2e-2, name
        else:
            torch.testing.assert_close(p, q, rtol=0, atol=1e-6, msg=name)


def _grads(model):
    return {n: p.grad for n, p in model.named_parameters()}


def test_gradients_land_in_the_flat_buffer_and_accumulate():
    """After one backward every GEMM weight's .grad is its place in its layer's gradient buffer
    (no copy; the tied embedding excepted, which autograd sums from two uses) and the norm
    weights' gradients are rows of one buffer (zeroed by one kernel); a second backward without
    zero_grad adds to every gradient, as autograd does for any model."""
    model, cfg = _v4()
    (x1, y1), (x2, y2) = _batches(cfg, 2)
    model(x1, y1).backward()
    _, weights, grads = model.flat_weights()
    assert all(w.grad.data_ptr() == w.grad_home.slot().data_ptr() for w in weights[:-1])
    assert len(grads.bounds) == SMALL["num_layers"] + 1  # a buffer per layer, one for the embedding
    layer0 = {w.grad.untyped_storage().data_ptr() for w in weights[:4]}
    assert layer0 == {grads.buffers[0].untyped_storage().data_ptr()}
    norm_grads = [g for n, g in _grads(model).items() if n.endswith("norm.weight")]
    assert len(norm_grads) == 2 * SMALL["num_layers"] + 1
    assert len({g.untyped_storage().data_ptr() for g in norm_grads}) == 1
    first = {n: g.clone() for n, g in _grads(model).items()}
    model(x2, y2).backward()
    twin, _ = _v4()
    twin(x2, y2).backward()
    second = _grads(twin)
    for name, g in _grads(model).items():
        torch.testing.assert_close(g, first[name] + second[name], rtol=1e-5, atol=1e-6, msg=name)


def test_the_next_forward_uses_the_copy_the_optimizer_wrote():
    """Under autocast, FlatAdamW writes the bf16 weights the next forward computes with (no cast
    kernel); any other change to the weights (here load_canonical) makes the forward cast again."""
    model, cfg = _v4()
    opt = FlatAdamW(model, **HYPER)
    (x, y), = _batches(cfg, 1)
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        model(x, y).backward()
    opt.step()
    copy = model.low_precision_copy()
    flat, _, _ = model.flat_weights()
    torch.testing.assert_close(copy.float(), flat, rtol=torch.finfo(torch.bfloat16).eps, atol=0)
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        model(x, y)
    assert model.low_precision_copy() is copy
    model.load_canonical(canonical_init(model.config, 5))
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        model(x, y)
    assert model.low_precision_copy() is not copy
    torch.testing.assert_close(model.low_precision_copy(), model.flat_weights()[0].to(torch.bfloat16), rtol=0, atol=0)


def test_a_weight_without_gradient_is_named():
    model, cfg = _v4()
    opt = FlatAdamW(model, **HYPER)
    (x, y), = _batches(cfg, 1)
    model(x, y).backward()
    model.layers[0].attn.o_proj.weight.grad = None
    with pytest.raises(RuntimeError, match=r"weight of shape \(64, 64\) has no gradient"):
        opt.step()

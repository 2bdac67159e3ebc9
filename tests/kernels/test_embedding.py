import pytest
import torch
import torch.nn.functional as F

from kernels.embedding import embedding, embedding_backward


@pytest.mark.parametrize("shape,vocab,dim", [((3, 37), 11, 40), ((2, 5), 1000, 512), ((1, 1), 3, 1)])
def test_embedding_matches_torch(check, launch, device, shape, vocab, dim):
    """Forward and gradient against F.embedding in float64; few rows, many tokens: most rows
    receive several tokens, so the atomics really add."""
    idx = torch.randint(0, vocab, shape, device=device)
    weight = torch.randn(vocab, dim, device=device).requires_grad_()
    check(embedding, lambda i, w: F.embedding(i, w), [idx, weight], dtype=torch.float32, grad_inputs=[1])


def test_embedding_of_a_strided_weight(check, device):
    base = torch.randn(13, 2 * 33, device=device)
    weight = base[:, ::2].requires_grad_()
    idx = torch.randint(0, 13, (4, 9), device=device)
    check(embedding, lambda i, w: F.embedding(i, w), [idx, weight], dtype=torch.float32, grad_inputs=[1])


def test_backward_adds_into_out(launch, device):
    """embedding_backward accumulates (v4 adds the tied head's gradient first): out + the
    scatter-add of a strided gradient, rows that no token uses left as they were."""
    idx = torch.tensor([[4, 0, 4], [2, 4, 0]], device=device)
    grad = torch.randn(2, 3, 2 * 7, device=device)[..., ::2]
    out = torch.randn(6, 7, device=device)
    want = out.clone().index_add_(0, idx.reshape(-1), grad.reshape(-1, 7))
    got = embedding_backward(idx, grad, out)
    assert got.data_ptr() == out.data_ptr()
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out[[1, 3, 5]], want[[1, 3, 5]], rtol=0, atol=0)


@pytest.mark.parametrize("bad,match", [
    (dict(weight=torch.randn(5, 4, dtype=torch.float64)), "fp32"),
    (dict(idx=torch.zeros(3)), "token ids"),
])
def test_bad_inputs_are_named(device, bad, match):
    args = dict(idx=torch.zeros(3, dtype=torch.long), weight=torch.randn(5, 4)) | bad
    with pytest.raises(ValueError, match=match):
        embedding(args["idx"].to(device), args["weight"].to(device))

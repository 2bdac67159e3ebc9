"""A deterministic synthetic corpus that a working model can learn and a broken one cannot.

Random tokens (the reference workshop's data) keep the loss at ln(vocab) whatever the model
does, which hides a broken backward pass. Here each sequence repeats a short motif whose tokens
follow a Zipf-like law: the loss falls fast as the model learns the token frequencies, then
further as attention learns to copy the motif from one period back. Only a model whose
weights train gets there.
"""

from __future__ import annotations

import torch

CORPUS_SIZE = 1024
CORPUS_SEED = 1234


def make_corpus(vocab_size: int, seq_len: int, dataset: str = "patterns") -> torch.Tensor:
    """[CORPUS_SIZE, seq_len + 1] int64 tokens, the same on every machine."""
    gen = torch.Generator().manual_seed(CORPUS_SEED)
    if dataset == "random":
        return torch.randint(0, vocab_size, (CORPUS_SIZE, seq_len + 1), generator=gen)
    ranks = torch.arange(1, vocab_size + 1, dtype=torch.float64)
    weights = 1.0 / ranks**1.1
    order = torch.randperm(vocab_size, generator=gen)  # which token ids are frequent
    rows = []
    for _ in range(CORPUS_SIZE):
        period = int(torch.randint(3, 17, (1,), generator=gen))
        motif = order[torch.multinomial(weights, period, replacement=True, generator=gen)]
        reps = (seq_len + 1 + period - 1) // period
        rows.append(motif.repeat(reps)[: seq_len + 1])
    return torch.stack(rows)


class Batches:
    """Batch i is the same for every version and device: inputs, next-token targets. Each rank of a
    run of several draws its own batches (rank 0 the ones a single process would)."""

    def __init__(self, corpus: torch.Tensor, batch_size: int, seed: int, device: torch.device, rank: int = 0):
        self.corpus = corpus.to(device)
        self.batch_size = batch_size
        self.seed = seed
        self.device = device
        self.rank = rank

    def get(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step + (self.rank << 53))
        idx = torch.randint(0, self.corpus.shape[0], (self.batch_size,), generator=gen)
        rows = self.corpus[idx.to(self.device)]
        # Contiguous, so every step's inputs have the same strides: a compiled model would
        # otherwise recompile when a graph capture feeds it a differently laid out buffer.
        return rows[:, :-1].contiguous(), rows[:, 1:].contiguous()

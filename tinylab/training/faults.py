"""The catalogue of teaching faults (`--fault NAME`): what each changes, where, and what shows it.

Each fault is a small, honest change of the real code path, implemented where that code lives
(named below), so a learner who reads the code finds an ordinary-looking bug, not a switch.
The reference workshop described these stages in prose only; two of its stories were physically
wrong, and the effects listed here are the ones our runs really show.
"""

from __future__ import annotations

from dataclasses import dataclass

from tinylab.config import FAULTS


@dataclass(frozen=True)
class Fault:
    name: str
    versions: tuple[str, ...]
    where: str
    change: str
    symptom: str
    observable_on: str  # "cpu" (any machine) or "gpu" (needs a GPU's asynchrony or memory system)


CATALOGUE: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "missing-init",
            FAULTS["missing-init"],
            "models/common.py canonical_init(default_init=True)",
            "PyTorch's module defaults instead of N(0, 0.02): the tied embedding starts N(0, 1)",
            "initial loss several times ln(vocab): the output projection (the tied embedding) turns "
            "unit-scale hidden states into logits with a standard deviation of about sqrt(hidden)",
            "cpu",
        ),
        Fault(
            "non-contiguous",
            FAULTS["non-contiguous"],
            "models/v3_triton.py TritonRMSNorm / models/v4_ultra.py _add_norm (column_major)",
            "the norm kernel receives a column-major copy of its input; it honours strides, so the "
            "values stay right, but each row's loads are strided instead of coalesced",
            "same loss as the fixed run; the norm kernels and an extra transpose copy take longer "
            "(a GPU memory-system effect: uncoalesced loads)",
            "gpu",
        ),
        Fault(
            "unsynced-timing",
            FAULTS["unsynced-timing"],
            "tinylab/training/device.py PhaseTimer(sync=...)",
            "forward/backward/optimizer times are read from the host clock without synchronizing "
            "the device; only the step total waits for the GPU",
            "fwd + bwd + opt is far below the step time: the phases measure kernel launches, "
            "not kernels, where the GPU sets the pace (on a CPU the work is synchronous, and in a "
            "launch-bound step the host takes as long as the kernels, so the numbers agree there)",
            "gpu",
        ),
        Fault(
            "naive-triton-swiglu",
            FAULTS["naive-triton-swiglu"],
            "models/v3_triton.py SwiGLU -> kernels/naive_swiglu.py",
            "the FFN's gate/up GEMM and activation become one Triton kernel in which every output "
            "element computes its own dot product, instead of a cuBLAS/rocBLAS GEMM",
            "forward several times slower; the profiler's top kernel is the naive SwiGLU kernel",
            "gpu",
        ),
        Fault(
            "detached-backward",
            FAULTS["detached-backward"],
            "models/v3_triton.py _call (and v4)",
            "the RMSNorm, attention and fused-norm kernels are launched outside autograd, as the "
            "reference workshop's v3/v4 did: their outputs carry no gradient",
            "the step looks faster (backward is nearly empty) and only the tied embedding trains: "
            "params_trained is 1 of params_total",
            "cpu",
        ),
        Fault(
            "straggler",
            FAULTS["straggler"],
            "tinylab/training/trainer.py Trainer._eager_step (tinylab/training/parallel.py straggle)",
            "the last rank spins on the host before each forward, twice as long as its previous step's "
            "work took, so its step takes three times as long: a slow rank, as a throttled GPU, a busy "
            "data loader or a noisy neighbour makes one",
            "every rank's step is as slow as the straggler's (they meet in the all-reduce); the straggler "
            "shows the long forward, the others a long backward spent waiting for it",
            "cpu",
        ),
    )
}

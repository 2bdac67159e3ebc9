"""A trivial kernel compiled to learn whether the installed Triton knows a target (worker only:
importing this module imports triton)."""

import triton
import triton.language as tl


@triton.jit
def probe_kernel(X, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs, mask=offs < N) + 1, mask=offs < N)

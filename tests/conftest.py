"""Test-wide set-up: Triton kernels run in the interpreter when no GPU is present.

TRITON_INTERPRET must be set before triton (and so kernels/) is first imported, which is why
it happens here, at collection time, and not in a fixture.
"""

import os

if "TRITON_INTERPRET" not in os.environ:
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"

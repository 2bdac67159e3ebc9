"""The bytes each Triton kernel launch really loads and stores, counted in the Triton interpreter.

The roofline's byte models claim the minimum traffic of each of our kernels (every input read
once, every output written once). In the interpreter every tl.load, tl.store and atomic goes
through InterpreterBuilder with the addresses of its unmasked lanes, so the unique addresses a
launch touches, times their element sizes, are exactly the bytes a perfectly cached GPU run
would move. `count_bytes()` patches those methods for the duration of a `with` block.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Iterator

import numpy as np


@contextlib.contextmanager
def count_bytes() -> Iterator[dict[str, list[tuple[int, int]]]]:
    """Yields {kernel name: [(bytes read, bytes written) per launch]}, filled as kernels run."""
    import triton.runtime.interpreter as interp

    log: dict[str, list[tuple[int, int]]] = defaultdict(list)
    launch: dict[str, list[tuple[np.ndarray, int]]] = {"r": [], "w": []}
    builder, executor = interp.InterpreterBuilder, interp.GridExecutor
    originals = (executor.__call__, builder.create_masked_load, builder.create_masked_store, builder.create_atomic_rmw)

    def unique_bytes(parts: list[tuple[np.ndarray, int]]) -> int:
        by_size: dict[int, list[np.ndarray]] = defaultdict(list)
        for addresses, size in parts:
            by_size[size].append(addresses)
        return sum(np.unique(np.concatenate(a)).size * size for size, a in by_size.items())

    def note(kind: str, ptrs, mask) -> None:
        size = interp._get_np_dtype(ptrs.get_element_ty()).itemsize
        lanes = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data))
        launch[kind].append((np.asarray(ptrs.data)[lanes].ravel(), size))

    def call(self, *args, **kwargs):
        launch["r"], launch["w"] = [], []
        result = originals[0](self, *args, **kwargs)
        log[self.fn.__name__].append((unique_bytes(launch["r"]), unique_bytes(launch["w"])))
        return result

    def load(self, ptrs, mask, *args, **kwargs):
        note("r", ptrs, mask)
        return originals[1](self, ptrs, mask, *args, **kwargs)

    def store(self, ptrs, value, mask, *args, **kwargs):
        note("w", ptrs, mask)
        return originals[2](self, ptrs, value, mask, *args, **kwargs)

    def atomic(self, op, ptr, val, mask, *args, **kwargs):  # read-modify-write
        note("r", ptr, mask)
        note("w", ptr, mask)
        return originals[3](self, op, ptr, val, mask, *args, **kwargs)

    executor.__call__, builder.create_masked_load, builder.create_masked_store, builder.create_atomic_rmw = (
        call, load, store, atomic)
    try:
        yield log
    finally:
        executor.__call__, builder.create_masked_load, builder.create_masked_store, builder.create_atomic_rmw = originals

"""Worker processes for planning and compiling, with progress as jobs finish.

Why processes: Triton's compiler holds the GIL for seconds per kernel, so only processes
compile in parallel. Why spawned, with TRITON_INTERPRET removed before they import anything:
with TRITON_INTERPRET=1 (as CPU-only CI runs the tests), ``triton.jit`` makes interpreter
objects that triton.compile cannot compile ("'InterpretedFunction' object has no attribute
'cache_key'"), and a forked worker would inherit the parent's already-imported ones. Spawned
workers import kernels/ afresh without it. Planning in a worker is unaffected by the variable
either way (kernels._utils.planning ignores it).
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterable, Iterator


def _init_worker() -> None:
    os.environ.pop("TRITON_INTERPRET", None)


class Pool:
    """A lazily started process pool: a call whose work is all cached starts no process.

    ``workers`` defaults to the CPU count. Use as a context manager, or call close().
    """

    def __init__(self, workers: int | None = None):
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._executor: ProcessPoolExecutor | None = None

    def run(self, fn: Callable, jobs: Iterable[tuple]) -> Iterator[tuple[int, int, tuple, Any]]:
        """Run ``fn(*job)`` for every job; yield (done, total, job, result) as each finishes
        (in completion order). A job's exception is re-raised here, after the others finish
        or are cancelled."""
        jobs = list(jobs)
        if not jobs:
            return
        if self._executor is None:
            import multiprocessing

            self._executor = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
            )
        pending: dict[Future, tuple] = {self._executor.submit(fn, *job): job for job in jobs}
        done = 0
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    job = pending.pop(future)
                    done += 1
                    yield done, len(jobs), job, future.result()
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(cancel_futures=True)
            self._executor = None

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

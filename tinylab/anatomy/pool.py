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
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterable, Iterator


def _init_worker(quiet: bool) -> None:
    os.environ.pop("TRITON_INTERPRET", None)
    if quiet:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)


class Pool:
    """A lazily started process pool: a call whose work is all cached starts no process.

    ``workers`` defaults to the CPU count. Several threads may run() on one pool at once, which
    keeps its workers busy across callers. ``quiet`` sends what the workers print to /dev/null
    (a full-screen terminal app must not be drawn over; the results and errors come back
    anyway). Use as a context manager, or call close(). As with
    any spawned worker, a script that runs one must guard its entry point with
    ``if __name__ == "__main__":`` (the CLI and ``python -m`` entry points are safe).
    """

    def __init__(self, workers: int | None = None, *, quiet: bool = False):
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.quiet = quiet
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.RLock()  # a done-callback may run inside run()'s locked section
        self._inflight: dict[str, Future] = {}

    def _forget(self, key: str) -> None:
        with self._lock:
            self._inflight.pop(key, None)

    def run(self, fn: Callable, jobs: Iterable[tuple], keys: Iterable[str] | None = None) -> Iterator[tuple[int, int, tuple, Any]]:
        """Run ``fn(*job)`` for every job; yield (done, total, job, result) as each finishes
        (in completion order). With ``keys`` (one per job), a job whose key another caller
        has already submitted and not seen finish waits for that run instead of repeating it.
        A job's exception is re-raised here, after the others finish or are cancelled."""
        jobs = list(jobs)
        if not jobs:
            return
        keys = list(keys) if keys is not None else [None] * len(jobs)
        pending: dict[Future, tuple] = {}
        own: set[Future] = set()
        with self._lock:
            if self._executor is None:
                import multiprocessing

                self._executor = ProcessPoolExecutor(
                    self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                    initargs=(self.quiet,),
                )
            for job, key in zip(jobs, keys):
                future = self._inflight.get(key) if key is not None else None
                if future is None:
                    future = self._executor.submit(fn, *job)
                    own.add(future)
                    if key is not None:
                        self._inflight[key] = future
                        future.add_done_callback(lambda _, key=key: self._forget(key))
                pending[future] = job
        done, total = 0, len(pending)
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    job = pending.pop(future)
                    done += 1
                    yield done, total, job, future.result()
        finally:
            for future in pending.keys() & own:  # not the runs other callers wait on
                future.cancel()

    @property
    def started(self) -> bool:
        """Whether worker processes were started (none are while everything is cached)."""
        return self._executor is not None

    def close(self, kill: bool = False) -> None:
        """Stop the workers once their jobs are done, or at once with ``kill`` (an interrupted
        caller should not wait for a minute-long compile it no longer wants)."""
        with self._lock:
            if self._executor is None:
                return
            if kill:  # ProcessPoolExecutor.terminate_workers() only exists from Python 3.14
                for process in list(getattr(self._executor, "_processes", {}).values()):
                    process.terminate()
            self._executor.shutdown(wait=not kill, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(kill=exc_type is not None)

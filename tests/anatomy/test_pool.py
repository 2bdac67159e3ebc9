"""The worker pool: progress as jobs finish, one run for a key however many callers ask, errors
passed on, and workers that compile whatever the parent's TRITON_INTERPRET says."""

import os
import threading
import time

import pytest


def _append(path: str, token: str) -> str:
    with open(path, "a") as fh:
        fh.write(token + "\n")
    time.sleep(0.5)
    return token


def _fail(message: str) -> None:
    raise ValueError(message)


def _worker_state() -> tuple:
    import importlib

    fa = importlib.import_module("kernels.flash_attention")  # the package re-exports a function by that name
    return os.environ.get("TRITON_INTERPRET"), type(fa._attn_fwd_kernel).__name__


def test_progress_counts_every_job(pool, tmp_path):
    log = tmp_path / "log"
    seen = list(pool.run(_append, [(str(log), str(i)) for i in range(5)]))
    assert [done for done, *_ in seen] == [1, 2, 3, 4, 5] and {total for _, total, *_ in seen} == {5}
    assert sorted(result for *_, result in seen) == ["0", "1", "2", "3", "4"]
    assert sorted(log.read_text().split()) == ["0", "1", "2", "3", "4"]


def test_callers_of_one_key_share_one_run(pool, tmp_path):
    log = tmp_path / "log"
    results = []

    def caller() -> None:
        results.append([r for *_, r in pool.run(_append, [(str(log), "once")], keys=["the-key"])])

    threads = [threading.Thread(target=caller) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [["once"]] * 3
    assert log.read_text().split() == ["once"]


def test_a_failing_job_raises_in_the_caller(pool):
    with pytest.raises(ValueError, match="broken on purpose"):
        list(pool.run(_fail, [("broken on purpose",)]))


def test_workers_import_kernels_for_compiling(pool):
    """Whatever the parent's TRITON_INTERPRET (CI sets it), workers hold compilable kernels."""
    ((*_, state),) = list(pool.run(_worker_state, [()]))
    assert state == (None, "JITFunction")


def test_an_interrupted_caller_does_not_wait_for_running_jobs():
    import signal

    from tinylab.anatomy import Pool

    timer = threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGINT))  # Ctrl-C while the job runs
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        with Pool(1) as pool:
            timer.start()
            list(pool.run(time.sleep, [(60,)]))
    assert time.perf_counter() - started < 30

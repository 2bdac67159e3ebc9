"""How tinylab starts its own Python child processes: never importing from the caller's folder.

`python -m X` and `python -c ...` put the current folder first on sys.path, so a `torch.py`, a
`models/` or a `tinylab/` folder where the learner happens to stand would run inside tinylab's
child instead of the real package. Every child Python process tinylab starts gets `-P` (3.11+:
the folder stays off sys.path) and, where what it does does not depend on the caller's folder, a
private empty working folder (which is what keeps 3.10, without `-P`, safe too). Runs start in
their own run folder instead (tinylab.runs.launcher).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from typing import Iterator

#: Python flags of every process tinylab starts (see the module docstring).
SAFE_PATH: tuple[str, ...] = ("-P",) if sys.version_info >= (3, 11) else ()


def python(*args: str) -> list[str]:
    """argv of a child of this interpreter with the safe-path flag: python(\"-m\", \"tinylab\", \"doctor\")."""
    return [sys.executable, *SAFE_PATH, *args]


@contextlib.contextmanager
def neutral_cwd() -> Iterator[str]:
    """A private, empty folder for a child to start in (removed afterwards): nothing of the
    caller's folder can be imported from it, and nobody else can write into it."""
    with tempfile.TemporaryDirectory(prefix="tinylab-child-") as folder:
        yield folder


#: The niceness of a child that must not slow a run down (the lab's doctor child).
BACKGROUND_NICE = 19


def in_background(pid: int) -> None:
    """Give the child `pid` the least CPU priority: a probe the lab starts beside a run (the doctor
    imports torch for seconds) then takes only what the run leaves. At full priority it took a
    core from the learner's first run, which the run's load sampler marked busy. Best effort: a
    platform without setpriority, or a child already gone, keeps its priority."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, pid, BACKGROUND_NICE)


#: The most of a command's stdout (and of its stderr) that run_bounded keeps.
OUTPUT_LIMIT = 1 << 20


def run_bounded(argv: list[str], timeout: float, *, cwd: str | None = None,
                limit: int = OUTPUT_LIMIT) -> subprocess.CompletedProcess:
    """An external command (squeue, a profiler's --help, nvidia-smi ...) that may hang or flood:
    started in a session of its own with stdin closed, killed with everything it started when
    `timeout` seconds pass (subprocess.TimeoutExpired), its stdout and stderr kept up to `limit`
    bytes each, decoded as UTF-8 with replacement. OSError when it cannot start."""
    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=cwd, start_new_session=True)
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    try:
        with selectors.DefaultSelector() as sel:
            for pipe in kept:
                sel.register(pipe, selectors.EVENT_READ)
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in sel.select(left):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                    elif len(kept[key.fileobj]) < limit:
                        kept[key.fileobj] += chunk[: limit - len(kept[key.fileobj])]
        returncode = proc.wait(max(0.0, deadline - time.monotonic()))
    except BaseException:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        for pipe in kept:
            pipe.close()
    out, err = (bytes(kept[p]).decode("utf-8", "replace") for p in (proc.stdout, proc.stderr))
    return subprocess.CompletedProcess(argv, returncode, out, err)

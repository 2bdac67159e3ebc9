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
import sys
import tempfile
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

"""A folder full of code that must never run: what a learner's project folder may hold where they
start tinylab (a torch.py, a models/ package, even a tinylab/ folder of their own)."""

from __future__ import annotations

from pathlib import Path

#: Module files and packages that tinylab's children import (or that shadow tinylab itself).
NAMES = ("torch.py", "deepspeed.py", "models/__init__.py", "kernels/__init__.py", "tinylab/__init__.py",
         "tinylab/__main__.py")


def plant(folder: Path) -> Path:
    """Write the foreign code into `folder`; returns the sentinel file any of it writes when it runs."""
    sentinel = folder / "foreign-code-ran"
    for name in NAMES:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(sentinel)!r}, 'a').write({name!r} + '\\n')\nraise SystemExit(7)\n")
    return sentinel

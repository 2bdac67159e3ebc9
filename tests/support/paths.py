"""Where the test data lives."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
#: Real profiler outputs (every sub-folder has a SOURCE.txt).
FIX = TESTS / "fixtures"
#: Stand-in profiler executables.
BIN = TESTS / "profilers" / "bin"
#: Stand-in Slurm commands (sbatch, squeue, sacct, scancel, scontrol, srun).
SLURM_BIN = TESTS / "support" / "slurm_bin"


def deny(monkeypatch, folder: Path) -> None:
    """Make `folder` behave as a folder of someone else's with mode 000, also for root (who
    ignores modes): listing it, and looking at or opening anything inside it, raise
    PermissionError (EACCES); the folder itself can still be looked at, as a real one can."""
    import errno
    import os

    root = os.fspath(folder)
    below = root.rstrip(os.sep) + os.sep

    def guard(real, inside_only: bool = True):
        def call(path, *args, **kwargs):
            p = os.fspath(path) if isinstance(path, (str, bytes, os.PathLike)) else None
            if isinstance(p, str) and (p.startswith(below) or (not inside_only and p == root)):
                raise PermissionError(errno.EACCES, "Permission denied", p)
            return real(path, *args, **kwargs)
        return call

    for name in ("open", "lstat", "stat"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    for name in ("listdir", "scandir"):
        monkeypatch.setattr(os, name, guard(getattr(os, name), inside_only=False))

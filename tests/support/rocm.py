"""Fake ROCm installs for the stand-in profilers: <root>/bin/<tool> links to tests/profilers/bin and
<root>/.info/version, laid out as a real /opt/rocm-X.Y.Z, so the adapters find the release the way
they do on a real node and the stand-ins behave as that release (tests/profilers/bin/_standin.py)."""

from __future__ import annotations

from pathlib import Path

from support.paths import BIN

from tinylab.profilers import rocm_releases as rr

#: A release key -> the .info/version a real install of it writes (6.2 ones with a build suffix).
VERSIONS = {"6.2.0": "6.2.0-66", "6.2.2": "6.2.2-116", "6.3": "6.3.1", "6.4": "6.4.0", "7.0": "7.0.2", "7.1": "7.1.0"}


def rocm_tree(parent: Path, key: str) -> Path:
    """/opt/rocm-<version>-like folder for release `key`; returns its bin/ (put it first on PATH)."""
    version = VERSIONS[key]
    root = parent / f"rocm-{version}"
    (root / ".info").mkdir(parents=True, exist_ok=True)
    (root / ".info" / "version").write_text(version + "\n")
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    names = {"rocprofv3": "rocprofv3", rr.ROCPROF_SYS[key].runner: "rocprof-sys-run",
             rr.ROCPROF_COMPUTE[key].executable: "rocprof-compute"}
    for name, standin in names.items():
        link = bin_dir / name
        if not link.exists():
            link.symlink_to(BIN / standin)
    return bin_dir

"""Fake ROCm installs for the stand-in profilers, laid out as real ones so that the adapters find the
release the way they do on a node and the stand-ins behave as that release (tests/profilers/bin):
- a classic tree /opt/rocm-X.Y.Z with <root>/.info/version and bin/<tool> (6.x, 7.0-7.2);
- a TheRock native package /opt/rocm/core-<M.m> (7.9+; with a .info/version unless told otherwise,
  then named by its folder only; /opt/rocm/.info is never made);
- a pip install ("10.1-pip"): console scripts in <env>/bin that exec the tools in
  site-packages/_rocm_sdk_core/bin (rocprofv3) and _rocm_profiler/bin (rocprof-sys-run,
  rocprof-compute), _rocm_sdk_core/.info/version, and a `rocm-sdk` that answers `version`;
- a prefix outside any ROCm tree ("6.3-bare": a Spack or module install of rocprofiler-sdk in its own
  prefix) with no .info/version: only the stand-ins' own standin-release file says the release.
"""

from __future__ import annotations

import stat
from pathlib import Path

from support.paths import BIN

from tinylab.core import rocm_releases as rr

#: An install -> the version it is of (what its .info/version, folder or `rocm-sdk version` says).
VERSIONS = {"6.2.0": "6.2.0-66", "6.3": "6.3.1", "6.3-bare": "6.3.1", "6.4": "6.4.0", "7.0": "7.0.2", "7.2": "7.2.0",
            "7.14": "7.14.0", "10.1": "10.1.0", "10.1-pip": "10.1.0", "10.2": "10.2.0"}
#: The installs the whole CPU runs use (tests/profilers/test_release_runs.py): the oldest, 6.3 outside
#: any ROCm tree, the first rocpd one, the current 7.x, the last TheRock 7.x, 10.1 as a package and as a
#: pip install, and 10.2.
RUN_INSTALLS = ("6.2.0", "6.3-bare", "7.0", "7.2", "7.14", "10.1", "10.1-pip", "10.2")


def key_of(install: str) -> str:
    """The release table key an install behaves as."""
    return rr.release_key(VERSIONS.get(install, install))  # type: ignore[return-value]


def plain_version(install: str) -> str:
    """X.Y.Z of an install, as tinylab names it ("6.2.0-66" -> "6.2.0")."""
    return VERSIONS[install].split("-")[0]


def _link(folder: Path, name: str, standin: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / name).exists():
        (folder / name).symlink_to(BIN / standin)


def _script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def rocm_tree(parent: Path, install: str, *, version_file: bool = True) -> Path:
    """Lay out an install (a VERSIONS key, or a bare version such as "11.0.0") under `parent`; returns
    the bin/ folder to put first on PATH. `version_file`: whether a tree or package has .info/version."""
    version = VERSIONS.get(install, install)
    key = rr.release_key(version)
    names = {"rocprofv3": "rocprofv3", rr.ROCPROF_SYS[key].runner: "rocprof-sys-run",
             rr.ROCPROF_COMPUTE[key].executable: "rocprof-compute"}
    if install.endswith("-pip"):
        env = parent / f"venv-{version}"
        site = env / "lib" / "python3.12" / "site-packages"
        core = site / rr.PIP_CORE
        (core / ".info").mkdir(parents=True, exist_ok=True)
        (core / ".info" / "version").write_text(version + "\n")
        for name, standin in names.items():
            package = core if name == "rocprofv3" else site / "_rocm_profiler"
            _link(package / "bin", name, standin)
            _script(env / "bin" / name, f'exec "{package / "bin" / name}" "$@"')
        _script(env / "bin" / "rocm-sdk", f'[ "$1" = version ] && echo {version} && exit 0\nexit 2')
        return env / "bin"
    if install.endswith("-bare"):
        prefix = parent / "spack" / f"rocprofiler-sdk-{version}"
        for name, standin in names.items():
            _link(prefix / "bin", name, standin)
        (prefix / "standin-release").write_text(version + "\n")
        return prefix / "bin"
    major, minor, _ = rr.version_tuple(version)  # type: ignore[misc]
    therock = (major, minor) >= (7, 9)
    root = parent / "rocm" / f"{rr.THEROCK_PREFIX}{major}.{minor}" if therock else parent / f"rocm-{version}"
    if version_file:
        (root / ".info").mkdir(parents=True, exist_ok=True)
        (root / ".info" / "version").write_text(version + "\n")
    for name, standin in names.items():
        _link(root / "bin", name, standin)
    return root / "bin"

"""The ROCm release a profiler belongs to, asked in ways every release answers, and the base of
the three AMD adapters (rocprofv3, rocprof-sys, rocprof-compute).

`rocprofv3 --version` exists only from ROCm 7.0; asking it on 6.2-6.4 fails (argparse, exit 2) and
used to make a working tool look missing. So a tool is probed with what its every release accepts
(`rocprofv3 --help`, `rocprof-sys-run --version`, `rocprof-compute --version`), and its release is
read from the ROCm tree it is installed in (<rocm>/.info/version, written by rocm-core), else from
what the tool prints. The facts of that release (rocm_releases.py) then decide which flags the
adapter may pass and where the outputs land.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinylab.errors import UserError
from tinylab.profilers import rocm_releases as rr
from tinylab.profilers import base
from tinylab.profilers.base import _VENDOR_EVIDENCE, Availability, WrapperAdapter, probe, tail

_XYZ = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Release:
    """A ROCm release as found: its version, the table key its facts are under, and how it was learnt."""

    version: str  # "6.2.2", or "6.2" when only a tool's own version told it
    key: str  # a key of the rocm_releases tables
    source: str  # the file or command that told it

    @property
    def assumed(self) -> bool:
        """Newer than every release read: its tools are taken to behave as the newest known."""
        return rr.newer_than_known(self.version)

    @property
    def label(self) -> str:
        return f"ROCm {self.version}" + (f" (treated as {self.key}, the newest known)" if self.assumed else "")


def release_from_version(version: str, source: str) -> Release | None:
    m = _XYZ.search(version)
    if m is None:
        return None
    text = ".".join(g for g in m.groups() if g is not None)
    key = rr.release_key(text)
    return Release(text, key, source) if key else None


def rocm_roots(executable: str) -> list[Path]:
    """ROCm trees an executable may belong to: <root>/bin/<tool> as found on PATH (so /opt/rocm keeps
    pointing at the release it links to), then with links resolved, then the usual places."""
    path = Path(executable)
    return list(dict.fromkeys([path.parent.parent, path.resolve().parent.parent, *usual_roots()]))


def usual_roots() -> list[Path]:
    return ([Path(os.environ["ROCM_PATH"])] if os.environ.get("ROCM_PATH") else []) + [Path("/opt/rocm")]


def release_in(roots: list[Path]) -> Release | None:
    """The release in the first <root>/.info/version found."""
    for root in roots:
        path = root / rr.VERSION_FILE
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        release = release_from_version(text.splitlines()[0] if text else "", str(path))
        if release is not None:
            return release
    return None


def release_of_tree(executable: str) -> Release | None:
    return release_in(rocm_roots(executable))


#: Executables that live in a ROCm tree's bin/, any of which tells where the node's ROCm is.
ROCM_EXECUTABLES = ("rocprofv3", "rocprof-sys-run", "omnitrace-run", "rocprof-compute", "omniperf", "hipconfig",
                    "amd-smi", "rocminfo")


def node_release() -> Release | None:
    """The ROCm release of this node: the tree of a ROCm executable on PATH, else $ROCM_PATH or /opt/rocm."""
    for name in ROCM_EXECUTABLES:
        found = shutil.which(name)
        if found:
            release = release_of_tree(found)
            if release is not None:
                return release
    return release_in(usual_roots())


#: Where the amdgpu driver lists its compute nodes (CPUs and GPUs), one `properties` file each.
KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")


def gfx_name(target_version: int) -> str:
    """KFD's gfx_target_version as the architecture name LLVM and the profilers use: 90402 -> gfx942,
    90010 -> gfx90a (major, minor, stepping; the stepping in hex)."""
    return f"gfx{target_version // 10000}{target_version // 100 % 100}{target_version % 100:x}"


def kfd_gpus() -> list[str]:
    """The architecture of each GPU the driver lists, in node order (the HIP device order when no
    *_VISIBLE_DEVICES reorders it); CPU nodes, which have no SIMDs, are left out. [] without the driver."""
    archs = []
    nodes = sorted(KFD_NODES.glob("*/properties"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else -1)
    for props in nodes:
        try:
            fields = dict(line.split(None, 1) for line in props.read_text().splitlines() if " " in line)
            if int(fields.get("simd_count", "0")) > 0:
                archs.append(gfx_name(int(fields["gfx_target_version"])))
        except (OSError, KeyError, ValueError):
            continue
    return archs


def hip_mismatch(rocm: str, hip: str) -> str | None:
    """Why the HIP runtime inside the torch wheel and the node's ROCm would break its profilers, or None.

    ROCm's profilers intercept the HIP runtime the program loads, and a ROCm torch wheel brings its
    own (torch.version.hip). Within one major release its dispatch tables only grow, and the SDK
    copies what it knows; a newer runtime than the profilers', or another major release, is the
    combination reported to crash or to record nothing (docs/rocm-tools.md, "torch's HIP").
    """
    try:
        r = tuple(int(x) for x in rocm.split(".")[:2])
        h = tuple(int(x) for x in hip.split(".")[:2])
    except ValueError:
        return None
    if h == r or (h[0] == r[0] and h < r):
        return None
    which = "from another major release than" if h[0] != r[0] else "newer than"
    return (f"torch's HIP runtime {hip} is {which} ROCm {rocm}, whose profilers (rocprofv3, rocprof-sys, "
            f"rocprof-compute) intercept it: expect crashes or empty traces; install a torch wheel built for "
            f"ROCm {r[0]}.{r[1]} (https://download.pytorch.org/whl/rocm{r[0]}.{r[1]})")


class RocmToolAdapter(WrapperAdapter):
    """An AMD profiler whose flags and outputs depend on the ROCm release it ships with."""

    vendor = "amd"
    executables: tuple[str, ...] = ()  # the names it has had across releases, newest first
    probe_args: tuple[str, ...] = ("--version",)
    table: dict[str, Any] = {}  # release key -> facts

    def __init__(self) -> None:
        self._probed: tuple[str, int | None, str] | None = None
        self._release: Release | None = None

    def executable_path(self) -> str | None:
        for name in self.executables:
            found = shutil.which(name)
            if found:
                return found
        return None

    def argv0(self) -> str:
        path = self.executable_path()
        if path is None:
            raise UserError(f"{self.name}: {self._missing()}")
        return path

    def _missing(self) -> str:
        return " or ".join(self.executables) + " not found on PATH"

    def _probe(self) -> tuple[str, int | None, str] | None:
        if self._probed is None:
            path = self.executable_path()
            if path is None:
                return None
            self._probed = (path, *probe(path, self.probe_args))
        return self._probed

    def probe_ok(self, rc: int | None, output: str) -> bool:
        return rc == 0

    def release_from_output(self, path: str, output: str) -> Release | None:
        """The release the probe's output names, when the tree has no version file."""
        return None

    def version_from_output(self, output: str) -> str | None:
        return None

    def release(self) -> Release | None:
        """The ROCm release of the tool on PATH (None: not found, or it does not say)."""
        if self._release is None:
            probed = self._probe()
            if probed is None:
                return None
            path, rc, output = probed
            self._release = release_of_tree(path) or (self.release_from_output(path, output) if rc == 0 else None)
        return self._release

    def facts(self) -> Any:
        """This release's facts (rocm_releases.py); UserError when the tool or its release is unknown."""
        release = self.release()
        if release is None:
            probed = self._probe()
            if probed is None:
                raise UserError(f"{self.name}: {self._missing()}")
            raise UserError(f"{self.name}: cannot tell which ROCm release {probed[0]} belongs to "
                            f"(no {rr.VERSION_FILE} in its ROCm folder and its output names none)")
        return self.table[release.key]

    def available(self) -> Availability:
        probed = self._probe()
        if probed is None:
            return Availability(False, self._missing(), None)
        path, rc, output = probed
        if not self.probe_ok(rc, output):
            detail = output if rc is None else (tail(output) or f"exit code {rc}")
            return Availability(False, f"{path} {' '.join(self.probe_args)} failed: {detail}", None)
        version = self.version_from_output(output)
        release = self.release()
        if release is None:
            return Availability(False, f"{path} answers, but its ROCm release is unknown (no {rr.VERSION_FILE} "
                                       f"next to it, nothing in its output); set ROCM_PATH to its ROCm folder",
                                version)
        label = release.label
        if self.vendor not in base.gpu_vendors():
            found = " ".join(p for p in (Path(path).name, version, f"({label})") if p)
            reason = f"{found} found, but no AMD GPU is visible ({_VENDOR_EVIDENCE[self.vendor]} missing)"
            return Availability(False, reason, version, label)
        return Availability(True, None, version, label)

    def refuse(self, what: str, allowed: str = "") -> UserError:
        """The one-line error for something this release lacks, naming the release."""
        release = self.release()
        where = release.label if release else "this ROCm"
        return UserError(f"{self.name} of {where} {what}" + (f"; {allowed}" if allowed else ""))

    def option(self, flag: str) -> str:
        """`flag` if this release has it, else the one-line refusal (argv holds only accepted flags)."""
        if flag not in self.facts().options and flag not in self.facts().options.values():
            raise self.refuse(f"has no {flag} option", "it needs a release that has it (see docs/rocm-tools.md)")
        return flag

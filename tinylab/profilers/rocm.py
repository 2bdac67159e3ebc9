"""The ROCm release a profiler belongs to, and the base of the three AMD adapters (rocprofv3,
rocprof-sys, rocprof-compute).

What a tool accepts is asked of the tool (its --help, tinylab/profilers/rocm_help.py). Its release
says what help cannot (where its files land, counter passes per GPU) and names it in messages. It is
learnt, in this order, from:
- the ROCm tree the tool is installed in: <root>/.info/version (written by rocm-core: "X.Y.Z-<build>"
  or "X.Y.Z.P-<build>" on 6.x, "X.Y.Z" from 7.0), <root> being the folder above the tool's bin/ as
  found on PATH, then with links resolved; a TheRock package's /opt/rocm/core-<M.m> without one is
  named by its folder;
- a pip-installed ROCm: the tool is a console script in an environment's bin/, its tree is
  <env>/lib*/python3*/site-packages/_rocm_sdk_core (its .info/version), else `rocm-sdk version`;
- what the tool says of itself (rocprofv3 --version "rocm_version:", rocprof-sys --version
  "rocm: vM.m.x", rocprof-compute's version); where the tree and the tool disagree, the tool wins
  and the release says so;
- $ROCM_PATH or /opt/rocm.
A release newer than any read here works from its help; its file layouts are taken as the newest
read release's, and its label says so. A tool none of these tells the release of (rocprofv3 6.x in a
Spack or module prefix: no .info/version, no --version) works from its help too: the release is
needed only for what help cannot tell, so a guess is made (by the options its help lists, else the
newest release read), and its label says "release unknown: options from its help" and which guess.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tinylab.core.errors import UserError
from tinylab.core import rocm_releases as rr
from tinylab.profilers import base
from tinylab.profilers.base import _VENDOR_EVIDENCE, Availability, WrapperAdapter, tail
from tinylab.profilers.rocm_help import ToolHelp, ask, tool_help

_XYZ = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_THEROCK = re.compile(re.escape(rr.THEROCK_PREFIX) + r"(\d+\.\d+)")


@dataclass(frozen=True)
class Release:
    """A ROCm release as found: its version, the table key its facts are under, and how it was learnt."""

    version: str  # "6.2.2", or "6.2" when only a tool's own version told it
    key: str  # a key of the rocm_releases tables
    source: str  # the file or command that told it
    install: str = "ROCm tree"  # ROCm tree | TheRock package | pip install | the tool itself
    note: str = ""  # where the tree and the tool disagree
    #: nothing told the release (a tool outside any ROCm tree: a Spack or module prefix): what the
    #: file layouts are taken from, and why
    guess: str = ""

    @property
    def assumed(self) -> bool:
        """Newer than every release read: its layouts are taken as the newest known's."""
        return rr.newer_than_known(self.version)

    @property
    def label(self) -> str:
        if self.guess:
            return f"release unknown: options from its help (file layouts as ROCm {self.key}'s: {self.guess})"
        return f"ROCm {self.version}" + (f" (newer than any release read: options from its help, file layouts "
                                         f"as {self.key})" if self.assumed else "")

    @property
    def how(self) -> str:
        """How it was learnt, for people: "pip install, _rocm_sdk_core/.info/version"."""
        return f"{self.install}, {self.source}" + (f"; {self.note}" if self.note else "")


def release_from_version(version: str, source: str, install: str = "the tool itself") -> Release | None:
    m = _XYZ.search(version)
    if m is None:
        return None
    text = ".".join(g for g in m.groups() if g is not None)
    key = rr.release_key(text)
    return Release(text, key, source, install) if key else None


def _version_file(path: Path, install: str) -> Release | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except OSError:
        return None
    return release_from_version(text.splitlines()[0] if text else "", str(path), install)


def _install(root: Path) -> str:
    if root.name == rr.PIP_CORE:
        return "pip install"
    return "TheRock package" if _THEROCK.fullmatch(root.name) else "ROCm tree"


def release_in(roots: list[Path]) -> Release | None:
    """The release in the first <root>/.info/version found."""
    for root in roots:
        release = _version_file(root / rr.VERSION_FILE, _install(root))
        if release is not None:
            return release
    return None


def usual_roots() -> list[Path]:
    return ([Path(os.environ["ROCM_PATH"])] if os.environ.get("ROCM_PATH") else []) + [Path("/opt/rocm")]


def release_of_tree(executable: str, files_only: bool = False) -> Release | None:
    """The release of the ROCm an executable belongs to (see the module docstring), or None;
    `files_only`: read files, run nothing (not `rocm-sdk version`)."""
    path = Path(executable)
    own = list(dict.fromkeys([path.parent.parent, path.resolve().parent.parent]))
    found = release_in(own) or _pip_release(path, files_only)
    if found is None:
        named = next((m for m in (_THEROCK.fullmatch(root.name) for root in own) if m), None)
        if named:
            found = release_from_version(named.group(1), f"its folder name {named.group(0)}", "TheRock package")
    return found or release_in(usual_roots())


def _pip_release(path: Path, files_only: bool = False) -> Release | None:
    """A pip-installed ROCm next to a console script: site-packages/_rocm_sdk_core/.info/version of
    the environment whose bin/ holds it, else its `rocm-sdk version`."""
    env = path.parent.parent
    for lib in ("lib", "lib64"):
        for site in sorted((env / lib).glob("python3*/site-packages"))[:4]:
            found = _version_file(site / rr.PIP_CORE / rr.VERSION_FILE, "pip install")
            if found is not None:
                return found
    sdk = path.parent / "rocm-sdk"
    if sdk.is_file() and not files_only:
        rc, output = ask(str(sdk), ("version",))
        if rc == 0:
            return release_from_version(output.strip().splitlines()[0] if output.strip() else "", "rocm-sdk version",
                                        "pip install")
    return None


#: Executables that live in a ROCm tree's bin/, any of which tells where the node's ROCm is.
ROCM_EXECUTABLES = ("rocprofv3", "rocprof-sys-run", "omnitrace-run", "rocprof-compute", "omniperf", "hipconfig",
                    "amd-smi", "rocminfo")


def node_release() -> Release | None:
    """The ROCm release of this node: the tree of a ROCm executable on PATH, else $ROCM_PATH or /opt/rocm."""
    import shutil  # (shutil imports the compression modules: not at import, see tinylab/profilers/__init__.py)

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


def rocpd_measured(db: Path) -> tuple[tuple | None, str]:
    """(the measured steps' kernel table and their count, or None; what the table covers) of a rocpd
    database, cut by the trainer's ROCTx step ranges: its regions named after their message
    (rocprofiler-sdk of ROCm 10.1+, rocprof-sys 1.9+); the same reader as `tinylab hotspots`."""
    from tinylab.analysis.formats._base import FormatError  # pandas: after the run
    from tinylab.analysis.formats.rocpd import rocpd_steps
    from tinylab.core.steps import measured_kernels, step_windows

    whole = "the table covers the whole run, warm-up included"
    try:
        dispatches, ranges = rocpd_steps(db)
    except FormatError as exc:
        return None, f"{whole} (its step ranges could not be read: {exc})"
    measured = measured_kernels(*dispatches, step_windows(ranges))
    if measured is None:
        return None, (f"{whole} (no roctx step ranges in {db.name}: the trainer marks steps on a GPU only, and "
                      "rocprofiler-sdk names marker regions after their message from ROCm 10.1)")
    return measured, f"kernels of the {measured[1]} measured steps (ROCTx step ranges of {db.name}; warm-up left out)"


class RocmToolAdapter(WrapperAdapter):
    """An AMD profiler: argv from the options its help lists, file layouts from its release."""

    vendor = "amd"
    executables: tuple[str, ...] = ()  # the names it has had across releases, newest first
    probe_args: tuple[str, ...] = ("--version",)
    table: dict[str, Any] = {}  # release key -> facts

    def __init__(self) -> None:
        self._release: Release | None = None

    def executable_path(self) -> str | None:
        import shutil

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
        path = self.executable_path()
        return None if path is None else (path, *ask(path, self.probe_args))

    def probe_ok(self, rc: int | None, output: str) -> bool:
        return rc == 0

    def tool_release(self, path: str, output: str) -> Release | None:
        """The release the tool says it belongs to (its probe's output, or another question)."""
        return None

    def guess_release(self, path: str, output: str) -> Release | None:
        """A weaker answer for a tool outside any tree that names no release (rocprofv3 6.x, its help's
        options; rocprof-sys and rocprof-compute, their version through the CHANGELOGs)."""
        return None

    def version_from_output(self, output: str) -> str | None:
        return None

    def release(self) -> Release | None:
        """The ROCm release of the tool on PATH (None: not found, or nothing says)."""
        if self._release is None:
            probed = self._probe()
            if probed is None:
                return None
            path, rc, output = probed
            tree = release_of_tree(path)
            said = self.tool_release(path, output) if rc == 0 else None
            if tree and said and rr.version_tuple(tree.version)[:2] != rr.version_tuple(said.version)[:2]:  # type: ignore[index]
                said = replace(said, note=f"its {tree.install} says ROCm {tree.version} ({tree.source}): "
                                          "tinylab follows the tool")
            if said and tree and not said.note and said.version.count(".") > tree.version.count("."):
                said = replace(said, install=tree.install, note=f"{tree.source} agrees")  # 10.1.0 over core-10.1
            self._release = said if said and (tree is None or said.note) else tree
            if self._release is None and rc == 0:
                self._release = self.guess_release(path, output) or Release(
                    rr.RELEASES[-1], rr.RELEASES[-1], f"{Path(path).name} {' '.join(self.probe_args)}", "the tool itself",
                    guess="nothing it says names its release: the newest read")
        return self._release

    def facts(self) -> Any:
        """This release's facts (rocm_releases.py; a guessed release's where nothing tells it); UserError
        when the tool is missing or does not answer."""
        release = self.release()
        if release is None:
            probed = self._probe()
            if probed is None:
                raise UserError(f"{self.name}: {self._missing()}")
            raise UserError(f"{self.name}: {probed[0]} {' '.join(self.probe_args)} failed, so its ROCm release "
                            f"cannot be told: {tail(probed[2]) or f'exit code {probed[1]}'}")
        return self.table[release.key]

    def help(self, *args: str) -> ToolHelp:
        """What the installed tool lists in `<tool> [args] --help` (rocm_help.py)."""
        return tool_help(self.argv0(), (*args, "--help"))

    def who(self) -> str:
        """The tool, its version and release, for one-line messages: "rocprof-compute 3.9.0 (ROCm 10.1.0)"."""
        probed = self._probe()
        version = self.version_from_output(probed[2]) if probed and probed[1] == 0 else None
        release = self.release()
        return " ".join(p for p in (self.name, version, f"({release.label})" if release else "") if p)

    def need(self, help_: ToolHelp, *flags: str, purpose: str) -> str:
        """The first of `flags` the tool lists, else the one-line refusal naming them and the tool."""
        found = help_.first(*flags)
        if found is None:
            names = " nor ".join(flags) if len(flags) > 1 else flags[0]
            raise UserError(f"{self.who()} lists {'neither ' if len(flags) > 1 else 'no '}{names} in "
                            f"`{help_.command}`: tinylab needs it {purpose}")
        return found

    def capabilities(self) -> list[str]:
        """What tinylab found the installed tool can do, for `tinylab doctor` (one phrase each)."""
        return []

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
        label = release.label if release else "release unknown: options from its help"
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


"""What every profiler adapter provides, and the helpers they share.

An adapter is either in-process (it runs inside the trainer through hooks: PyTorch profiler,
DeepSpeed FLOPS profiler) or a wrapper (its argv is placed before the trainer's:
`rocprofv3 ... -- python -m tinylab.training.trainer ...`). Both end with `collect`, which turns the
tool's native output folder into the normalized kernel table.

Kept free of pandas/torch at import time: the CLI and the launcher import this to check
availability and build argv, which must stay fast.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager

from tinylab.core import childproc
from tinylab.core.errors import UserError
from tinylab.core.safeio import open_append, read_tail

if TYPE_CHECKING:
    import pandas as pd

    from tinylab.config import RunConfig

IN_PROCESS = "in-process"
WRAPPER = "wrapper"
KERNELS_FILE = "kernels.csv"


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str | None = None
    version: str | None = None
    release: str | None = None  # the ROCm (or toolkit) release the tool belongs to, e.g. "ROCm 6.2.2"


@dataclass
class CollectResult:
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> path (absolute or run-relative)
    table: "pd.DataFrame | None" = None
    note: str | None = None
    format: str | None = None
    steps: int | None = None  # training steps the kernel table covers, when the tool says
    passes: int | None = None  # times the tool ran the program (counter passes)


class ProfilerAdapter(ABC):
    """One profiler: whether it works here, and how its output becomes the kernel table.

    Subclass InProcessAdapter (hooks inside the trainer) or WrapperAdapter (argv before the
    trainer's); `kind` names which, for people (doctor's report).
    """

    name: str = ""
    kind: str = ""
    description: str = ""
    fix: str = ""

    @abstractmethod
    def available(self) -> Availability:
        """Whether the tool works on this machine, its version, or why not."""

    def check(self, config: "RunConfig") -> None:
        """Refuse, before anything starts, what this tool cannot do for `config` (one-line UserError)."""

    def backends(self) -> list[str] | None:
        """The ways the tool can measure, for the doctor's report (None: one way, nothing to list)."""
        return None

    def collect(self, out_dir: Path) -> CollectResult:
        """Artifacts and kernel table found in out_dir; a missing or unreadable table is a note."""
        artifacts = list_artifacts(out_dir)
        table, fmt, note = read_table(out_dir)
        return CollectResult(artifacts, table, note, fmt)


class InProcessHook:
    """Called by the trainer around every step; see tinylab/training/trainer.py for the call order.

    In CUDA-graph mode the trainer reports on_step_start/on_step_end but no on_forward_end,
    and its graph warm-up steps report only on_step_end: hooks must tolerate both.
    """

    name: str = ""

    def on_train_start(self, model: Any, device: Any) -> None:
        pass

    def on_step_start(self, step: int) -> None:
        pass

    def on_forward_end(self, step: int) -> None:
        pass

    def phase(self, name: str) -> ContextManager[Any]:
        """Entered around each phase of an eager step ("forward", "backward", "optimizer"): a tool
        that attributes kernels to scopes opens one here."""
        return contextlib.nullcontext()

    def on_step_end(self, step: int) -> None:
        pass

    def on_train_end(self) -> CollectResult:
        return CollectResult()


class InProcessAdapter(ProfilerAdapter):
    kind = IN_PROCESS

    @abstractmethod
    def make_hook(self, config: "RunConfig", out_dir: Path) -> InProcessHook:
        """The hook the trainer calls around every step, writing into out_dir."""


def dist_version(*dists: str) -> str | None:
    """The installed version of the first of these distributions that is installed, or None."""
    import importlib.metadata

    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


# ----------------------------------------------------------------------------- wrappers
def usable_cpus() -> int | None:
    """CPU cores this process may run on (its affinity: a Slurm job's, a container's or taskset's
    share); the doctor reports it, the machine checks against it, the trainer's load sampler counts
    the spare ones."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def gpu_vendors() -> set[str]:
    """GPU vendors whose device nodes are visible here (cheap: no driver library is loaded).

    TINYLAB_GPU_VENDORS (e.g. "amd,nvidia") overrides the detection, for containers that expose
    GPUs under other paths and for tests that drive stand-in profilers on a machine without one.
    """
    override = os.environ.get("TINYLAB_GPU_VENDORS")
    if override is not None:
        return {v.strip() for v in override.split(",") if v.strip()}
    vendors = set()
    if Path("/dev/nvidiactl").exists() or Path("/proc/driver/nvidia/version").exists():
        vendors.add("nvidia")
    if Path("/dev/kfd").exists():
        vendors.add("amd")
    return vendors


_VENDOR_LABEL = {"nvidia": "NVIDIA", "amd": "AMD"}
_VENDOR_EVIDENCE = {"nvidia": "/dev/nvidiactl", "amd": "/dev/kfd"}


class WrapperAdapter(ProfilerAdapter):
    kind = WRAPPER
    executable: str = ""
    vendor: str = ""  # "nvidia" or "amd": the tool profiles only that vendor's GPUs
    version_args: tuple[str, ...] = ("--version",)
    #: Its kernel table covers every step the run trained (the whole process), unless collect says
    #: otherwise: the supervisor then records that step count with the table.
    whole_run_table: bool = False

    def executable_path(self) -> str | None:
        return shutil.which(self.executable)

    def available(self) -> Availability:
        path = self.executable_path()
        if path is None:
            return Availability(False, f"{self.executable} not found on PATH", None)
        ok, version, detail = tool_version(path, self.version_args)
        if not ok:
            return Availability(False, f"{path} {' '.join(self.version_args)} failed: {detail}", None)
        if self.vendor not in gpu_vendors():
            found = " ".join(part for part in (self.executable, version) if part)
            reason = f"{found} found, but no {_VENDOR_LABEL[self.vendor]} GPU is visible ({_VENDOR_EVIDENCE[self.vendor]} missing)"
            return Availability(False, reason, version)
        return Availability(True, None, version)

    def argv0(self) -> str:
        return self.executable_path() or self.executable

    @abstractmethod
    def wrap_argv(self, out_dir: Path, config: "RunConfig") -> list[str]:
        """The tool's argv, to be followed by the trainer's; its output goes under out_dir."""

    def reruns_program(self, out_dir: Path) -> bool:
        """Whether the tool runs the program once per group of hardware counters. Asked inside the
        profiled program, so it reads files only: a tool started from there would be profiled too."""
        return False

    def planned_passes(self, out_dir: Path, arch: str | None) -> int | None:
        """How many runs of the program the tool will make (None: not known), for "pass k of N";
        files only, as reruns_program."""
        return None


_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)*(?:[-+.][0-9A-Za-z.]+)?")


def probe(path: str, args: tuple[str, ...], timeout: float = 30.0) -> tuple[int | None, str]:
    """(exit code, stdout + stderr) of `path args`; (None, why) when it could not run."""
    try:  # killed with whatever it started when it hangs; its output bounded
        proc = childproc.run_bounded([path, *args], timeout)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {timeout:.0f} s"
    except OSError as exc:
        return None, exc.strerror or str(exc)
    return proc.returncode, (proc.stdout or "") + "\n" + (proc.stderr or "")


def tail(output: str, limit: int = 200) -> str:
    """The end of a tool's output on one line, for a one-line reason."""
    return " ".join(output.split())[-limit:]


def tool_version(path: str, args: tuple[str, ...], timeout: float = 30.0) -> tuple[bool, str | None, str]:
    """(ran ok, version, output tail) of `path args`; the version is the first on a 'version' line."""
    rc, output = probe(path, args, timeout)
    if rc is None:
        return False, None, output
    if rc != 0:
        return False, None, tail(output) or f"exit code {rc}"
    lines = [line for line in output.splitlines() if line.strip()]
    ranked = [line for line in lines if "version" in line.lower()] + lines
    for line in ranked:
        m = _VERSION.search(line)
        if m:
            return True, m.group(0), ""
    return True, None, ""


# ----------------------------------------------------------------------------- collecting
def list_artifacts(out_dir: Path, limit: int = 200) -> dict[str, str]:
    """Every file the tool wrote under out_dir (except our own kernels.csv), by relative path."""
    artifacts: dict[str, str] = {}
    if not out_dir.is_dir():
        return artifacts
    for path in sorted(p for p in out_dir.rglob("*") if p.is_file()):
        if path == out_dir / KERNELS_FILE:
            continue
        artifacts[path.relative_to(out_dir).as_posix()] = str(path)
        if len(artifacts) >= limit:
            break
    return artifacts


def read_table(source: Path) -> tuple["pd.DataFrame | None", str | None, str | None]:
    """(table, format, note) from a native output file or folder; failures become the note."""
    from tinylab.analysis import formats  # pandas: only once a run has ended

    try:
        parsed = formats.load(Path(source))
    except UserError as exc:
        return None, None, f"no kernel table: {exc}"
    if parsed.format == "tinylab":  # only our own kernels.csv from an earlier collect: no native output
        return None, None, f"no native profiler output in {source}"
    return parsed.table, parsed.format, parsed.note


def run_tool(argv: list[str], log: Path, timeout: float = 600.0) -> tuple[bool, str]:
    """Run a post-processing step (nsys stats, rocprof-compute analyze); output goes to log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with os.fdopen(open_append(log, truncate=True), "w", encoding="utf-8") as fh:
            proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return False, f"{Path(argv[0]).name} {argv[1]} timed out after {timeout:.0f} s"
    except OSError as exc:
        return False, f"{Path(argv[0]).name}: {exc.strerror or exc}"
    if proc.returncode != 0:
        tail = " ".join(read_tail(log, 4096).decode("utf-8", "replace").split())[-200:]
        return False, f"{Path(argv[0]).name} {argv[1]} exited {proc.returncode}: {tail}"
    return True, ""


def profile_dir(run_dir: Path, tool: str, rank: int | None = None) -> Path:
    """Where a tool's output goes: profiles/<tool>, or profiles/<tool>/rank<k> for one rank of a run
    of several processes (each rank's output stays apart: tools are never merged across ranks)."""
    folder = Path(run_dir) / "profiles" / tool
    return folder if rank is None else folder / f"rank{rank}"


def write_kernel_table(run_dir: Path, tool: str, result: CollectResult, rank: int | None = None) -> dict[str, Any]:
    """Store the normalized table as <run_dir>/profiles/<tool>[/rank<k>]/kernels.csv; return the
    "profile" event fields, with paths relative to run_dir so a moved run folder still works."""
    from tinylab.core.kernel_table import (  # pandas, as above
        KERNEL_COLUMNS,
        build_table,
    )

    run_dir = Path(run_dir)
    out_dir = profile_dir(run_dir, tool, rank)
    out_dir.mkdir(parents=True, exist_ok=True)
    kernel_table = None
    if result.table is not None and len(result.table):
        table = build_table(result.table)  # re-derived: callers may hand in any per-name rows
        path = out_dir / KERNELS_FILE
        table[KERNEL_COLUMNS].to_csv(path, index=False)
        kernel_table = _relative(path, run_dir)
    return {
        "tool": tool,
        "artifacts": {name: _relative(Path(p), run_dir) for name, p in result.artifacts.items()},
        "kernel_table": kernel_table,
        "format": result.format,
        "note": result.note,
        "steps": result.steps,
        "passes": result.passes,
        **({} if rank is None else {"rank": rank}),
    }


def _relative(path: Path, run_dir: Path) -> str:
    try:
        return path.resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        return str(path)


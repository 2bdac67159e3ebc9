"""What every profiler adapter provides and declares, and the helpers they share.

An adapter is either in-process (it runs inside the trainer through hooks: PyTorch profiler,
DeepSpeed FLOPS profiler) or a wrapper (its argv is placed before the trainer's:
`rocprofv3 ... -- python -m tinylab.training.trainer ...`). Both end with `collect`, which turns the
tool's native output folder into the normalized kernel table.

A profiler is its adapter: the class declares the tool's settings (`Setting`: each a RunConfig
field, a flag and maybe a TINYLAB_* variable), whether it traces, its rank limit, what its table
covers, its artifact viewers and what it refuses in a config; RunConfig, the CLI's flags, the
environment defaults, the Lab's rows and the Hotspots screen's viewers are generated from them
(docs/profilers.md: adding a profiler).

Kept free of pandas/torch and of subprocess at import time: tinylab.config imports every adapter
for its declarations, and the CLI and the launcher import this to check availability and build
argv, which must stay fast.
"""

from __future__ import annotations

import contextlib
import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager, Protocol

from tinylab.core.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

IN_PROCESS = "in-process"
WRAPPER = "wrapper"
KERNELS_FILE = "kernels.csv"
#: What a kernel table covers (ProfilerAdapter.table_steps): the PyTorch profiler's active window
#: (tinylab.core.window.profile_schedule), or every step of the run.
WINDOW, RUN = "window", "run"
#: Most values a list setting takes (a flag repeated, the items of its variable).
MAX_VALUES = 8
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


class Config(Protocol):
    """What an adapter reads of a run's configuration. tinylab.config.RunConfig is built from the
    adapters' declarations (tinylab.config.config_class), so it sits above them and they name it by
    this: the run's steps and device, its effective toggles, the adapters it was built with, and
    each tool's own settings (the attributes its Setting declarations name)."""

    profilers: list[str]
    version: str
    precision: str
    tf32: bool
    device: str
    num_steps: int
    warmup_steps: int
    profile_steps: int
    cuda_graph: bool | None
    adapters: tuple[type["ProfilerAdapter"], ...]

    @property
    def graph_warmup_iters(self) -> int: ...

    def toggle(self, name: str) -> bool: ...

    def __getattr__(self, name: str) -> Any: ...


@dataclass(frozen=True)
class Setting:
    """One option of a tool, declared by its adapter: a RunConfig field (`name`, its config.json
    key), its flag and, where it has one, the TINYLAB_* variable (`env`) that defaults it where runs
    start (tinylab.config.env_defaults). RunConfig's field, the CLI's flag and the checks are
    generated from this; nothing else spells the setting out.

    - type: bool, int, str or list (of str); a str whose default is None may be unset.
    - flag: "--" and the name with dashes unless given; metavar: the flag's, where it shows one.
    - choices: the values allowed (of a str, or of each item of a list). A flag without a metavar
      shows them, and argparse refuses the others itself.
    - pattern: a regex every value (each item) must match whole; low, high: an int's range.
    - invalid: the message for a value not allowed ({flag}, {value!r}, {choices}); items: what a
      list holds, in "takes at most 8 <items>".
    - needs: the message when it differs from its default and the run does not use its tool
      ({flag}, {value}, {tool}).
    - split: what separates a list's items in its variable.
    - tool: the adapter's name, filled in when the adapter class is made.
    """

    name: str
    type: type
    default: Any
    help: str
    flag: str = ""
    metavar: str | None = None
    env: str | None = None
    split: str = ","
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    low: int = 0
    high: int = 0
    invalid: str = "{flag} {value!r}: choose from {choices}"
    items: str = "values"
    needs: str = "{flag} is a setting of {tool}: add --profile {tool}"
    tool: str = ""

    def __post_init__(self) -> None:
        if not self.flag:
            object.__setattr__(self, "flag", "--" + self.name.replace("_", "-"))
        if self.type is list:  # kept as a tuple: a declaration is never changed by a config that copies it
            object.__setattr__(self, "default", tuple(self.default))

    def default_value(self) -> Any:
        """Its default as a config holds it (a list a fresh one)."""
        return list(self.default) if self.type is list else self.default

    @property
    def annotation(self) -> Any:
        """Its RunConfig field's type."""
        if self.type is list:
            return list[str]
        return self.type | None if self.default is None else self.type

    def config_field(self) -> Any:
        """Its RunConfig field (a list's default a fresh copy for every config)."""
        if self.type is list:
            return field(default_factory=self.default_value)
        return field(default=self.default)

    def problem(self, value: Any) -> str | None:
        """Why `value` is no value of this setting (one line naming it), or None."""
        if self.type is bool:
            ok, why = isinstance(value, bool), "{flag} must be true or false, got {value!r}"
        elif self.type is int:
            ok = isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high
            why = "{flag} must be an integer from {low} to {high}, got {value!r}"
        elif self.type is list:
            if not isinstance(value, list) or len(value) > MAX_VALUES:
                return self._say("{flag} takes at most {most} {items}, got {value!r}", value)
            bad = [item for item in value if not self._allows(item)]
            return self._say(self.invalid, bad[0]) if bad else None
        else:
            ok, why = (value is None and self.default is None) or self._allows(value), self.invalid
        return None if ok else self._say(why, value)

    def unused(self, value: Any) -> str | None:
        """Why `value` is refused in a run that does not use the tool (None: it is the default)."""
        return None if value == self.default_value() else self._say(self.needs, value)

    def parse(self, raw: str) -> Any:
        """The value its variable's text `raw` (stripped, not empty) gives, in the field's type;
        ValueError with a one-line message naming the variable when it gives none."""
        if self.type is bool:
            if raw.lower() not in _TRUE + _FALSE:
                raise ValueError(f"{self.env} must be 1 or 0 (true/false, yes/no, on/off), got {raw!r}"[:200])
            return raw.lower() in _TRUE
        if self.type is int:
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"{self.env} must be an integer, got {raw!r}"[:200]) from None
        if self.type is list:
            return [item.strip() for item in raw.split(self.split) if item.strip()]
        return raw

    def _allows(self, value: Any) -> bool:
        return isinstance(value, str) and (not self.choices or value in self.choices) \
            and (self.pattern is None or re.fullmatch(self.pattern, value) is not None)

    def _say(self, template: str, value: Any) -> str:
        return template.format(flag=self.flag, value=value, tool=self.tool, choices=", ".join(self.choices),
                               low=self.low, high=self.high, most=MAX_VALUES, items=self.items)[:200]


@dataclass(frozen=True)
class Viewer:
    """How to look at an artifact, by the end of its file name: what it is, and the commands that
    open it (FILE: its path, RUN: its run), as the Hotspots screen shows them."""

    suffixes: tuple[str, ...]
    what: str
    commands: tuple[str, ...] = ()


#: The viewer of the Chrome/Perfetto traces several tools write.
PERFETTO = "timeline: open https://ui.perfetto.dev and drag the file in (copy it to your laptop first on a remote node)"


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
    trainer's); `kind` names which: an in-process tool runs beside others, a wrapper alone
    (RunConfig refuses two), and the doctor's report says it.

    The class attributes below are the tool's declarations, read without an instance: tinylab.config
    builds RunConfig's fields and checks from them, the CLI its flags, the faces their lists.
    """

    name: str = ""
    kind: str = ""
    description: str = ""
    fix: str = ""
    #: The tool's own options (RunConfig fields, flags, TINYLAB_* variables), in the order the CLI lists them.
    settings: tuple[Setting, ...] = ()
    #: What its kernel table covers when its profile event does not say (the roofline divides its
    #: times by those steps): WINDOW, RUN, or None (unknown: ncu's first N launches cut through steps).
    table_steps: str | None = None
    #: It takes the GPU vendor's kernel-tracing interface (CUPTI on NVIDIA, ROCm's tracer and queue
    #: interception on AMD) for itself, which proton's tracing backends need too.
    traces: bool = False
    #: Why it cannot follow the ranks of a run of several processes (None: it can; a run of world
    #: size 1 may use it either way).
    rank_limit: str | None = None
    #: What the Hotspots screen says of the artifacts it writes, and the commands that open them.
    viewers: tuple[Viewer, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each setting a class declares names its tool, for the messages that say whose it is."""
        super().__init_subclass__(**kwargs)
        if "settings" in cls.__dict__:
            cls.settings = tuple(replace(s, tool=cls.name) for s in cls.settings)

    @classmethod
    def from_config(cls, config: Config | None) -> "ProfilerAdapter":
        """The adapter set up as `config`'s settings ask (the defaults without one)."""
        return cls()

    @classmethod
    def config_problem(cls, config: Config) -> str | None:
        """What this tool refuses in a config that uses it, beyond each setting's own check and
        before anything runs (RunConfig.validate raises it as a one-line ConfigError); None: nothing."""
        return None

    @classmethod
    def graph_blocked(cls, config: Config) -> str | None:
        """Why a whole-step graph cannot run in a config that uses this tool (None: it can)."""
        return None

    @abstractmethod
    def available(self) -> Availability:
        """Whether the tool works on this machine, its version, or why not."""

    def check(self, config: Config) -> None:
        """Refuse, before anything starts, what this tool cannot do for `config` on this machine
        (one-line UserError); it may run the tool."""

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
    def make_hook(self, config: Config, out_dir: Path) -> InProcessHook:
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
    #: Its kernel table holds every step the run's events record, unless collect says otherwise:
    #: the supervisor then stores that step count with the table (the profile event's `steps`).
    #: rocprof-compute's table joins the dispatches of its counter passes, which train fewer steps
    #: after the first, so it stores none (its table_steps still says RUN).
    whole_run_table: bool = False

    def executable_path(self) -> str | None:
        import shutil

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
    def wrap_argv(self, out_dir: Path, config: Config) -> list[str]:
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
    import subprocess

    from tinylab.core import childproc

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
    import subprocess

    from tinylab.core.safeio import open_append, read_tail

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
        from tinylab.core.text import csv_cell

        # a learner opens it in a spreadsheet: a kernel name from a stranger's file must not run as a formula
        table[KERNEL_COLUMNS].assign(name=table["name"].map(csv_cell)).to_csv(path, index=False)
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


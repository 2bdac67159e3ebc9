"""Guided exercises: scenario files, their validation, checks over real runs, and progress.

A scenario is `exercises/<id>.toml` (data only: TOML parsed by tomllib, step texts in markdown
files beside it, checks in the small language of tinylab/checks.py), documented in
exercises/README.md. Everything a scenario says is validated when it is loaded, with the file
and line of the problem, so a broken scenario fails in CI, not in front of a learner.

Headless on purpose: tinylab.service.exercise runs a step through this module for both the CLI
and the lab. pandas (for kernel tables) is imported only when a check reads one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import time
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Callable

from tinylab import checks, tomlfile
from tinylab.analysis.categories import CATEGORIES
from tinylab.config import TOGGLES, ConfigError, RunConfig
from tinylab.errors import UserError
from tinylab.events import SUMMARY_FIELDS
from tinylab.runs.record import EXERCISE_LABEL, RunRecord
from tinylab.safeio import UnsafeFile, read_bounded

LEVELS = ("beginner", "intermediate", "advanced")
PROGRESS_ENV = "TINYLAB_PROGRESS_FILE"
PROGRESS_LIMIT = 16 << 20


# ----------------------------------------------------------------------------- data model
@dataclass
class Question:
    prompt: str
    answer: str
    explanation: str


@dataclass
class CheckSpec:
    name: str
    expr: str
    description: str
    needs_gpu: bool
    gpu_reason: str = ""  # why a GPU is needed: shown when the check is skipped on a CPU
    # "run": the step's run; "recorded": the step's recorded output; "anatomy": the step's kernels
    # compiled on this machine (the last two on any machine, without a run)
    on: str = "run"


@dataclass
class Recorded:
    """A real output of the step's tool, shipped with the exercises: what a learner without the tool
    (or its GPU) reads instead, and what the step's `on = "recorded"` checks read."""

    path: Path
    about: str  # where it comes from: tool, release, GPU, program


@dataclass
class Step:
    number: int  # 1-based
    title: str
    text: str  # markdown
    preset: dict  # the scenario's default preset merged with the step's own
    cpu_preset: dict  # applied on top when the run's device is a CPU
    baseline: dict | None  # preset of the comparison run (None: the step has one run)
    checks: list[CheckSpec]
    hints: list[str]
    questions: list[Question]
    tool: str | None = None  # the profiler the step is about: without it here, only the recorded output is read
    recorded: Recorded | None = None
    nvidia: str = ""  # the NVIDIA equivalent of the step's command, for a learner on an NVIDIA GPU

    @property
    def compile_only(self) -> bool:
        """Every check reads compiled kernels (on = "anatomy"): the step compiles, on any machine, and runs nothing."""
        return bool(self.checks) and all(c.on == "anatomy" for c in self.checks)


@dataclass
class Scenario:
    id: str
    title: str
    level: str
    minutes: int
    summary: str
    steps: list[Step]
    path: Path
    notes: str  # instructor notes (markdown), including figures measured on GPUs
    order: int = 100  # place in the course; ties go by id


@dataclass
class CheckResult:
    name: str
    expr: str
    description: str
    status: str  # "pass" | "fail" | "skip"
    value: object
    detail: str
    on: str = "run"  # what it read, as CheckSpec.on: the step's "run", "recorded" output or compiled kernels ("anatomy")


class ScenarioError(UserError):
    """A scenario file that does not validate; the message is "FILE:LINE: problem"."""


# ----------------------------------------------------------------------------- measured names
#: check name -> (summary key, description), from the summary's one declaration.
_SUMMARY_NAMES: dict[str, tuple[str, str]] = {f.check: (f.key, f.description) for f in SUMMARY_FIELDS if f.check}
_START_NAMES: dict[str, tuple[str, str, str]] = {
    "param_elements": ("param_elements", checks.NUM, "number of parameters (elements)"),
    "device": ("device", checks.STR, 'where the run ran: "cpu", "cuda:0", ...'),
    "device_name": ("device_name", checks.STR, "the device's name"),
}
_KERNEL_NAMES: dict[str, tuple[str, str]] = {
    "top_kernel_name": (checks.STR, "name of the kernel (CPU: operator) with the most time"),
    "top_kernel_category": (checks.STR, "its category: gemm, attention, norm, elementwise, ..."),
    "top_kernel_pct": (checks.NUM, "its share of all kernel time (%)"),
    "kernel_count": (checks.NUM, "distinct kernels in the table"),
    "kernel_launches": (checks.NUM, "kernel launches (calls) in the profiled steps"),
    "kernel_total_ms": (checks.NUM, "total kernel time in the profiled steps (ms)"),
}
_PROFILE_NAMES: dict[str, tuple[str, str]] = {
    "profiled_steps": (checks.NUM, "training steps the kernel table covers (rocprofv3, nsys, rocprof-sys with the "
                                   "perfetto package: the measured steps, from the trainer's roctx/NVTX step ranges)"),
    "counter_passes": (checks.NUM, "runs of the program by a counter-pass profiler (rocprof-compute: one a "
                                   "group of hardware counters)"),
}
#: From a PyTorch/Chrome trace's step timeline (tinylab.analysis.timeline), over a run or a recorded trace.
_TIMELINE_NAMES: dict[str, tuple[str, str]] = {
    "gpu_idle_pct": (checks.NUM, "share of a profiled step the GPU runs no kernel or copy (%): the gaps between "
                                 "its kernels, from a PyTorch trace's step timeline"),
}
_DEEPSPEED_NAMES: dict[str, tuple[str, str]] = {
    # check name: (flops.json key, description)
    "deepspeed_fwd_flops": ("flops", "FLOPs of one forward pass, counted by the DeepSpeed FLOPS profiler"),
    "deepspeed_fwd_ms": ("fwd_latency_s", "that forward pass's time under the FLOPS profiler (ms)"),
}
_RANK_NAMES: dict[str, tuple[str, str]] = {
    "ranks_in_sync": (checks.BOOL, "every rank of a run of several ended with the same weights"),
    "slowest_rank_fwd_ms": (checks.NUM, "median forward (ms) of the slowest rank (the summary's slowest_rank)"),
    "fastest_rank_fwd_ms": (checks.NUM, "median forward (ms) of the rank with the shortest one"),
    "slowest_rank_bwd_ms": (checks.NUM, "median backward (ms) of the slowest rank"),
    "fastest_rank_bwd_ms": (checks.NUM, "median backward (ms) of the rank with the shortest forward"),
    "rank_step_spread": (checks.NUM, "the ranks' longest median step over their shortest (1: all alike)"),
}
_CATEGORY_SUFFIXES = {"_ms": "total time (ms)", "_pct": "share of kernel time (%)", "_calls": "launches"}
_CONFIG_SKIPPED = ("device", "profilers", "profile_kernels")  # `device` is the start event's; lists are not values


def _config_types() -> dict[str, str]:
    defaults = RunConfig()
    types = {}
    for f in dataclasses.fields(RunConfig):
        if f.name in _CONFIG_SKIPPED:
            continue
        value = getattr(defaults, f.name)
        if f.name in TOGGLES or isinstance(value, bool):
            types[f.name] = checks.BOOL
        elif isinstance(value, (int, float)):
            types[f.name] = checks.NUM
        else:  # str, and `fault` (None = no fault, measured as "")
            types[f.name] = checks.STR
    return types


def _category_names() -> dict[str, str]:
    """<category>_ms/_pct/_calls for every kernel category -> description."""
    return {cat + suffix: f"{cat} kernels: {desc}" for cat in CATEGORIES for suffix, desc in _CATEGORY_SUFFIXES.items()}


@lru_cache(maxsize=1)
def names() -> dict[str, tuple[str, str]]:
    """Every name a check may read: name -> (type, description)."""
    out: dict[str, tuple[str, str]] = {}
    out.update({name: (checks.NUM, desc) for name, (_, desc) in _SUMMARY_NAMES.items()})
    out.update({name: (kind, desc) for name, (_, kind, desc) in _START_NAMES.items()})
    out.update({name: (kind, f"config: {name}") for name, kind in _config_types().items()})
    out.update(_KERNEL_NAMES)
    out.update(_PROFILE_NAMES)
    out.update(_TIMELINE_NAMES)
    out.update({name: (checks.NUM, desc) for name, (_, desc) in _DEEPSPEED_NAMES.items()})
    out.update(_RANK_NAMES)
    out.update({name: (checks.NUM, desc) for name, desc in _category_names().items()})
    return out


def _name_types(recorded: bool = False) -> dict[str, str]:
    """Names a check may read: every one over a run; over a recorded output its kernel table's and,
    for a trace, its timeline's."""
    kernel_names = set(_KERNEL_NAMES) | set(_category_names()) | set(_TIMELINE_NAMES)
    return {name: kind for name, (kind, _) in names().items() if not recorded or name in kernel_names}


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)|\s*\(at end of document\)")


class _Locator:
    """Finds the line of a key path such as ("steps", 2, "checks", 0, "expr") in TOML text.

    tomllib reports lines only for syntax errors; schema errors (a wrong type, an unknown key)
    are found here by following table headers ([a], [[a.b]]) and key lines, which covers how
    scenario files are written. When the exact key is not found, the nearest enclosing key or
    table is given instead: a line near the problem beats no line.
    """

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\- ]+?)\s*\]\]?\s*(?:#.*)?$")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*)\s*=")

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.headers: list[tuple[int, tuple]] = []  # (line, path) of each table header
        self.keys: list[tuple[int, tuple]] = []  # (line, path) of each key at a line start
        counts: dict[tuple, int] = {}
        current: tuple = ()
        in_multiline = False
        for lineno, line in enumerate(self.lines, 1):
            was_multiline = in_multiline
            if (line.count('"""') + line.count("'''")) % 2:
                in_multiline = not in_multiline
            if was_multiline:
                continue
            header = self._HEADER.match(line)
            if header:
                current = self._header_path(header, counts)
                self.headers.append((lineno, current))
                continue
            key = self._KEY.match(line)
            if key:
                self.keys.append((lineno, current + tuple(p.strip() for p in key.group(1).split("."))))

    @staticmethod
    def _header_path(header: re.Match, counts: dict[tuple, int]) -> tuple:
        """[a.b] or [[a.b]] as a concrete path, e.g. ("steps", 2, "checks", 0) for the third step's first check."""
        parts = [p.strip() for p in header.group(2).split(".")]
        path: tuple = ()
        for i, part in enumerate(parts):
            path = path + (part,)
            if i == len(parts) - 1 and header.group(1) == "[[":
                index = counts.get(path, -1) + 1
                for key in [k for k in counts if len(k) > len(path) and k[: len(path)] == path]:
                    del counts[key]  # a new element starts its nested arrays afresh
                counts[path] = index
                path = path + (index,)
            elif counts.get(path) is not None:
                path = path + (counts[path],)
        return path

    def line_of(self, path: tuple) -> int:
        for length in range(len(path), 0, -1):
            prefix = path[:length]
            for lineno, key_path in self.keys:
                if key_path == prefix:
                    return self._inner(lineno, path[length:])
            for lineno, header_path in self.headers:
                if header_path == prefix:
                    return lineno
        return 1

    def _inner(self, lineno: int, rest: tuple) -> int:
        """Inside an inline table or array that starts at `lineno`, the line of `rest`'s last key."""
        keys = [k for k in rest if isinstance(k, str)]
        if not keys:
            return lineno
        index = next((k for k in rest if isinstance(k, int)), 0)
        pattern = re.compile(r"(?:^|[\s{,])" + re.escape(keys[-1]) + r"\s*=")
        seen = 0
        for i in range(lineno - 1, len(self.lines)):
            line = self.lines[i]
            if i >= lineno and (self._HEADER.match(line) or self._KEY.match(line)):
                break
            if pattern.search(line):
                if seen == index:
                    return i + 1
                seen += 1
        return lineno


# ----------------------------------------------------------------------------- schema
_SCENARIO_KEYS = {"id", "title", "level", "minutes", "summary", "order", "notes_file", "defaults", "steps"}
_SCENARIO_REQUIRED = ("id", "title", "level", "minutes", "summary", "steps")
_DEFAULTS_KEYS = {"preset", "cpu_preset"}
_STEP_KEYS = {"title", "text", "text_file", "preset", "cpu_preset", "baseline", "checks", "hints", "questions", "tool",
              "recorded", "nvidia"}
_CHECK_KEYS = {"name", "expr", "description", "needs_gpu", "gpu_reason", "on"}
_RECORDED_KEYS = {"path", "about"}
_QUESTION_KEYS = {"prompt", "answer", "explanation"}
#: Keys a CPU override may not change: they decide what the step is about, not how big it is.
_CPU_FIXED = ("version", "fault")
#: Keys no preset sets: the learner's machine decides.
_PRESET_FORBIDDEN = ("device",)
_CHECK_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class _Validator:
    def __init__(self, path: Path, text: str, display: str, root: Path):
        self.path = path
        self.display = display
        self.root = root
        self.locator = _Locator(text)

    def error(self, where: tuple, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.display}:{self.locator.line_of(where)}: {problem}")

    # -- typed getters
    def table(self, data: dict, where: tuple, allowed: set[str], required: tuple[str, ...] = ()) -> None:
        for key in data:
            if key not in allowed:
                hint = _close(key, allowed)
                raise self.error(where + (key,), f"unknown key {_dotted(where + (key,))!r}"
                                 + (f" (did you mean {hint!r}?)" if hint else f"; allowed: {', '.join(sorted(allowed))}"))
        for key in required:
            if key not in data:
                raise self.error(where, f"missing required key {_dotted(where + (key,))!r}")

    def get(self, data: dict, key: str, where: tuple, kind: type | tuple, default: Any = None, what: str = "") -> Any:
        if key not in data:
            return default
        value = data[key]
        ok = isinstance(value, kind) and not (kind in (int, (int, float)) and isinstance(value, bool))
        if not ok:
            raise self.error(where + (key,), f"{_dotted(where + (key,))} must be {what or _kind_name(kind)}, "
                             f"got {_kind_name(type(value))} {value!r}"[:200])
        if isinstance(value, str) and not value.strip() and key not in ("gpu_reason",):
            raise self.error(where + (key,), f"{_dotted(where + (key,))} must not be empty")
        return value

    def string_list(self, data: dict, key: str, where: tuple) -> list[str]:
        values = self.get(data, key, where, list, [], "a list of strings")
        for i, value in enumerate(values):
            if not isinstance(value, str) or not value.strip():
                raise self.error(where + (key, i), f"{_dotted(where + (key,))}[{i}] must be a non-empty string")
        return values

    def table_list(self, data: dict, key: str, where: tuple) -> list[dict]:
        values = self.get(data, key, where, list, [], "an array of tables")
        for i, value in enumerate(values):
            if not isinstance(value, dict):
                raise self.error(where + (key, i), f"{_dotted(where + (key,))}[{i}] must be a table")
        return values

    def markdown(self, name: str, where: tuple) -> str:
        target = (self.path.parent / name).resolve()
        if target.suffix != ".md":
            raise self.error(where, f"{_dotted(where)} must name a .md file, got {name!r}")
        if not target.is_relative_to(self.root.resolve()):
            raise self.error(where, f"{_dotted(where)} {name!r} points outside the exercises folder")
        try:
            return target.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError):
            raise self.error(where, f"{_dotted(where)}: file {name!r} not found next to {self.path.name}") from None
        except UnicodeDecodeError:
            raise self.error(where, f"{_dotted(where)}: file {name!r} is not UTF-8 text") from None

    # -- presets
    def preset(self, data: dict, key: str, where: tuple, cpu: bool = False) -> dict:
        preset = self.get(data, key, where, dict, {}, "a table of run settings")
        fields = {f.name for f in dataclasses.fields(RunConfig)}
        defaults = RunConfig()
        for name, value in preset.items():
            at = where + (key, name)
            if name not in fields:
                hint = _close(name, fields)
                raise self.error(at, f"unknown run setting {name!r} in {key}" + (f" (did you mean {hint!r}?)" if hint else ""))
            if name in _PRESET_FORBIDDEN:
                raise self.error(at, f"{key} may not set {name!r}: the learner's flags choose it")
            if cpu and name in _CPU_FIXED:
                raise self.error(at, f"cpu_preset may not change {name!r}: the CPU run must be the same experiment")
            expected = _setting_type(name, getattr(defaults, name))
            if not _is_type(value, expected):
                raise self.error(at, f"{key}.{name} must be {_kind_name(expected)}, got {value!r}")
        return preset

    def config(self, layers: list[tuple[tuple, dict]], what: str) -> None:
        """Validate merged presets as a RunConfig; blame the line of the setting the error names.

        `layers` are (where, preset) from first to last applied; the last layer that sets a key
        named in the error ("--num-heads 5 ...", "unknown fault 'x'") is the one to fix.
        """
        values: dict = {}
        for _, preset in layers:
            values.update(preset)
        try:
            RunConfig.from_dict(values).validate()
        except ConfigError as exc:
            message = str(exc)
            for where, preset in reversed(layers):
                for key, value in preset.items():
                    if f"--{key.replace('_', '-')}" in message or (isinstance(value, str) and repr(value) in message):
                        raise self.error(where + (key,), f"{what}: {message}") from None
            raise self.error(layers[-1][0], f"{what}: {message}") from None

    # -- expressions
    def recorded(self, data: dict, where: tuple) -> Recorded:
        self.table(data, where, _RECORDED_KEYS, ("path", "about"))
        name = self.get(data, "path", where, str)
        target = (self.root / name).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise self.error(where + ("path",), f"recorded output {name!r} points outside the exercises folder")
        if not target.exists():
            raise self.error(where + ("path",), f"recorded output {name!r} not found in the exercises folder")
        return Recorded(target, self.get(data, "about", where, str).strip())

    def expression(self, expr: str, where: tuple, check_name: str, has_baseline: bool, on: str = "run") -> None:
        from tinylab.anatomy.targets import TARGETS

        names, functions = ({}, frozenset(checks.ANATOMY_FUNCTIONS)) if on == "anatomy" else \
            (_name_types(on == "recorded"), frozenset(checks.KERNEL_FUNCTIONS))
        try:
            tree = checks.parse(expr)
            kind = checks.check_types(tree, names, has_baseline, functions)
        except checks.ExprError as exc:
            raise self.error(where, f"check {check_name!r}: {exc}") from None
        if kind != checks.BOOL:
            raise self.error(where, f"check {check_name!r}: the expression gives a {kind}, not true/false")
        for fname, args in checks.anatomy_calls(tree):
            if args[1] not in TARGETS:
                raise self.error(where, f"check {check_name!r}: {fname}() names target {args[1]!r}: choose from "
                                 f"{', '.join(TARGETS)}")


def _setting_type(name: str, default: Any) -> type | tuple:
    if name in TOGGLES or isinstance(default, bool):
        return bool
    if name in ("fault", "parallel", "rdzv_endpoint"):  # unset by default: None
        return str
    if isinstance(default, float):
        return (int, float)
    if isinstance(default, list):
        return list
    return type(default)


def _is_type(value: Any, expected: type | tuple) -> bool:
    if expected is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if expected in (int, (int, float)) and isinstance(value, bool):
        return False
    return isinstance(value, expected)


def _kind_name(kind: type | tuple) -> str:
    names_ = {str: "a string", int: "an integer", bool: "true or false", float: "a number", dict: "a table",
              list: "a list", (int, float): "a number"}
    return names_.get(kind, getattr(kind, "__name__", str(kind)))  # type: ignore[arg-type]


def _dotted(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part + 1}]" if isinstance(part, int) else (("." if out else "") + part)
    return out


def _close(name: str, choices) -> str | None:
    import difflib

    found = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.7)
    return found[0] if found else None


# ----------------------------------------------------------------------------- loading
def default_root() -> Path:
    """The installed `exercises` package folder (works for editable and regular installs)."""
    import exercises

    return Path(next(iter(exercises.__path__)))


def load_scenario_file(path: Path, root: Path | None = None) -> Scenario:
    """Parse and validate one scenario file; ScenarioError("FILE:LINE: problem") when it is bad."""
    path = Path(path)
    root = Path(root) if root is not None else path.parent
    try:
        display = f"{root.name}/{path.relative_to(root).as_posix()}"
    except ValueError:
        display = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(f"{display}:1: not UTF-8 text") from None
    try:
        data = tomlfile.loads(text)
    except UserError:
        raise
    except Exception as exc:  # tomllib.TOMLDecodeError (and tomli's) carry the position in the text
        message = str(exc)
        m = _TOML_POSITION.search(message)
        line = m.group(1) if m and m.group(1) else str(max(1, len(text.splitlines())))
        problem = _TOML_POSITION.sub("", message)
        column = f" (column {m.group(2)})" if m and m.group(2) else ""
        raise ScenarioError(f"{display}:{line}: invalid TOML: {problem}{column}") from None
    return _build(data, path, text, display, root)


def _build(data: dict, path: Path, text: str, display: str, root: Path) -> Scenario:
    v = _Validator(path, text, display, root)
    v.table(data, (), _SCENARIO_KEYS, _SCENARIO_REQUIRED)
    sid = v.get(data, "id", (), str)
    if sid != path.stem:
        raise v.error(("id",), f"id {sid!r} must match the file name {path.stem!r}")
    title = v.get(data, "title", (), str)
    level = v.get(data, "level", (), str)
    if level not in LEVELS:
        raise v.error(("level",), f"level {level!r} must be one of {', '.join(LEVELS)}")
    minutes = v.get(data, "minutes", (), int)
    if minutes < 1:
        raise v.error(("minutes",), f"minutes must be >= 1, got {minutes}")
    summary = v.get(data, "summary", (), str).strip()
    order = v.get(data, "order", (), int, 100)
    notes_file = v.get(data, "notes_file", (), str)
    notes = v.markdown(notes_file, ("notes_file",)) if notes_file else ""
    defaults = v.get(data, "defaults", (), dict, {}, "a table")
    v.table(defaults, ("defaults",), _DEFAULTS_KEYS)
    base_preset = v.preset(defaults, "preset", ("defaults",))
    base_cpu = v.preset(defaults, "cpu_preset", ("defaults",), cpu=True)
    raw_steps = v.table_list(data, "steps", ())
    if not raw_steps:
        raise v.error(("steps",), "a scenario needs at least one [[steps]]")
    steps = [_build_step(v, raw, i, sid, base_preset, base_cpu) for i, raw in enumerate(raw_steps)]
    return Scenario(sid, title, level, minutes, summary, steps, path, notes, order)


def _build_step(v: _Validator, raw: dict, index: int, sid: str, base_preset: dict, base_cpu: dict) -> Step:
    at = ("steps", index)
    number = index + 1
    v.table(raw, at, _STEP_KEYS, ("title",))
    title = v.get(raw, "title", at, str)
    if ("text" in raw) == ("text_file" in raw):
        raise v.error(at + ("text",), f"step {number} needs exactly one of `text` (markdown) or `text_file` (a .md file)")
    text = v.get(raw, "text", at, str) or v.markdown(v.get(raw, "text_file", at, str), at + ("text_file",))
    own = v.preset(raw, "preset", at)
    own_cpu = v.preset(raw, "cpu_preset", at, cpu=True)
    preset = {**base_preset, **own, "label": f"{EXERCISE_LABEL}{sid} step {number}"}
    cpu_preset = {**base_cpu, **own_cpu}
    run_layers = [(("defaults", "preset"), base_preset), (at + ("preset",), own)]
    cpu_layers = [(("defaults", "cpu_preset"), base_cpu), (at + ("cpu_preset",), own_cpu)]
    v.config(run_layers, f"step {number} preset")
    v.config(run_layers + cpu_layers, f"step {number} preset with cpu_preset")
    baseline = None
    if "baseline" in raw:
        own_base = v.preset(raw, "baseline", at)
        baseline = {**base_preset, **own_base, "label": f"{EXERCISE_LABEL}{sid} step {number} baseline"}
        base_layers = [(("defaults", "preset"), base_preset), (at + ("baseline",), own_base)]
        v.config(base_layers, f"step {number} baseline")
        v.config(base_layers + cpu_layers, f"step {number} baseline with cpu_preset")
    tool = v.get(raw, "tool", at, str)
    if tool is not None and tool not in preset.get("profilers", []):
        raise v.error(at + ("tool",), f"step {number}'s tool {tool!r} is not among its preset's profilers "
                      f"{preset.get('profilers', [])}")
    recorded = v.recorded(v.get(raw, "recorded", at, dict, None, "a table (path, about)"), at + ("recorded",)) \
        if "recorded" in raw else None
    nvidia = v.get(raw, "nvidia", at, str, "").strip()
    step_checks = []
    seen: set[str] = set()
    for j, rc in enumerate(v.table_list(raw, "checks", at)):
        where = at + ("checks", j)
        v.table(rc, where, _CHECK_KEYS, ("name", "expr", "description"))
        name = v.get(rc, "name", where, str)
        if not _CHECK_NAME.match(name):
            raise v.error(where + ("name",), f"check name {name!r} must be lower-case letters, digits, '-' or '_'")
        if name in seen:
            raise v.error(where + ("name",), f"step {number} has two checks named {name!r}")
        seen.add(name)
        expr = v.get(rc, "expr", where, str)
        on = v.get(rc, "on", where, str, "run")
        if on not in ("run", "recorded", "anatomy"):
            raise v.error(where + ("on",), f"check {name!r}: on must be \"run\", \"recorded\" or \"anatomy\", got {on!r}")
        if on == "recorded" and recorded is None:
            raise v.error(where + ("on",), f"check {name!r} reads a recorded output: give the step a `recorded` table")
        v.expression(expr, where + ("expr",), name, baseline is not None and on != "recorded", on)
        needs_gpu = v.get(rc, "needs_gpu", where, bool, False)
        if needs_gpu and on != "run":
            raise v.error(where + ("needs_gpu",), f"check {name!r} reads "
                          f"{'a recorded output' if on == 'recorded' else 'kernels compiled on this machine'}: it needs no GPU")
        gpu_reason = v.get(rc, "gpu_reason", where, str, "").strip()
        if needs_gpu and not gpu_reason:
            raise v.error(where + ("needs_gpu",), f"check {name!r} needs a GPU: say why in `gpu_reason`")
        if gpu_reason and not needs_gpu:
            raise v.error(where + ("gpu_reason",), f"check {name!r} has a gpu_reason but needs_gpu is false")
        step_checks.append(CheckSpec(name, expr, v.get(rc, "description", where, str).strip(), needs_gpu, gpu_reason, on))
    if not step_checks:
        raise v.error(at, f"step {number} has no checks: every step is checked on a real run")
    questions = []
    for j, rq in enumerate(v.table_list(raw, "questions", at)):
        where = at + ("questions", j)
        v.table(rq, where, _QUESTION_KEYS, ("prompt", "answer"))
        questions.append(Question(
            v.get(rq, "prompt", where, str).strip(),
            v.get(rq, "answer", where, str).strip(),
            v.get(rq, "explanation", where, str, "").strip(),
        ))
    hints = [h.strip() for h in v.string_list(raw, "hints", at)]
    return Step(number, title, text.strip() + "\n", preset, cpu_preset, baseline, step_checks, hints, questions,
                tool, recorded, nvidia)


def load_scenarios(root: Path | None = None) -> list[Scenario]:
    """Every scenario under `root` (default: the installed exercises), validated, in course order."""
    root = Path(root) if root is not None else default_root()
    scenarios = [load_scenario_file(path, root) for path in sorted(root.glob("*.toml"))]
    return sorted(scenarios, key=lambda s: (s.order, s.id))


def get_scenario(scenario_id: str, root: Path | None = None) -> Scenario:
    scenarios = load_scenarios(root)
    for scenario in scenarios:
        if scenario.id == scenario_id:
            return scenario
    known = ", ".join(s.id for s in scenarios) or "(none)"
    raise UserError(f"unknown exercise {scenario_id!r}: choose one of {known}")


def get_step(scenario: Scenario, number: int) -> Step:
    if not 1 <= number <= len(scenario.steps):
        raise UserError(f"{scenario.id} has steps 1..{len(scenario.steps)}, not {number}")
    return scenario.steps[number - 1]


# ----------------------------------------------------------------------------- configs
def step_config(step: Step, device: str, overrides: dict) -> RunConfig:
    """The step's run on a resolved device ("cpu", "cuda", "cuda:N"): preset (+ cpu_preset on a CPU)
    + overrides; validated (ConfigError)."""
    return _config(step.preset, step, device, overrides)


def baseline_config(step: Step, device: str, overrides: dict) -> RunConfig | None:
    """The step's comparison run, built like step_config; overrides never add a fault to it."""
    if step.baseline is None:
        return None
    return _config(step.baseline, step, device, {k: v for k, v in overrides.items() if k != "fault"})


def compiled_configs(step: Step, overrides: dict) -> dict[str, RunConfig]:
    """The configs whose Triton kernels the step's `on = "anatomy"` checks read, by role ("run",
    "baseline"): the step's preset and its baseline at their GPU sizes (compiling needs no GPU, so
    a CPU keeps the model the lesson is about), with the learner's flags; {} when no check reads
    compiled kernels. Validated (ConfigError)."""
    if not any(c.on == "anatomy" for c in step.checks):
        return {}
    configs = {"run": step_config(step, "auto", overrides)}
    baseline = baseline_config(step, "auto", overrides)
    if baseline is not None:
        configs["baseline"] = baseline
    return configs


def _config(preset: dict, step: Step, device: str, overrides: dict) -> RunConfig:
    values = dict(preset)
    if device == "cpu":
        values.update(step.cpu_preset)
    values.update({k: v for k, v in overrides.items() if k not in ("device", "profilers")})
    # Profilers add up: a step that reads a kernel table keeps its profiler when the learner adds one.
    values["profilers"] = list(dict.fromkeys([*values.get("profilers", []), *overrides.get("profilers", [])]))
    values["device"] = device
    return RunConfig.from_dict(values).validate()


# ----------------------------------------------------------------------------- measurements
class _Measured:
    """The values of one run that checks can read, gathered lazily (kernel tables need pandas)."""

    def __init__(self, run: RunRecord | None, role: str):
        self.run = run
        self.role = role  # "run" or "baseline run", for messages
        self.summary = run.summary if run else None
        self.start = run.start if run else None
        self.error = run.error if run else None
        self.profiles = run.profiles if run else ()
        # The start record has the config as it ran (e.g. v4's graph toggle resolved for the device).
        self.config = (self.start.config if self.start and self.start.config else None) or (run.config if run else {})
        self._table: Any = None
        self._table_loaded = False
        self._counters: Any = None
        self._counters_loaded = False
        self._timeline: Any = None  # the PyTorch trace's step timeline, or why there is none (a str)
        self._timeline_loaded = False
        self._sol_tables: dict[Path, dict[str, dict[str, Any]]] = {}

    def _no_summary(self) -> str:
        if self.error:
            return f"the {self.role} failed: {self.error.type}: {self.error.message}"
        return f"the {self.role} has no summary yet (status: {self.run.status if self.run else 'not started'})"

    def value(self, name: str) -> Any:
        if name in _SUMMARY_NAMES:
            if self.summary is None:
                raise checks.Missing(name, self._no_summary())
            value = self.summary.get(_SUMMARY_NAMES[name][0])
            if value is None:
                raise checks.Missing(name, self._why_none(name))
            return value
        if name in _START_NAMES:
            value = getattr(self.start, _START_NAMES[name][0]) if self.start else None
            if value is None:
                raise checks.Missing(name, f"the {self.role} has no start record")
            return value
        if name in _KERNEL_NAMES or name in _category_names():
            return self._kernel_value(name)
        if name in _DEEPSPEED_NAMES:
            return self._deepspeed_value(name)
        if name in _TIMELINE_NAMES:
            return self._timeline_value(name)
        if name in _PROFILE_NAMES:
            return self._profile_value(name)
        if name in _RANK_NAMES:
            return self._rank_value(name)
        if name in self.config or name == "fault":
            value = self.config.get(name)
            if name == "fault":
                return value or ""
            if value is None:
                raise checks.Missing(name, f"the {self.role}'s config has no value for {name}")
            return value
        raise checks.Missing(name, f"the {self.role}'s config has no value for {name}")

    def _why_none(self, name: str) -> str:
        on_cpu = str(self.start.device if self.start else "").startswith("cpu")
        if name == "peak_mem_mb" and on_cpu:
            return "CPU runs track no device memory"
        if name in ("fwd_ms", "bwd_ms", "opt_ms") and self.config.get("cuda_graph"):
            return "a whole-step graph replay cannot be split into phases (run with --no-cuda-graph)"
        if name == "mfu":
            return "no peak rate is known for this device and precision"
        return f"the {self.role} did not record it"

    def _rank_value(self, name: str) -> Any:
        ranks = self.run.ranks if self.run else ()
        if len(ranks) < 2:
            raise checks.Missing(name, f"the {self.role} is not a run of several ranks (--nproc-per-node 2)"
                                       if self.summary else self._no_summary())
        if name == "ranks_in_sync":
            return self.run.ranks_in_sync
        if name == "rank_step_spread":
            steps = [r.step_ms_median for r in ranks if r.step_ms_median]
            if not steps:
                raise checks.Missing(name, f"no rank of the {self.role} recorded a median step time")
            return max(steps) / min(steps)
        phase = "fwd_ms_median" if name.endswith("fwd_ms") else "bwd_ms_median"
        if any(getattr(r, "fwd_ms_median") is None or getattr(r, phase) is None for r in ranks):
            raise checks.Missing(name, "a whole-step graph replay cannot be split into phases (run with --no-cuda-graph)")
        slowest = self.summary.slowest_rank if self.summary else None
        rank = next((r for r in ranks if r.rank == slowest), None) if name.startswith("slowest") else \
            min(ranks, key=lambda r: r.fwd_ms_median)
        if rank is None:
            raise checks.Missing(name, f"the {self.role} named no slowest rank")
        return getattr(rank, phase)

    # -- step timeline (PyTorch trace)
    def _trace(self) -> Path | None:
        from tinylab.analysis.timeline import run_trace

        return run_trace(Path(self.run.dir), self.profiles)[0] if self.run else None

    def timeline(self, name: str) -> Any:
        """The step timeline of the PyTorch trace (tinylab.analysis.timeline.analyze), parsed once."""
        if not self._timeline_loaded:
            self._timeline_loaded = True
            from tinylab.analysis.timeline import analyze

            trace = self._trace()
            if trace is None:
                self._timeline = f"the {self.role} has no PyTorch trace (profile it with --profile pytorch)"
            else:
                try:
                    self._timeline = analyze(trace)
                except UserError as exc:
                    self._timeline = f"its trace cannot be read: {exc}"
        if isinstance(self._timeline, str):
            raise checks.Missing(name, self._timeline)
        return self._timeline

    def _timeline_value(self, name: str) -> float:
        from tinylab.analysis.timeline import idle_pct

        value = idle_pct(self.timeline(name))
        if value is None:
            raise checks.Missing(name, f"the {self.role}'s trace has no GPU events (a CPU run): no GPU to be idle")
        return value

    # -- kernel table
    def table(self):
        if not self._table_loaded:
            self._table_loaded = True
            from tinylab.analysis.hotspots import load_run_kernel_table

            loaded = load_run_kernel_table(self.run.dir) if self.run else None
            self._table = loaded[0] if loaded else None
        if self._table is None:
            raise checks.Missing("kernel table", self._why_no_table())
        return self._table

    def _why_no_table(self) -> str:
        notes = [p.note for p in self.profiles if p.note]
        if self.profiles:
            return f"the {self.role}'s profiler gave no kernel table" + (f" ({notes[-1]})" if notes else "")
        if self.summary is None:
            return self._no_summary()
        return f"the {self.role} was not profiled (add --profile pytorch)"

    def _timed_table(self, name: str):
        table = self.table()
        if not table["total_ns"].notna().any():
            raise checks.Missing(name, f"the {self.role}'s kernel table has no durations, only call counts")
        return table

    def _kernel_value(self, name: str) -> Any:
        table = self.table()
        if name == "kernel_count":
            return len(table)
        if name == "kernel_launches":
            return int(table["calls"].sum())
        if name.endswith("_calls"):
            return int(table.loc[table["category"] == name[: -len("_calls")], "calls"].sum())
        table = self._timed_table(name)
        if not len(table):
            raise checks.Missing(name, f"the {self.role}'s kernel table is empty")
        top = table.iloc[0]
        if name == "top_kernel_name":
            return str(top["name"])
        if name == "top_kernel_category":
            return str(top["category"])
        if name == "top_kernel_pct":
            return float(top["pct"])
        if name == "kernel_total_ms":
            return float(table["total_ns"].sum()) / 1e6
        category = name.rsplit("_", 1)[0]
        rows = table[table["category"] == category]
        if name.endswith("_ms"):
            return float(rows["total_ns"].sum()) / 1e6
        return float(rows["pct"].sum())

    def _profile_value(self, name: str) -> int:
        if name == "counter_passes":
            counted = [p.passes for p in self.profiles if p.passes]
            if not counted:
                raise checks.Missing(name, f"the {self.role} was not profiled by a tool that re-runs the program "
                                           "(rocprof-compute)" if self.summary else self._no_summary())
            return max(counted)
        tabled = [p for p in self.profiles if p.kernel_table]
        if not tabled:
            self.table()  # says why there is no table
        steps = tabled[-1].steps if tabled else None
        if steps is None:
            raise checks.Missing(name, f"the {self.role}'s profile does not say which steps its kernel table covers "
                                       "(rocprofv3 needs the trainer's roctx step ranges: a GPU run)")
        return steps

    # -- hardware counters (rocprof-compute)
    def counters(self, name: str):
        """Per-kernel counters and roofline of the rocprof-compute workload (tinylab.analysis.formats.rocprof_compute)."""
        if not self._counters_loaded:
            self._counters_loaded = True
            from tinylab.analysis.formats.rocprof_compute import kernel_roofline

            self._counters = kernel_roofline(self.workload) if self.workload else None
        if self._counters is None or not len(self._counters):
            raise checks.Missing(name, f"the {self.role} has no rocprof-compute counters (profile it with "
                                       "--profile rocprof-compute on an AMD GPU)")
        return self._counters

    def _profile_root(self) -> Path | None:
        """The rocprof-compute profile folder: its workload/ and analyze/."""
        return Path(self.run.dir) / "profiles" / "rocprof-compute" if self.run else None

    @cached_property
    def workload(self) -> Path | None:
        """The rocprof-compute workload folder (pmc_perf.csv, timestamps.csv) of the profile, found once."""
        from tinylab.analysis.formats.rocprof_compute import find_workload

        root = self._profile_root()
        return find_workload(root) if root else None

    @cached_property
    def sol_kernels(self) -> list[tuple[str, Path, float]]:
        """(kernel name, folder, the kernel's total dispatch time in the workload) of every kernel with a
        speed-of-light table; the profile is read once."""
        from tinylab.analysis.formats.rocprof_compute import analyzed_kernels, kernel_totals

        root = self._profile_root()
        found = analyzed_kernels(root / "analyze") if root else []
        totals = kernel_totals(self.workload) if found and self.workload else {}
        return [(name, folder, totals.get(name, 0.0)) for name, folder in found]

    def _sol_table(self, folder: Path) -> dict[str, dict[str, Any]]:
        if folder not in self._sol_tables:
            from tinylab.analysis.formats.rocprof_compute import read_speed_of_light

            self._sol_tables[folder] = read_speed_of_light(folder)
        return self._sol_tables[folder]

    def speed_of_light(self, fname: str, sel: str, metric: str) -> float:
        """sol_pct/sol_value: "Pct of Peak" or "Avg" of `metric` in the speed-of-light table of the
        analyzed kernel with the most time among those whose name contains `sel` or whose category is `sel`."""
        from tinylab.analysis.names import short_name

        call = f"{fname}({sel!r}, {metric!r})"
        found = self.sol_kernels
        if not found:
            raise checks.Missing(call, f"the {self.role} has no rocprof-compute speed-of-light tables (profile it "
                                       "with --profile rocprof-compute on an AMD GPU)")
        chosen = [kernel for kernel in found if _selects(sel, kernel[0])]
        if not chosen:
            analyzed = ", ".join(short_name(name) for name, _, _ in found)
            raise checks.Missing(call, f"no analyzed kernel of the {self.role} matches {sel!r} (analyzed: {analyzed})")
        name, folder, _ = max(chosen, key=lambda kernel: kernel[2])
        row = self._sol_table(folder).get(metric.strip().lower())
        if row is None:
            raise checks.Missing(call, f"{short_name(name)}: its speed-of-light table has no metric {metric!r}")
        value = row["pct" if fname == "sol_pct" else "value"]
        if value is None:
            raise checks.Missing(call, f"{short_name(name)}: rocprof-compute left {row['metric']!r} empty")
        return value

    def counter_function(self, fname: str, sel: str) -> Any:
        """top_bound/top_intensity/top_bw_pct/top_flops_pct of the kernel with the most time among those
        whose name contains `sel` or whose category is `sel`."""
        from tinylab.analysis.formats.rocprof_compute import roofline_disabled

        call = f"{fname}({sel!r})"
        table = self.counters(call)
        disabled = roofline_disabled(self.workload) if fname != "top_intensity" and self.workload else None
        if disabled:  # no ceilings for any kernel: nothing a run here could change
            raise checks.Unsupported(call, disabled)
        chosen = table[[_selects(sel, n) for n in table["name"]]]
        if not len(chosen):
            raise checks.Missing(call, f"no kernel of the {self.role}'s counters matches {sel!r}")
        top = chosen.iloc[0]  # sorted by time
        column = {"top_bound": "bound", "top_intensity": "intensity", "top_bw_pct": "bw_pct",
                  "top_flops_pct": "flops_pct"}[fname]
        value = top[column]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            if fname == "top_intensity":
                raise checks.Missing(call, f"{top['name'][:60]}: no FLOP or HBM counters for it")
            raise checks.Missing(call, f"{top['name'][:60]}: no measured ceilings: rocprof-compute ran without "
                                       "its roofline benchmark (--no-roof)")
        if fname in ("top_bw_pct", "top_flops_pct") and bool(top["above_peak"]):
            raise checks.Missing(call, f"{top['name'][:60]} measured above its peak ({value:.0f}%): past a "
                                       "physical limit, so its counters or timing are off; not shown")
        return str(value) if fname == "top_bound" else float(value)

    def files(self, part: str) -> int:
        return sum(part.lower() in name.lower() for p in self.profiles for name in p.artifacts)

    def _deepspeed_value(self, name: str) -> float:
        event = next((p for p in reversed(self.profiles) if p.tool == "deepspeed"), None)
        if event is None or self.run is None:
            raise checks.Missing(name, f"the {self.role} was not profiled with --profile deepspeed")
        relative = event.artifacts.get("flops.json")
        try:
            report = json.loads((Path(self.run.dir) / relative).read_text(encoding="utf-8"))
            value = report[_DEEPSPEED_NAMES[name][0]]
        except (TypeError, OSError, ValueError, KeyError):
            raise checks.Missing(name, f"the {self.role}'s DeepSpeed profile has no flops.json value"
                                 + (f" ({event.note})" if event.note else "")) from None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise checks.Missing(name, f"the {self.role}'s DeepSpeed profile recorded {value!r}")
        return value * 1e3 if name == "deepspeed_fwd_ms" else value

    def kernel_function(self, fname: str, part: str, *more: str) -> Any:
        if fname.startswith("sol_"):
            return self.speed_of_light(fname, part, *more)
        if fname.startswith("top_"):
            return self.counter_function(fname, part)
        if fname == "profile_files":
            return self.files(part)
        table = self.table()
        rows = table[table["name"].str.lower().str.contains(part.lower(), regex=False)]
        if fname == "kernel_calls":
            return int(rows["calls"].sum())
        self._timed_table(f"{fname}({part!r})")
        if fname == "kernel_ms":
            return float(rows["total_ns"].sum()) / 1e6
        return float(rows["pct"].sum())


def _selects(sel: str, name: str) -> bool:
    """A run function's kernel selector: `sel` is part of the kernel's name (any case) or its category."""
    from tinylab.analysis.categories import categorize

    return sel.lower() in name.lower() or categorize(name) == sel


class _RecordedOutput(_Measured):
    """A step's recorded output, read as a run's profile: its kernel table and, for a rocprof-compute
    workload, its counters; it has no summary, config or start record."""

    def __init__(self, recorded: Recorded):
        super().__init__(None, "recorded output")
        self.recorded = recorded

    def value(self, name: str) -> Any:
        if name in _KERNEL_NAMES or name in _category_names():
            return self._kernel_value(name)
        if name in _TIMELINE_NAMES:
            return self._timeline_value(name)
        raise checks.Missing(name, "a recorded output has only a kernel table")

    def _trace(self) -> Path | None:
        return self.recorded.path if self.recorded.path.is_file() else None

    def table(self):
        if not self._table_loaded:
            self._table_loaded = True
            from tinylab.analysis.hotspots import load_kernel_table

            try:
                self._table = load_kernel_table(self.recorded.path)[0]
            except UserError as exc:
                raise checks.Missing("kernel table", f"the recorded output cannot be read: {exc}") from None
        return self._table

    def _profile_root(self) -> Path | None:
        return self.recorded.path

    def files(self, part: str) -> int:
        return sum(part.lower() in p.name.lower() for p in self.recorded.path.rglob("*")) \
            if self.recorded.path.is_dir() else int(part.lower() in self.recorded.path.name.lower())


def _role(fname: str) -> str:
    """Whose kernels an anatomy function reads: the "baseline"'s (baseline.compiled_regs) or the "run"'s."""
    return "baseline" if fname.startswith(checks.BASELINE) else "run"


class _Compiled:
    """The kernels a step's `on = "anatomy"` checks read (tinylab.anatomy), compiled on this
    machine for the targets they name, through the cache `tinylab kernels` fills. The checks'
    arguments are literals, so every compile the step needs runs at the first value asked for,
    in one pool; a kernel is the variant the role's step launches (Anatomy.launched_by)."""

    def __init__(self, step: Step, configs: dict[str, RunConfig], pool: Callable[[], Any] | None):
        self.configs = configs
        self.pool = pool
        self.calls = list(dict.fromkeys(
            (_role(fname), args) for spec in step.checks if spec.on == "anatomy"
            for fname, args in checks.anatomy_calls(_parsed(spec.expr))
        ))
        self._found: dict[tuple, Any] | None = None

    def function(self, fname: str, *args: Any) -> Any:
        role = _role(fname)
        call = f"{fname}({', '.join(repr(a) if isinstance(a, str) else f'{a:g}' for a in args)})"
        if self._found is None:
            self._found = self._compile()
        found = self._found.get((role, args), f"the step's {role} has no compiled kernels")
        if isinstance(found, str):
            raise checks.Missing(call, found)
        if not found.ok:
            raise checks.Missing(call, f"it does not compile for {args[1]}: {found.error}")
        return _compiled_value(checks._base(fname), found)

    def _compile(self) -> dict[tuple, Any]:
        """(role, arguments) -> the KernelReport, or why there is none (one line)."""
        from tinylab.anatomy import Pool, analyze
        from tinylab.anatomy.launches import planned_config

        found: dict[tuple, Any] = {}
        shapes: dict[str, list[str]] = {}  # roles whose configs launch at the same sizes share a compile
        for role, cfg in self.configs.items():
            shapes.setdefault(planned_config(cfg).to_json(), []).append(role)
        with (self.pool or Pool)() as pool:
            for roles in shapes.values():
                calls = [(role, args) for role, args in self.calls if role in roles]
                if not calls:
                    continue
                try:
                    anatomy = analyze(self.configs[roles[0]], list(dict.fromkeys(a[1] for _, a in calls)),
                                      kernels=sorted({a[0] for _, a in calls}), pool=pool)
                except Exception as exc:  # a failed plan or worker is the checks' missing value, not a crash
                    found.update(dict.fromkeys(calls, str(exc) if isinstance(exc, UserError)
                                               else f"compiling failed: {type(exc).__name__}: {exc}"))
                    continue
                found.update(self._reports(anatomy, calls, pool))
        return found

    def _reports(self, anatomy: Any, calls: list[tuple], pool: Any) -> dict[tuple, Any]:
        from tinylab.anatomy import sweep

        found: dict[tuple, Any] = {}
        sweeps: dict[tuple, dict[int, list[tuple]]] = {}  # (variant, target, param) -> value -> calls
        for role, args in calls:
            kernel, target, *swept = args
            try:
                variant = anatomy.launched_by(kernel, self.configs[role])
            except UserError as exc:
                found[(role, args)] = str(exc)
                continue
            if not swept:
                found[(role, args)] = variant.reports[target]
            elif swept[1] != int(swept[1]):
                found[(role, args)] = f"{swept[0]} takes an integer, not {swept[1]:g}"
            else:
                sweeps.setdefault((variant.name, target, swept[0]), {}).setdefault(int(swept[1]), []).append((role, args))
        for (name, target, param), by_value in sweeps.items():
            try:
                points = sweep(anatomy, name, param, list(by_value), targets=[target], pool=pool)
            except UserError as exc:
                found.update(dict.fromkeys([c for group in by_value.values() for c in group], str(exc)))
                continue
            for point in points:
                found.update(dict.fromkeys(by_value[point.value], point.report))
        return found


def _compiled_value(fname: str, report: Any) -> Any:
    """What an anatomy function reads of a KernelReport (see the exercises README)."""
    r = report.registers
    if fname == "compiled_regs":  # what one lane (AMD: VGPRs and AGPRs) or thread holds
        return report.lane_registers
    if fname == "compiled_lds":
        return report.lds
    if fname == "compiled_spills":  # AMD: registers spilled; NVIDIA: bytes of spill stores
        return report.spills["VGPR"] + report.spills["SGPR"] if "VGPR" in r else report.spills["stores"]
    if fname == "compiled_occupancy":
        return report.occupancy.value
    return report.occupancy.limiter


def evaluate_checks(step: Step, run: RunRecord | None, baseline: RunRecord | None, on_gpu: bool,
                    unavailable: str = "", compiled: dict[str, RunConfig] | None = None,
                    pool: Callable[[], Any] | None = None) -> list[CheckResult]:
    """Each check of `step` over a run (and its baseline): pass, fail or skip, never an exception.

    `run` is None when the step's run was never started (every check then says why it has no
    value); `baseline` is None when the step has none, or it was not run. `unavailable` says why
    the step's tool cannot run here: its run checks are then skipped with that reason, and only
    its `on = "recorded"` checks (over the shipped output) run. Its `on = "anatomy"` checks read
    the kernels of `compiled` (role -> config; default: compiled_configs(step, {})), compiled in
    `pool()` (a context manager giving a tinylab.anatomy.Pool; default: a new one).

    A value the run did not measure fails the check with "not measured: ...", a GPU-only check
    on a CPU is skipped with its reason, and arithmetic problems fail with their message.
    """
    measured = {"run": _Measured(run, "run")}
    if baseline is not None:
        measured["baseline"] = _Measured(baseline, "baseline run")
    recorded = _RecordedOutput(step.recorded) if step.recorded else None
    anatomy = _Compiled(step, compiled_configs(step, {}) if compiled is None else compiled, pool)

    def source(name: str) -> tuple[_Measured, str]:
        if name.startswith(checks.BASELINE):
            if "baseline" not in measured:
                raise checks.Missing(name, "this step's baseline run has not been run")
            return measured["baseline"], name[len(checks.BASELINE):]
        return measured["run"], name

    def lookup(name: str) -> Any:
        where, base = source(name)
        return where.value(base)

    def kernels(fname: str, *parts: str) -> float:
        where, base = source(fname)
        return where.kernel_function(base, *parts)

    instead = f"; the recorded output has it: tinylab hotspots {step.recorded.path}" if step.recorded else ""
    def no_names(name: str) -> Any:  # pragma: no cover - loading rejects names in anatomy checks
        raise checks.Missing(name, "a check over compiled kernels reads no run")

    results = []
    for spec in step.checks:
        if spec.on == "recorded" and recorded is not None:
            results.append(_evaluate_one(spec, recorded.value, recorded.kernel_function, True))
        elif spec.on == "anatomy":
            results.append(_evaluate_one(spec, no_names, anatomy.function, True))
        elif unavailable:
            results.append(CheckResult(spec.name, spec.expr, spec.description, "skip", None, unavailable, spec.on))
        else:
            results.append(_evaluate_one(spec, lookup, kernels, on_gpu, instead))
    return results


def _evaluate_one(spec: CheckSpec, lookup: Callable, kernels: Callable, on_gpu: bool, instead: str = "") -> CheckResult:
    """One check; `instead` says where to read what this machine's tools cannot give (a skip's detail)."""
    def result(status: str, value: Any, detail: str) -> CheckResult:
        return CheckResult(spec.name, spec.expr, spec.description, status, value, detail, spec.on)

    if spec.needs_gpu and not on_gpu:
        return result("skip", None, f"GPU-only: {spec.gpu_reason}")
    try:
        tree = _parsed(spec.expr)
        outcome = checks.evaluate(tree, lookup, kernels)
        shown = checks.display_operand(tree)
        value = checks.evaluate(shown, lookup, kernels) if shown is not None else outcome
        detail = _values_detail(tree, lookup, kernels)
    except checks.Unsupported as missing:
        return result("skip", None, f"not available here: {missing.reason}{instead}")
    except checks.Missing as missing:
        return result("fail", None, f"not measured: {missing.name} ({missing.reason})")
    except checks.ExprError as exc:
        return result("fail", None, f"cannot evaluate: {exc}")
    if not isinstance(outcome, bool):  # pragma: no cover - loading rejects non-boolean checks
        return result("fail", outcome, "the expression is not a true/false test")
    return result("pass" if outcome else "fail", _rounded(value), detail)


@lru_cache(maxsize=512)
def _parsed(expr: str) -> checks.Node:
    return checks.parse(expr)


def _values_detail(tree: checks.Node, lookup: Callable, kernels: Callable) -> str:
    """name=value for every value the check reads ("?" where `or` never needed one)."""
    parts: dict[str, str] = {}
    for leaf in checks.measured_leaves(tree):
        text = checks.leaf_text(leaf)
        try:
            parts[text] = format_value(checks.evaluate(leaf, lookup, kernels))
        except (checks.Missing, checks.ExprError):
            parts[text] = "?"
    return ", ".join(f"{k}={v}" for k, v in parts.items())


def _rounded(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.4g}")
    return value


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def step_passed(results: list[CheckResult]) -> bool:
    """All checks that ran passed, and at least one ran: skipped checks prove nothing."""
    ran = [r for r in results if r.status != "skip"]
    return bool(ran) and all(r.status == "pass" for r in ran)


#: What a check read (CheckResult.on), as a verdict says it.
_READ = {"run": "the run", "recorded": "the recorded output", "anatomy": "the compiled kernels"}


def verdict(results: list[CheckResult]) -> str:
    """A step's checks in one line: what passed or failed, and what was skipped and why. "all checks
    passed" only when none was skipped: a CPU that ran only the recorded-output checks says so."""
    ran = [r for r in results if r.status != "skip"]
    failed = sum(r.status == "fail" for r in ran)
    skipped = [r for r in results if r.status == "skip"]
    reasons = sorted({r.detail for r in skipped})
    why = f" ({reasons[0]})" if len(reasons) == 1 else " (each says why)"
    skips = f"{len(skipped)} skipped{why}" if skipped else ""
    if not ran:
        return "no check could run here" + (f": {skips}" if skips else "")
    if failed:
        return f"{failed} of {len(ran)} checks failed" + (f"; {skips}" if skips else "")
    if not skipped:
        return "all checks passed"
    read = {on: sum(r.on == on for r in ran) for on in ("recorded", "anatomy")}
    read = {"run": len(ran) - sum(read.values()), **read}
    alone = next((on for on, n in read.items() if n == len(ran)), None)
    what = f"over {_READ[alone]}" if alone else ", ".join(  # the rest read the run
        f"{n} over {_READ[on]}" for on, n in read.items() if n and on != "run")
    return f"{len(ran)} of {len(results)} checks ran and passed ({what}); {skips}"


# ----------------------------------------------------------------------------- progress
def progress_path() -> Path:
    override = os.environ.get(PROGRESS_ENV)
    if override:
        return Path(override)
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "tinylab" / "progress.json"


def load_progress() -> dict:
    """{"scenarios": {id: {"steps": {"N": attempt}}}}; a missing or unreadable file is empty progress.

    An attempt is {"time", "passed", "passed_at" (first time every check passed, kept), "checks":
    {name: {"status", "value", "detail"}}, "passed_checks": [...], "run_ids": [...]}. A progress
    file that is a FIFO, a device or larger than PROGRESS_LIMIT is a UserError: it is never read.
    """
    path = progress_path()
    try:
        data = json.loads(read_bounded(path, PROGRESS_LIMIT, follow_links=True))
    except (FileNotFoundError, IsADirectoryError, ValueError, UnicodeDecodeError):
        return {"scenarios": {}}
    except UnsafeFile as exc:
        raise UserError(f"progress file ({PROGRESS_ENV}): {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), dict):
        return {"scenarios": {}}
    return data


def record_progress(scenario_id: str, step: int, results: list[CheckResult], run_ids: list[str]) -> None:
    """Save this attempt of a step (write-then-rename, so a crash never leaves half a file)."""
    data = load_progress()
    steps = data["scenarios"].setdefault(scenario_id, {}).setdefault("steps", {})
    previous = steps.get(str(step)) or {}
    now = time.time()
    passed = step_passed(results)
    steps[str(step)] = {
        "time": now,
        "passed": passed,
        "passed_at": previous.get("passed_at") or (now if passed else None),
        "checks": {r.name: {"status": r.status, "value": _jsonable(r.value), "detail": r.detail} for r in results},
        "passed_checks": [r.name for r in results if r.status == "pass"],
        "run_ids": list(run_ids),
    }
    path = progress_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def steps_done(progress: dict, scenario: Scenario) -> int:
    """Steps of `scenario` whose checks have all passed at least once."""
    steps = progress.get("scenarios", {}).get(scenario.id, {}).get("steps", {})
    return sum(1 for s in scenario.steps if (steps.get(str(s.number)) or {}).get("passed_at"))

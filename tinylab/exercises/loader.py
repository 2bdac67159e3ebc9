"""Scenario files: locate a problem by file and line, validate every key, build the frozen model, and
turn a step's presets into RunConfigs.

A scenario is data only (TOML parsed by tomllib, step texts in markdown beside it), documented in
exercises/README.md; everything it says is validated when loaded, so a broken scenario fails in CI,
not in front of a learner.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from tinylab.core import tomlfile
from tinylab.exercises import checks
from tinylab.config import TOGGLES, ConfigError, RunConfig
from tinylab.config.build import from_choices
from tinylab.core.errors import UserError
from tinylab.runs.record import EXERCISE_LABEL
from tinylab.exercises.model import CheckSpec, LEVELS, Question, Recorded, Scenario, ScenarioError, Step
from tinylab.exercises.names import name_types
from tinylab.core.safeio import UnsafeFile, read_bounded

#: The most a scenario file or one of its markdown files may hold (the shipped ones are under 20 KB).
SCENARIO_LIMIT = 1 << 20


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
              "recorded", "nvidia", "hidden"}
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
            return read_bounded(target, SCENARIO_LIMIT, follow_links=True).decode("utf-8")
        except (FileNotFoundError, IsADirectoryError):
            raise self.error(where, f"{_dotted(where)}: file {name!r} not found next to {self.path.name}") from None
        except UnsafeFile as exc:  # a FIFO, a device, too large
            raise self.error(where, f"{_dotted(where)}: {exc}") from None
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
            (name_types(on == "recorded"), frozenset(checks.KERNEL_FUNCTIONS))
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
    if name in ("fault", "parallel", "rdzv_endpoint", "profile_set"):  # unset by default: None
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
        text = read_bounded(path, SCENARIO_LIMIT, follow_links=True).decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(f"{display}:1: not UTF-8 text") from None
    except UnsafeFile as exc:  # a FIFO, a device, too large: never read (scenario folders may be shared)
        raise ScenarioError(f"{display}:1: {exc}") from None
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
    preset = {**base_preset, **own, "label": step_label(sid, number)}
    cpu_preset = {**base_cpu, **own_cpu}
    run_layers = [(("defaults", "preset"), base_preset), (at + ("preset",), own)]
    cpu_layers = [(("defaults", "cpu_preset"), base_cpu), (at + ("cpu_preset",), own_cpu)]
    v.config(run_layers, f"step {number} preset")
    v.config(run_layers + cpu_layers, f"step {number} preset with cpu_preset")
    baseline = None
    if "baseline" in raw:
        own_base = v.preset(raw, "baseline", at)
        baseline = {**base_preset, **own_base, "label": step_label(sid, number) + " baseline"}
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
    hidden = v.string_list(raw, "hidden", at)
    for i, name in enumerate(hidden):
        if name not in preset or name == "label":
            settable = ", ".join(sorted(k for k in preset if k != "label")) or "none"
            raise v.error(at + ("hidden", i), f"step {number} hides {name!r}, which its preset does not set: "
                          f"hidden names settings of the step's run (here: {settable})")
    for j, spec in enumerate(step_checks):  # a check's result lists the values it read: it would tell
        read = {leaf.args[0] for leaf in checks.measured_leaves(checks.parse(spec.expr)) if leaf.op == "name"}
        if read & set(hidden):
            raise v.error(at + ("checks", j, "expr"), f"check {spec.name!r} reads {sorted(read & set(hidden))[0]!r}, "
                          f"which step {number} hides: its result would show it")
    return Step(number, title, text.strip() + "\n", preset, cpu_preset, baseline, step_checks, hints, questions,
                tool, recorded, nvidia, tuple(hidden))


def load_scenarios(root: Path | None = None) -> list[Scenario]:
    """Every scenario under `root` (default: the installed exercises), validated, in course order."""
    root = Path(root) if root is not None else default_root()
    scenarios = [load_scenario_file(path, root) for path in sorted(root.glob("*.toml"))]
    return sorted(scenarios, key=lambda s: (s.order, s.id))


def step_label(scenario_id: str, number: int) -> str:
    """The label of the run a step starts ("exercise performance-debugging step 1"); its baseline's
    adds " baseline"."""
    return f"{EXERCISE_LABEL}{scenario_id} step {number}"


_STEP_LABEL = re.compile(re.escape(EXERCISE_LABEL) + r"(\S+) step (\d+)")


def step_of_label(label: str) -> tuple[str, int] | None:
    """(scenario id, step number) of a step's own run by its label (step_label); None for anything
    else, a baseline run included."""
    found = _STEP_LABEL.fullmatch(label)
    return (found.group(1), int(found.group(2))) if found else None


def find_scenario(scenarios: list[Scenario], scenario_id: str) -> Scenario:
    """The scenario called `scenario_id`, or a one-line error naming the known ones."""
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
    return from_choices(values).validate()

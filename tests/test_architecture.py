"""The shape of the code: the packages stand in layers (each imports only those below it), no
import cycle anywhere, the CLI is no library, Textual stays in the lab, the faces go through the
service, kernels/ imports nothing of tinylab, no module is over 600 lines and the root of tinylab/
stays small. docs/architecture.md draws the same layers for people.

Imports are read from the source: at module level, inside functions and under `if TYPE_CHECKING:`
(an import only a type checker runs is still an arrow a reader follows). Each rule is a function
of the graph (or of the files), tested on a small made-up one first: a rule that cannot fail
proves nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tinylab", "models", "kernels", "exercises")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """Every module (of any package) `name` imports, by full dotted name."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:  # `from pkg import module` imports the module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return found


def with_packages(name: str, imported: set[str]) -> set[str]:
    """What importing `imported` from module `name` runs: each module, and first the `__init__` of
    every package above it (importing a.b.c runs a and a.b), except the packages `name` itself
    sits in, which are imported already by the time `name` runs."""
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, len(name.split(".")) + 1)}
    found = set(imported)
    for module in imported:
        parts = module.split(".")
        found.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return {m for m in found if m in MODULES and m not in ancestors}


GRAPH = {name: with_packages(name, imports_of(name)) for name in MODULES}


def cycles(graph: dict[str, set[str]] = GRAPH) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_imports_and_the_finder_sees_cycles():
    """The walker itself: a known module-level and a known function-local import are found, and
    the cycle finder reports the cycle of the split that formats.py and hotspots.py used to have."""
    assert "tinylab.service.lab" in GRAPH["tinylab.commands._common"]
    assert "tinylab.analysis.hotspots" in GRAPH["tinylab.service.lab"]  # imported inside a method
    # `from tinylab.profilers.pytorch import ...` runs tinylab/profilers/__init__.py first
    assert {"tinylab.profilers.pytorch", "tinylab.profilers"} <= GRAPH["tinylab.service.lab"]
    # ... but a module's own packages are running already when it imports a sibling
    assert "tinylab.analysis.formats" not in GRAPH["tinylab.analysis.formats.rocpd"]
    assert with_packages("x.y", {"a.b.c"}) == set()  # (nothing outside the packages is a node)
    was = {"formats": {"hotspots"}, "hotspots": {"formats", "events"}, "events": set()}
    assert cycles(was) == [["formats", "hotspots"]]


def test_no_import_cycle():
    assert cycles() == []


def test_nothing_outside_the_cli_imports_the_commands():
    allowed = ("tinylab.commands", "tinylab.cli")
    offenders = {name: sorted(m for m in imps if m == "tinylab.commands" or m.startswith("tinylab.commands."))
                 for name, imps in ((n, imports_of(n)) for n in MODULES) if not name.startswith(allowed)}
    assert {k: v for k, v in offenders.items() if v} == {}


def textual_family(module: str) -> bool:
    """Textual and the packages of its world (textual_serve, textual_plotext, textual_dev, ...)."""
    top = module.split(".")[0]
    return top == "textual" or top.startswith("textual_")


def test_the_textual_family_is_recognised():
    assert all(map(textual_family, ["textual", "textual.widgets", "textual_serve.server", "textual_plotext"]))
    assert not any(map(textual_family, ["textualize", "tinylab.tui.app", "rich.text"]))
    assert any(map(textual_family, imports_of("tinylab.tui.serve")))  # the walker sees a function-local import


@pytest.mark.parametrize("framework", ["textual", "textual_serve", "textual_plotext", "any textual_*"])
def test_textual_stays_in_the_lab(framework):
    """Only tinylab/tui imports Textual's world; `tinylab serve` reaches textual-serve through
    tinylab.tui.serve (imported when the command runs)."""
    matches = textual_family if framework == "any textual_*" else (
        lambda m: m == framework or m.startswith(framework + "."))
    offenders = sorted(n for n in MODULES if not n.startswith("tinylab.tui") and any(map(matches, imports_of(n))))
    assert offenders == []


def test_textual_private_names_come_through_one_module():
    offenders = sorted(n for n in MODULES if n != "tinylab.tui.textual_private"
                       and any(part.startswith("_") for m in imports_of(n) if m.startswith("textual.")
                               for part in m.split(".")[1:]))
    assert offenders == []


# ------------------------------------------------------------------------------ the faces
FACES = ("tinylab.commands", "tinylab.tui")
#: What a face (commands/, tui/) may import of tinylab: the one way in (service), the renderers,
#: the faces themselves (`tinylab lab` opens the lab)...
FACE_MAY_IMPORT = ("tinylab.service", "tinylab.render", *FACES)
#: ... the typed run records, and the words every layer shares: the package (its version), the
#: run config and its one builder from what a person chose, errors, event schema and log, text
#: wrapping, bounded reads, and how a child Python starts.
FACE_MAY_IMPORT_MODULES = frozenset({"tinylab", "tinylab.runs.record", "tinylab.config", "tinylab.config.build",
                                     "tinylab.core.errors",
                                     "tinylab.core.events", "tinylab.core.eventlog", "tinylab.core.text",
                                     "tinylab.core.safeio", "tinylab.core.childproc"})


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def face_offenders(imports: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each face module's imports of tinylab that are neither service, renderers nor records."""
    found = {}
    for name, imported in imports.items():
        if within(name, FACES):
            bad = sorted(m for m in imported if within(m, ("tinylab",)) and m not in FACE_MAY_IMPORT_MODULES
                         and not within(m, FACE_MAY_IMPORT))
            if bad:
                found[name] = bad
    return found


def test_the_face_rule_sees_a_face_reaching_past_the_service():
    made_up = {
        "tinylab.commands.show": {"tinylab.service.lab", "tinylab.render.ranks", "tinylab.runs.record", "json"},
        "tinylab.tui.screens.run": {"tinylab.runs.store", "tinylab.analysis.timeline", "textual.app"},
        "tinylab.commands.bench": {"tinylab.training.bench"},
        "tinylab.service.lab": {"tinylab.analysis.hotspots", "tinylab.runs.store"},  # not a face
    }
    assert face_offenders(made_up) == {"tinylab.tui.screens.run": ["tinylab.analysis.timeline", "tinylab.runs.store"],
                                       "tinylab.commands.bench": ["tinylab.training.bench"]}
    # the walker sees a face's function-local import (the show command's ranks, imported when it prints them)
    assert "tinylab.render.ranks" in imports_of("tinylab.commands.show")


def test_the_faces_import_only_the_service_the_renderers_and_the_records():
    """commands/ and tui/ reach the engine through tinylab.service (service/lab.py: "Neither face
    reaches past it"); what they show, through tinylab.render."""
    assert face_offenders({name: imports_of(name) for name in MODULES}) == {}


# ------------------------------------------------------------------------------ the layers
#: The packages from the bottom up (docs/architecture.md says what each holds). A module belongs to
#: the longest unit its name starts with ("tinylab" is the package's own __init__ alone); it may
#: import its own unit and the layers below, never a layer above, nor a unit beside it in its layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("kernels", "exercises"),                 # Triton kernels and the scenarios' files: nothing of tinylab
    ("tinylab", "tinylab.core"),              # the shared nouns: errors, bounded reads, events, kernel tables
    ("models", "tinylab.analysis.formats"),   # the model versions; the readers of each tool's files
    ("tinylab.profilers",),                   # one adapter a tool, declaring its own settings
    ("tinylab.config",),                      # RunConfig, built from the version table and the adapters
    ("tinylab.runs",),                        # run folders, records, the supervisor
    ("tinylab.anatomy",),                     # what each kernel compiles to
    ("tinylab.analysis",),                    # hotspots, timeline, roofline, compare, advice
    ("tinylab.training",),                    # the trainer process, bench
    ("tinylab.exercises",),                   # scenarios and their checks
    ("tinylab.render",),                      # results as text
    ("tinylab.service",),                     # the one way in for the faces
    ("tinylab.tui",),                         # the lab (Textual)
    ("tinylab.commands",),                    # the CLI's commands (`tinylab lab` opens the lab)
    ("tinylab.cli",),
    ("tinylab.__main__",),
)


def unit_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> tuple[int, str] | None:
    """(layer index, unit) of a module: the longest unit it is or sits under; None when none."""
    found = [(len(u), i, u) for i, units in enumerate(layers) for u in units
             if module == u or (u != "tinylab" and module.startswith(u + "."))]
    return (max(found)[1], max(found)[2]) if found else None


def runs_nothing(module: str) -> bool:
    """A package __init__ that imports nothing: importing a module under it runs no code of another
    layer, so the parent package it lies in is no arrow (tinylab.analysis holding analysis.formats)."""
    return MODULES[module].name == "__init__.py" and not imports_of(module)


def layer_offenders(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS,
                    inert=lambda m: False) -> dict[str, list[str]]:
    """Each module's imports of a unit above it, or of another unit of its own layer."""
    found = {}
    for name, imported in graph.items():
        here = unit_of(name, layers)
        bad = []
        for m in imported:
            there = unit_of(m, layers)
            if here is None or there is None or inert(m) or there[1] == here[1]:
                continue
            if there[0] >= here[0]:
                bad.append(m)
        if bad:
            found[name] = sorted(bad)
    return found


def test_the_layer_rule_sees_arrows_up_and_sideways():
    made_up = {"kernels.rmsnorm": {"tinylab.core.kernel_work", "kernels._utils"},
               "tinylab.analysis.compare": {"tinylab.render.compare", "tinylab.core.names", "tinylab.runs.record"},
               "tinylab.analysis.formats.rocpd": {"tinylab.analysis.formats._base", "tinylab.core.safeio"},
               "models.v1_baseline": {"tinylab.analysis.formats.rocpd"},  # beside it in its layer
               "tinylab.profilers.nsys": {"tinylab.analysis.formats.nsys", "tinylab.analysis"},
               "tinylab.render.compare": {"tinylab.analysis.compare"}}  # an arrow down: fine
    assert layer_offenders(made_up) == {"kernels.rmsnorm": ["tinylab.core.kernel_work"],
                                        "tinylab.analysis.compare": ["tinylab.render.compare"],
                                        "models.v1_baseline": ["tinylab.analysis.formats.rocpd"],
                                        "tinylab.profilers.nsys": ["tinylab.analysis"]}
    # ... unless the package above is an __init__ that runs nothing
    assert "tinylab.profilers.nsys" not in layer_offenders(made_up, inert=lambda m: m == "tinylab.analysis")
    assert unit_of("tinylab.analysis.formats.rocpd") == (2, "tinylab.analysis.formats")
    assert unit_of("tinylab.analysis.hotspots") == (7, "tinylab.analysis")
    assert unit_of("tinylab") == (1, "tinylab") and unit_of("tinylab.newthing") is None
    assert runs_nothing("tinylab.analysis") and not runs_nothing("tinylab.analysis.formats")


def test_every_module_has_a_layer():
    assert sorted(m for m in MODULES if unit_of(m) is None) == []


def test_the_packages_stand_in_layers():
    """Counting every import (module level, inside functions, under TYPE_CHECKING): no package
    imports one above it, so the packages form no circle."""
    assert layer_offenders(GRAPH, inert=runs_nothing) == {}


# ------------------------------------------------------------------------------ sizes
MAX_LINES = 600
MAX_ROOT_MODULES = 10


def over_long(lengths: dict[str, int], limit: int = MAX_LINES) -> dict[str, int]:
    return {name: n for name, n in lengths.items() if n > limit}


def root_modules(files: list[str]) -> list[str]:
    """The modules at the root of a package folder, less its __init__ and __main__."""
    return sorted(f for f in files if f.endswith(".py") and f not in ("__init__.py", "__main__.py"))


def test_the_size_rules_see_a_long_module_and_a_crowded_root():
    assert over_long({"a.py": 600, "b.py": 601}) == {"b.py": 601}
    crowded = [f"m{i}.py" for i in range(11)] + ["__init__.py", "__main__.py", "app.tcss"]
    assert len(root_modules(crowded)) == 11 > MAX_ROOT_MODULES
    assert root_modules(["__init__.py", "cli.py", "app.tcss"]) == ["cli.py"]


def test_no_module_is_over_600_lines():
    lengths = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
               for p in (ROOT / "tinylab").rglob("*.py")}
    assert len(lengths) > 100 and over_long(lengths) == {}


def test_the_root_of_tinylab_holds_at_most_10_modules():
    """The root keeps cli, config, events, errors and a few shared helpers; the rest lives in the
    folders that show the processes and the layers."""
    found = root_modules([p.name for p in (ROOT / "tinylab").iterdir() if p.is_file()])
    assert "cli.py" in found and len(found) <= MAX_ROOT_MODULES, found

"""The shape of the code: no import cycle anywhere, the CLI is no library, Textual stays in the lab,
the faces go through the service, analysis imports nothing above it, no module is over 700 lines
and the root of tinylab/ stays small.

Imports are read from the source (module level and inside functions: a cycle hidden in a
function-local import is still a cycle), except those under `if TYPE_CHECKING:`. Each rule is a
function of the graph (or of the files), tested on a small made-up one first: a rule that cannot
fail proves nothing.
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


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(name: str) -> set[str]:
    """Every module (of any package) `name` imports, by full dotted name."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) in skipped:
            continue
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
#: run config, errors, event schema, text wrapping, bounded reads, and how a child Python starts.
FACE_MAY_IMPORT_MODULES = frozenset({"tinylab", "tinylab.runs.record", "tinylab.config", "tinylab.errors",
                                     "tinylab.events", "tinylab.text", "tinylab.safeio", "tinylab.childproc"})


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


# ------------------------------------------------------------------------------ no arrow back up
#: What tinylab.analysis sits under: a pure computation knows nothing of who asks, nor of the tools.
ABOVE_ANALYSIS = ("tinylab.commands", "tinylab.tui", "tinylab.service", "tinylab.profilers", "tinylab.render")
#: The one module of those it may read: the table of what each ROCm release accepts and writes (data,
#: no tool's code), which the AMD readers of analysis/formats need for the file layouts; it lives
#: beside the AMD adapters (DESIGN.md), and `tinylab.profilers` imports nothing when a reader imports it.
ANALYSIS_MAY_READ = frozenset({"tinylab.profilers", "tinylab.profilers.rocm_releases"})


def back_up_arrows(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each analysis module's imports of a layer above it."""
    found = {}
    for name, imported in graph.items():
        bad = sorted(m for m in imported if within(m, ABOVE_ANALYSIS) and m not in ANALYSIS_MAY_READ)
        if within(name, ("tinylab.analysis",)) and bad:
            found[name] = bad
    return found


def test_back_up_arrows_are_seen():
    made_up = {"tinylab.analysis.roofline": {"tinylab.profilers.pytorch", "tinylab.profilers", "tinylab.config"},
               "tinylab.analysis.compare": {"tinylab.render.compare", "tinylab.analysis.names"},
               "tinylab.analysis.formats.rocprof_sys": {"tinylab.profilers", "tinylab.profilers.rocm_releases"},
               "tinylab.analysis.timeline": {"tinylab.service.lab"},
               "tinylab.render.compare": {"tinylab.analysis.compare"}}  # an arrow down: fine
    assert back_up_arrows(made_up) == {"tinylab.analysis.roofline": ["tinylab.profilers.pytorch"],
                                       "tinylab.analysis.compare": ["tinylab.render.compare"],
                                       "tinylab.analysis.timeline": ["tinylab.service.lab"]}


def test_analysis_imports_nothing_above_it():
    assert back_up_arrows(GRAPH) == {}


# ------------------------------------------------------------------------------ sizes
MAX_LINES = 700
MAX_ROOT_MODULES = 10


def over_long(lengths: dict[str, int], limit: int = MAX_LINES) -> dict[str, int]:
    return {name: n for name, n in lengths.items() if n > limit}


def root_modules(files: list[str]) -> list[str]:
    """The modules at the root of a package folder, less its __init__ and __main__."""
    return sorted(f for f in files if f.endswith(".py") and f not in ("__init__.py", "__main__.py"))


def test_the_size_rules_see_a_long_module_and_a_crowded_root():
    assert over_long({"a.py": 700, "b.py": 701}) == {"b.py": 701}
    crowded = [f"m{i}.py" for i in range(11)] + ["__init__.py", "__main__.py", "app.tcss"]
    assert len(root_modules(crowded)) == 11 > MAX_ROOT_MODULES
    assert root_modules(["__init__.py", "cli.py", "app.tcss"]) == ["cli.py"]


def test_no_module_is_over_700_lines():
    lengths = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
               for p in (ROOT / "tinylab").rglob("*.py")}
    assert len(lengths) > 100 and over_long(lengths) == {}


def test_the_root_of_tinylab_holds_at_most_10_modules():
    """The root keeps cli, config, events, errors and a few shared helpers; the rest lives in the
    folders that show the processes and the layers."""
    found = root_modules([p.name for p in (ROOT / "tinylab").iterdir() if p.is_file()])
    assert "cli.py" in found and len(found) <= MAX_ROOT_MODULES, found

"""The measured list of slow tests (support/slow_tests.py) names tests that exist."""

from __future__ import annotations

import ast
from pathlib import Path

from support.slow_tests import base_name, load

TESTS = Path(__file__).resolve().parent


def defined_tests(path: Path) -> set[str]:
    """`file::test` and `file::Class::test` of every test function a test file defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = f"tests/{path.relative_to(TESTS).as_posix()}"
    found = {f"{rel}::{n.name}" for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        found |= {f"{rel}::{cls.name}::{n.name}" for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return found


def test_the_reader_sees_functions_methods_and_parameters():
    assert base_name("tests/a.py::test_x[v1-cpu]") == "tests/a.py::test_x"
    assert "tests/test_slow_tests.py::test_every_listed_slow_test_exists" in defined_tests(Path(__file__))


def test_every_listed_slow_test_exists():
    listed = load()
    assert len(listed) > 20
    known = set().union(*(defined_tests(TESTS.parent / f) for f in {n.split("::")[0] for n in listed}
                          if (TESTS.parent / f).is_file()))
    modules = {n for n in listed if "::" not in n}
    assert sorted(listed - known - modules) == []
    assert sorted(m for m in modules if not (TESTS.parent / m).is_file()) == []

"""Are `models`, `kernels` and `exercises` tinylab's own? They are generic top-level names.

tinylab installs them beside the `tinylab` package (the product's fixed layout), and another
project's `models` package earlier on sys.path would be imported instead: the trainer would then
run someone else's code. The trainer refuses to start in that case and `tinylab doctor` warns.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

SHIPPED = ("models", "kernels", "exercises")


def _home() -> Path:
    return Path(__file__).resolve().parents[2]


def foreign_packages() -> dict[str, str]:
    """name -> where it resolves, for each shipped package that is not the one beside tinylab."""
    found = {}
    for name in SHIPPED:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            found[name] = "not importable"
            continue
        locations = list(spec.submodule_search_locations or []) or [spec.origin or ""]
        if not any(Path(loc).resolve() == _home() / name for loc in locations if loc):
            found[name] = ", ".join(str(loc) for loc in locations) or "an unknown place"
    return found


def describe(found: dict[str, str]) -> str:
    """One line for an error or a warning."""
    listed = "; ".join(f"'{name}' resolves to {where}" for name, where in found.items())
    return (f"{listed}, not tinylab's own ({_home()}): another project's package shadows it; "
            "remove that project from PYTHONPATH or use a separate virtual environment")

"""TOML text as a dict: tomllib (Python 3.11+), or the tomli package on 3.10 (a dependency there).

Shared by the exercise loader and the Slurm defaults file; both turn a parse error into a one-line
error naming their file.
"""

from __future__ import annotations

from tinylab.core.errors import UserError


def loads(text: str) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            raise UserError("reading TOML needs Python 3.11 or newer (for tomllib), or the tomli package: "
                            "pip install tomli") from None
    return tomllib.loads(text)

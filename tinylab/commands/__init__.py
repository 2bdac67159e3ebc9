"""The CLI's sub-commands: argument parsing and printing over tinylab.service.Lab, one module each.

Each module is a `Command`: `add_arguments(parser)` and `run(args) -> int`. Its one-line help is
declared once, in tinylab/cli.py's COMMANDS, so that `tinylab --help` imports no command module.
Nothing outside tinylab/commands and tinylab/cli.py imports this package: it is a face, not a library.
"""

from __future__ import annotations

import argparse
from typing import Protocol, runtime_checkable


@runtime_checkable
class Command(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...

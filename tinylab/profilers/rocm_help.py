"""What an installed AMD profiler accepts, asked of the tool itself: its `--help`, parsed once.

Every release of rocprofv3, rocprof-sys-run and rocprof-compute answers `--help` (rocprof-compute
also `profile --help` and `analyze --help`), and its help lists every option it accepts: argparse
for rocprofv3 and rocprof-compute, timemory's argument parser for rocprof-sys. A table of releases
is always behind the tools (rocprof-compute 3.7 dropped `-p` from profile, 3.3 replaced analyze's
`--save-dfs`); their help is not. So the adapters build each argv from the options the installed
tool lists, and refuse, before anything starts, only when none of what they need is listed.

An option is read from the lines that declare it, never from prose: a line indented by at most
OPTION_INDENT columns whose first word starts with "-" (argparse prints "  -i INPUT, --input INPUT",
"  -p , --path" for an empty metavar; timemory "    -h, -?, --help"). A help text that mentions
an option in a sentence ("Use --output-directory instead") does not list it. `{a,b,c}` on such a
line are the option's choices.

One answer per executable: the output is kept by the path it was found at and its file's mtime
and size (a new install answers anew), each question bounded by HELP_SECONDS. Stdlib only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Mapping

from tinylab.core.errors import UserError
from tinylab.profilers.base import probe, tail

#: How long a tool may take to answer --help or --version (rocprof-compute imports pandas first).
HELP_SECONDS = 30.0
#: Most columns an option's own line is indented by (argparse: 2; timemory: 4). Wrapped prose that
#: starts with an option name sits at the help column (24-40), past this.
OPTION_INDENT = 8
#: Most characters of help text kept (rocprofv3's is ~30 KB).
HELP_LIMIT = 512 << 10

_FLAG = re.compile(r"-{1,2}[A-Za-z0-9?][A-Za-z0-9_-]*")
_CHOICES = re.compile(r"\{([^{}\s]+)\}")
#: Where an option's invocation ends and its help begins: a tab, or two spaces not before a metavar
#: ("-k  [ ...], --kernel  [ ...]" is argparse's invocation for metavar="" and nargs="+")
_SPLIT = re.compile(r"\t| {2,}(?! *[\[{])")


@dataclass(frozen=True)
class ToolHelp:
    """The options one help text lists."""

    command: str  # "rocprof-compute profile --help": what printed it, for messages
    options: frozenset[str]
    choices: Mapping[str, tuple[str, ...]]  # option -> the values its line shows, where it shows them
    text: str

    def has(self, flag: str) -> bool:
        return flag in self.options

    def first(self, *flags: str) -> str | None:
        """The first of `flags` this help lists (a preference order), or None."""
        return next((f for f in flags if f in self.options), None)

    def says(self, phrase: str) -> bool:
        """Whether the help text holds `phrase` (any case): for what options cannot show, e.g.
        rocprofv3's --pmc "multi-pass" or rocprof-sys's "--help=all"."""
        return phrase.lower() in self.text.lower()

    def describes(self, flag: str, phrase: str) -> bool:
        """Whether the lines of `flag` (its own line and the prose under it) hold `phrase` (any case)."""
        lines = self.text.splitlines()
        for i, line in enumerate(lines):
            if flag in _declared(line):
                block = [line]
                for more in lines[i + 1:]:
                    if _declared(more) or not more.strip():
                        break
                    block.append(more)
                return phrase.lower() in " ".join(block).lower()
        return False


def _declared(line: str) -> list[str]:
    """The options a help line declares ([] for prose, usage and blank lines)."""
    stripped = line.expandtabs(8).lstrip(" ")
    indent = len(line.expandtabs(8)) - len(stripped)
    if indent > OPTION_INDENT or not stripped.startswith("-"):
        return []
    invocation = _SPLIT.split(stripped, maxsplit=1)[0]
    flags = []
    for word in invocation.replace(",", " ").split():
        m = _FLAG.fullmatch(word)
        if m:
            flags.append(word)
        elif not word.startswith(("{", "[", "(")) and not word.isupper() and not flags:
            break
    return flags


def parse_help(text: str, command: str) -> ToolHelp:
    """Every option the help lines declare, with the choices their lines show."""
    options: set[str] = set()
    choices: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        flags = _declared(line)
        options.update(flags)
        m = _CHOICES.search(_SPLIT.split(line.expandtabs(8).strip(), maxsplit=1)[0]) if flags else None
        if m:
            for flag in flags:
                choices[flag] = tuple(v for v in m.group(1).split(",") if v)
    return ToolHelp(command, frozenset(options), choices, text)


_ANSWERS: dict[tuple[str, tuple[str, ...]], tuple[tuple[int, int], int | None, str]] = {}


def ask(path: str, args: tuple[str, ...]) -> tuple[int | None, str]:
    """(exit code, output) of `path args`, asked once per executable file version (path + mtime +
    size); (None, why) when it could not run or did not answer within HELP_SECONDS."""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError as exc:
        return None, exc.strerror or str(exc)
    known = _ANSWERS.get((path, args))
    if known is not None and known[0] == stamp:
        return known[1], known[2]
    rc, output = probe(path, args, timeout=HELP_SECONDS)
    output = output[:HELP_LIMIT]
    _ANSWERS[(path, args)] = (stamp, rc, output)
    return rc, output


def tool_help(path: str, args: tuple[str, ...] = ("--help",)) -> ToolHelp:
    """The options `path args` lists; UserError (one line) when it answers none."""
    command = " ".join((os.path.basename(path), *args))
    rc, output = ask(path, args)
    help_ = parse_help(output, command) if rc is not None else None
    if help_ is None or not help_.options:
        why = output if rc is None else (tail(output) or f"exit code {rc}")
        raise UserError(f"{command} lists no options, so tinylab cannot tell what it accepts: {why}")
    return help_

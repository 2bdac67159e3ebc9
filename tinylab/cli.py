"""`tinylab` command line: one sub-command a module under tinylab/commands/.

Sub-command modules are imported only when that sub-command runs (or its --help is asked for),
so `tinylab --help` imports neither torch nor Textual. Each module is a tinylab.commands.Command
(`add_arguments(parser)`, `run(args) -> int`); its one-line help is declared here, once.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn, cast

from tinylab import __version__
from tinylab.core.errors import UserError

#: name -> (module, one-line help). Order is the order shown in --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "lab": ("tinylab.commands.lab", "open the Textual lab (the default with no command)"),
    "train": ("tinylab.commands.train", "train one model version in a child process and print its summary"),
    "run": ("tinylab.commands.run", "launch a run (like train) and follow it, or --detach and return its id"),
    "submit": ("tinylab.commands.submit", "submit a run to Slurm: write its sbatch script into the run folder and sbatch it"),
    "runs": ("tinylab.commands.runs", "list the runs in the run store"),
    "follow": ("tinylab.commands.follow", "stream a live or finished run's progress"),
    "show": ("tinylab.commands.show", "show one run: config, status, summary, artifacts, error"),
    "cancel": ("tinylab.commands.cancel", "cancel a running run (SIGINT, then SIGTERM, then SIGKILL; a Slurm run: scancel)"),
    "rm": ("tinylab.commands.rm", "delete runs from the run store"),
    "compare": ("tinylab.commands.compare", "compare two runs side by side (A/B), with kernel diff"),
    "report": ("tinylab.commands.report", "write a self-contained markdown or HTML report of runs"),
    "bench": ("tinylab.commands.bench", "benchmark versions and kernels on this device; print a table"),
    "roofline": ("tinylab.commands.roofline", "ASCII roofline of a run against measured ceilings"),
    "timeline": ("tinylab.commands.timeline", "where a profiled step's time goes: GPU busy/idle, gaps, phases, memory"),
    "advise": ("tinylab.commands.advise", "what to try next, from a run's own numbers: rule, measured, bound, action, lesson"),
    "kernels": ("tinylab.commands.kernels", "compile the Triton kernels for AMD and NVIDIA GPUs: registers, LDS, spills, occupancy"),
    "doctor": ("tinylab.commands.doctor", "report the environment and which profilers are available"),
    "hotspots": ("tinylab.commands.hotspots", "kernel hotspot table of a run or a profiler output"),
    "exercises": ("tinylab.commands.exercises", "guided debugging scenarios: list, show, check"),
    "serve": ("tinylab.commands.serve", "serve the lab in a browser on localhost (needs textual-serve)"),
}


class _CommandsHelp(argparse.HelpFormatter):
    """Help with every command's description beside its name: argparse measures the names without
    the indent it then gives them, so the longest ("exercises") went to a line of its own."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS and isinstance(action, argparse._SubParsersAction):
            longest = max(map(len, action.choices), default=0)
            self._action_max_length = max(self._action_max_length, longest + self._current_indent + 2 * self._indent_increment)


class _Parser(argparse.ArgumentParser):
    """A refused command line is one line naming what is wrong and where the flags are listed:
    argparse's own refusal put its usage block (18 to 33 lines for `train`) before that line.
    Sub-command parsers are of this class too (argparse makes them of their parent's)."""

    #: The command whose --help to point at: the top parser refuses a sub-command's unknown flags.
    help_of: str | None = None

    def error(self, message: str) -> NoReturn:
        from tinylab.runs.record import printable

        self.exit(2, f"tinylab: error: {printable(message)} (`{self.help_of or self.prog} --help` lists what it "
                     "takes)\n")


def _base_parser() -> _Parser:
    parser = _Parser(
        prog="tinylab",
        description="A terminal lab for GPU performance work on a tiny LLaMA transformer. "
        "With no command, opens the lab.",
        formatter_class=_CommandsHelp,
    )
    parser.add_argument("--version", action="version", version=f"tinylab {__version__}")
    return parser


def build_parser(command: str | None) -> _Parser:
    """Parser with every command listed, but only `command`'s module imported."""
    parser = _base_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            from tinylab.commands import Command

            module = cast(Command, importlib.import_module(module_name))
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"] and len(argv) > 1:  # `tinylab --version v2`: meant `tinylab train --version v2`
        print(f"tinylab: error: --version takes no value, got {' '.join(argv[1:])!r}: it prints tinylab's version; "
              f"a model version is `tinylab train --version {argv[1]}`", file=sys.stderr)
        return 2
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "lab")  # `tinylab --runs-dir X` opens the lab with that option
    command = None if argv[0].startswith("-") else argv[0]
    if command is not None and command not in COMMANDS:
        choices = ", ".join(COMMANDS)
        print(f"tinylab: error: unknown command {command!r}: choose one of {choices}", file=sys.stderr)
        return 2
    parser = build_parser(command)
    parser.help_of = f"tinylab {command}" if command else None
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except UserError as exc:  # one line, whatever a file it names put into it (an escape sequence, a newline)
        from tinylab.runs.record import printable

        print(f"tinylab: error: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tinylab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

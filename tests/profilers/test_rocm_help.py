"""Reading what a tool accepts from its own help (tinylab/profilers/rocm_help.py): the options its
declaring lines list in argparse's and timemory's layouts, never an option named in prose; the
choices a line shows; one answer per executable file (path, mtime, size), within a time bound."""

from __future__ import annotations

import os

import pytest

from tinylab.core.errors import UserError
from tinylab.profilers import rocm_help
from tinylab.profilers.rocm_help import ask, parse_help, tool_help

# argparse's RawTextHelpFormatter with metavar="" (rocprof-compute src/argparser.py): "-p , --path",
# tab-indented help, a deprecated option whose prose names the one that replaces it
COMPUTE_PROFILE = """usage: 

`rocprof-compute profile --name <workload_name> [profile options] [roofline options] -- <workload_cmd>`
\trocprof-compute profile -n vcopy_all -- ./vcopy -n 1048576 -b 256

Help:
  -h, --help                           show this help message and exit

Profile Options:
  -n , --name                          \t\t\tAssign a name to workload.
  -p , --path                          \t\t\t(DEPRECATED) Specify path to save workload.
                                       \t\t\t --path is deprecated. Use --output-directory instead.
  -k  [ ...], --kernel  [ ...]         \t\t\tKernel filtering.
  --format-rocprof-output              \t\t\tSet the format of output file of rocprof.
"""
# argparse with choices and a long invocation (rocprofv3.py: -f, --output-format; --pmc's multi-pass help)
ROCPROFV3 = """usage: rocprofv3 [options] -- <application> [application options]

options:
  -f {csv,json,pftrace,otf2,rocpd} [{csv,json,pftrace,otf2,rocpd} ...], --output-format {csv,json,pftrace,otf2,rocpd} [{csv,json,pftrace,otf2,rocpd} ...]
                        For adding output format
  --pmc [PMC ...]       Specify Performance Monitoring Counters to collect (space-separated). For multi-pass: --pmc
                        "GROUP1_C1" --pmc "GROUP2_C1"
  --stats [BOOL]        For collecting statistics of enabled tracing types. Must be combined with one or more
                        --kernel-trace options
"""
# timemory's print_help (ROCm/timemory argparse.cpp): a usage block, then "Options:" indented by 4
TIMEMORY = """[rocprof-sys-run] Usage: rocprof-sys-run [ --help (count: 0, dtype: bool)
                                          --version (count: 0, dtype: bool)
                                         ]

Options:
    -h, -?, --help                 Shows this page (count: 0, dtype: bool)
    --version                      Prints the version and exit (count: 0, dtype: bool)
    -o, --output                   Output path. Accepts 1-2 parameters corresponding to the output path and the output
                                     prefix (see also --trace-file)
    -T, --trace                    Generate a detailed trace (perfetto output)
"""


def test_argparse_options_are_read_from_their_lines_not_from_prose():
    listed = parse_help(COMPUTE_PROFILE, "rocprof-compute profile --help")
    assert listed.options == {"-h", "--help", "-n", "--name", "-p", "--path", "-k", "--kernel", "--format-rocprof-output"}
    assert listed.first("--output-directory", "-p", "--path") == "-p"  # named in -p's prose only: not listed
    assert listed.describes("-p", "deprecated") and not listed.describes("-n", "deprecated")


def test_choices_and_what_an_option_says():
    listed = parse_help(ROCPROFV3, "rocprofv3 --help")
    assert listed.options == {"-f", "--output-format", "--pmc", "--stats"}
    assert listed.choices["--output-format"] == listed.choices["-f"] == ("csv", "json", "pftrace", "otf2", "rocpd")
    assert listed.describes("--pmc", "multi-pass") and not listed.describes("--stats", "multi-pass")
    assert not listed.has("--kernel-trace")  # wrapped prose that starts with an option name sits past OPTION_INDENT


def test_timemory_layout():
    listed = parse_help(TIMEMORY, "rocprof-sys-run --help")
    assert listed.options == {"-h", "-?", "--help", "--version", "-o", "--output", "-T", "--trace"}
    assert not listed.has("--trace-file") and listed.first("-o", "--output") == "-o"


def _counting_tool(tmp_path, body: str = 'echo "  --answer   the answer"'):
    tool = tmp_path / "tool"
    tool.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'runs'}\n{body}\n")
    tool.chmod(0o755)
    return tool


def test_one_answer_per_executable_file_version(tmp_path):
    tool = _counting_tool(tmp_path)
    assert tool_help(str(tool)).has("--answer") and tool_help(str(tool)).has("--answer")
    assert (tmp_path / "runs").read_text().count("ran") == 1  # asked once
    tool.write_text(tool.read_text() + 'echo "  --another  one"\n')  # a new install: its size and mtime change
    os.utime(tool, ns=(0, tool.stat().st_mtime_ns + 1_000_000_000))
    assert tool_help(str(tool)).has("--another") and (tmp_path / "runs").read_text().count("ran") == 2


def test_a_tool_that_does_not_answer_in_time_or_lists_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(rocm_help, "HELP_SECONDS", 0.5)
    slow = _counting_tool(tmp_path, "exec sleep 5")
    rc, why = ask(str(slow), ("--help",))
    assert rc is None and why.startswith("no answer within")
    mute = tmp_path / "mute"
    mute.write_text("#!/bin/sh\necho 'nothing here' >&2\nexit 3\n")
    mute.chmod(0o755)
    with pytest.raises(UserError, match=r"^mute --help lists no options, so tinylab cannot tell what it accepts: "
                                        r"nothing here$"):
        tool_help(str(mute))

"""The README is what a newcomer follows: what it names must exist, so that it cannot drift from
the tool (commands, flags, keys, scenarios, linked pages)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tinylab.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_command_the_readme_names_exists():
    table = README[README.index("## Commands"):README.index("Training flags follow")]
    first_cells = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    named = set(re.findall(r"`tinylab ([a-z]+)", README))
    named |= {re.sub(r"^tinylab ", "", code).split()[0] for cell in first_cells for code in re.findall(r"`([^`]+)`", cell)}
    named.discard("tinylab")  # bare `tinylab` opens the lab
    assert named, "the README names no command"
    assert named - set(COMMANDS) == set()
    assert set(COMMANDS) - {"lab"} <= named, "a command the README does not mention"


def test_every_training_flag_the_readme_names_is_accepted():
    section = README[README.index("Training flags follow"):README.index("### Where runs live")]
    flags = {f.replace("[no-]", "") for f in re.findall(r"--(?:\[no-\])?[a-z0-9-]+", section)}
    parser = build_parser("train")
    train = parser._subparsers._group_actions[0].choices["train"]  # type: ignore[union-attr]
    known = {opt for action in train._actions for opt in action.option_strings}
    missing = sorted(f for f in flags if f not in known and f.replace("--", "--no-", 1) not in known)
    assert not missing


SHELL_LINES = [line for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S)
               for line in block.splitlines() if line.startswith("tinylab ")]


def test_the_shell_blocks_hold_the_tour_and_the_slurm_commands():
    assert "tinylab exercises check v1-baseline --step 1" in SHELL_LINES
    assert any(line.startswith("tinylab submit ") for line in SHELL_LINES)


@pytest.mark.parametrize("line", SHELL_LINES)
def test_the_shell_commands_parse(line: str):
    """Every `tinylab ...` line of the README's shell blocks (the tour, several GPUs and Slurm)."""
    argv = line.split("#")[0].split()[1:]
    argv = ["A" if a.startswith("<") else a for a in argv]
    parser = build_parser(argv[0])
    parser.parse_args(argv)


@pytest.mark.parametrize("link", sorted(set(re.findall(r"\]\(((?:docs/)[^)#]+)", README))))
def test_linked_pages_exist(link: str):
    assert (ROOT / link).is_file()


def test_every_scenario_is_listed():
    shipped = {p.stem for p in (ROOT / "exercises").glob("*.toml")}
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", README, flags=re.M)) & shipped
    assert listed == shipped


def test_lab_keys_the_readme_teaches_are_bound():
    """The tour's keys on the Lab screen: p and f jump, enter launches, r/x/w/d/q are bound."""
    from tinylab.tui.app import TinyLabApp
    from tinylab.tui.screens.lab import LabScreen

    lab_keys = {b.key for b in LabScreen.BINDINGS} | {b.key for b in TinyLabApp.BINDINGS}
    for key in ("enter", "p", "f", "r", "x", "w", "d", "q", "l"):
        assert any(key in k.split(",") for k in lab_keys), key


def test_the_rocprofv3_row_says_what_it_writes():
    """The database where the tool's --output-format lists rocpd (7.0 on), CSV before; other formats
    on request (the row once said CSV on every release, while ROCm 7 defaults to the database)."""
    from tinylab.core import rocm_releases as rr
    from tinylab.profilers.rocm_help import parse_help
    from tinylab.profilers.rocprofv3 import Rocprofv3Adapter

    row = next(line for line in README.splitlines() if line.startswith("| `rocprofv3` |"))
    listed = {fmt: parse_help(f"  --output-format {{{fmt}}}  formats\n", "rocprofv3 --help") for fmt in (
        "csv,json,pftrace", "csv,json,pftrace,otf2,rocpd")}
    assert [Rocprofv3Adapter()._formats(h) for h in listed.values()] == [["csv"], ["rocpd"]]
    assert next(k for k, f in rr.ROCPROFV3.items() if "rocpd" in f.formats) == "7.0"
    assert "rocpd SQLite database on ROCm 7.0 and later" in row and "as CSV before" in row
    assert "--rocprofv3-formats csv" in row and "TINYLAB_ROCPROFV3_FORMAT=csv" in row


def test_screen_keys_work_where_the_readme_says():
    """A key the screen table gives alone works everywhere (an app key); one that works only on
    some screens (`k` on a run, `v` in Runs) says where, and is bound there."""
    from tinylab.tui.app import TinyLabApp
    from tinylab.tui.screens.help import _screens

    def bound(bindings, key: str) -> bool:
        return any(key in b.key.split(",") for b in bindings)

    screens = dict(_screens())
    table = README[README.index("| screen | key to open it |"):README.index("## Commands")]
    rows = [line.split("|")[1:3] for line in table.splitlines()[2:] if line.startswith("| ")]
    assert len(rows) == 8
    for name, cell in rows:
        key = re.findall(r"`([^`]+)`", cell)[0]
        if bound(TinyLabApp.BINDINGS, key):
            continue
        where = [s for s in screens if re.search(rf"\b{s}\b(?! screen)", cell)]
        assert where, f"{name.strip()}: `{key}` is no app key, and the README does not say where it works"
        for screen in where:
            assert bound(screens[screen].__dict__.get("BINDINGS", []), key), (key, screen)


def test_the_install_section_says_what_to_drop_where_the_extra_index_cannot_be_reached():
    """pip retries an unreachable extra index five times a package: the README names the flag to drop."""
    section = README[README.index("## Install and open the lab"):README.index("## A first tour")]
    install = next(line for line in section.splitlines() if line.startswith("python3 -m venv .venv && "))
    flag = re.search(r"--extra-index-url \S+", install)
    assert flag is not None
    assert "WARNING: Retrying" in section and f"drop `{flag.group(0)}` from the line" in section

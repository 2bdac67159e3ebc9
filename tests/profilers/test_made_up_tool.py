"""Adding a profiler (docs/profilers.md), followed with a made-up tool: an adapter that declares one
setting, put on the registry line (monkeypatch) and nothing else changed. Its RunConfig field, its
flag, its environment default, its checks, the Lab's rows and the Hotspots screen's viewers all
come from the declaration."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from tinylab import config
from tinylab.analysis.roofline import steps_seen
from tinylab.commands.runflags import add_run_arguments
from tinylab.config import ConfigError, RunConfig, env_defaults
from tinylab.profilers import registry
from tinylab.profilers.base import RUN, Config, Setting, Viewer, WrapperAdapter
from tinylab.service import profilers
from tinylab.tui.screens.hotspots import open_hint
from tinylab.tui.screens.lab import profiler_rows


class MadeUpAdapter(WrapperAdapter):
    """Step 1, the adapter: what it is, its one setting, and what it declares."""

    name = "made-up"
    executable = "made-up-prof"
    vendor = "nvidia"
    description = "a made-up tool: the time of every kernel launch"
    fix = "none: the tool is made up"
    settings = (Setting("made_up_depth", int, 3, low=1, high=9, metavar="N", env="TINYLAB_MADE_UP_DEPTH",
                        help="made-up: how many call levels it records (default 3)"),)
    table_steps = RUN
    traces = True
    rank_limit = "the made-up tool replays every launch alone"
    viewers = (Viewer((".madeup",), "made-up trace, in the made-up viewer:", ("made-up-view FILE",)),)

    def wrap_argv(self, out_dir: Path, config: Config) -> list[str]:
        return [self.argv0(), "--depth", str(config.made_up_depth), "-o", str(out_dir), "--"]


@pytest.fixture
def made_up(monkeypatch) -> type:
    """Step 3, the registry line, and the run config class that knows the tool: built by the
    function that builds tinylab.config.RunConfig (step 2, a format reader, is not needed here)."""
    monkeypatch.setattr(registry, "ADAPTERS", (*registry.ADAPTERS, MadeUpAdapter))
    return config.config_class(registry.ADAPTERS)


def test_its_setting_is_a_config_field_and_a_config_json_key(made_up):
    cfg = made_up(profilers=["made-up"]).validate()
    assert cfg.made_up_depth == 3 and json.loads(cfg.to_json())["made_up_depth"] == 3
    assert made_up.from_dict({**cfg.to_dict(), "made_up_depth": 5}).made_up_depth == 5
    assert made_up.read({"version": "v1"}).made_up_depth == 3  # a run from before it existed: the default
    # the other fields are RunConfig's own, and the module's RunConfig is untouched
    assert [f.name for f in dataclasses.fields(made_up)][:-1] == [f.name for f in dataclasses.fields(RunConfig)]
    assert "made_up_depth" not in {f.name for f in dataclasses.fields(RunConfig)}


def test_its_declarations_are_checked_in_validate(made_up):
    def refused(**values) -> str:
        with pytest.raises(ConfigError) as err:
            made_up(**values).validate()
        return str(err.value)

    assert refused(profilers=["made-up"], made_up_depth=0) == "--made-up-depth must be an integer from 1 to 9, got 0"
    assert refused(made_up_depth=5) == "--made-up-depth is a setting of made-up: add --profile made-up"
    assert refused(profilers=["vtune"]).endswith("choose from pytorch, deepspeed, rocprofv3, rocprof-sys, "
                                                 "rocprof-compute, ncu, nsys, proton, made-up")
    assert refused(profilers=["made-up", "nsys"]) == "only one external profiler can wrap a run, got made-up, nsys"
    assert refused(profilers=["made-up"], parallel="ddp", nproc_per_node=2) == (
        "--profile made-up cannot follow 2 ranks: the made-up tool replays every launch alone; profile a run of "
        "--nproc-per-node 1")
    assert refused(profilers=["proton", "made-up"]).startswith(
        "--profile proton and --profile made-up would both trace the GPU's kernels")  # it traces


def test_its_variable_defaults_its_setting_in_runs_that_use_it(made_up):
    env = {"TINYLAB_MADE_UP_DEPTH": " 7 "}
    assert env_defaults(["made-up"], env) == {"made_up_depth": 7}
    assert env_defaults(["pytorch"], env) == {}
    with pytest.raises(ConfigError, match="TINYLAB_MADE_UP_DEPTH must be an integer, got 'deep'"):
        env_defaults(["made-up"], {"TINYLAB_MADE_UP_DEPTH": "deep"})


def test_the_cli_makes_its_flag(made_up):
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    args = parser.parse_args(["--profile", "made-up", "--made-up-depth", "5"])
    assert args.profilers == ["made-up"] and args.made_up_depth == 5
    assert parser.parse_args([]).made_up_depth is None  # unset: its variable's, else its default
    text = " ".join(parser.format_help().split())
    assert "made-up: how many call levels it records (default 3); $TINYLAB_MADE_UP_DEPTH" in text
    assert "proton, made-up" in text  # --profile's help


def test_the_faces_lists_and_the_readers_pick_it_up(made_up, tmp_path):
    assert profilers.names()[-1] == "made-up" and profiler_rows()[-1] == ("made-up",)  # the Lab's boxes
    assert sum(profiler_rows(), ()) == profilers.names()
    assert open_hint("profiles/made-up/run.madeup") == ("made-up trace, in the made-up viewer:", ("made-up-view FILE",))
    assert open_hint("profiles/nsys/report.nsys-rep")[1] == ("nsys-ui FILE", "nsys stats FILE")  # the others stay
    cfg = made_up(profilers=["made-up"], made_up_depth=4).validate()
    assert steps_seen("made-up", cfg, 40) == 40  # its table covers the run
    adapter = registry.wrapper_adapter(cfg)
    assert isinstance(adapter, MadeUpAdapter) and adapter.wrap_argv(tmp_path, cfg)[1:3] == ["--depth", "4"]
    assert [a.name for a in registry.all_adapters()][-1] == "made-up"  # the doctor's list

"""The run flags shared by `tinylab run` and `tinylab train` (tinylab/commands/runflags.py): the parallel
engine a number of processes picks."""

from __future__ import annotations


def test_runflags_pick_ddp_for_several_processes():
    import argparse

    from tinylab.commands.runflags import add_run_arguments, config_from_args

    p = argparse.ArgumentParser()
    add_run_arguments(p)
    assert config_from_args(p.parse_args(["--nproc-per-node", "2"]), "cpu").parallel == "ddp"
    assert config_from_args(p.parse_args([]), "cpu").parallel is None
    assert config_from_args(p.parse_args(["--parallel", "fsdp", "--nproc-per-node", "2"]), "cpu").parallel == "fsdp"

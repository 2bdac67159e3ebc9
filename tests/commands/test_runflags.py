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


def test_a_profiler_setting_comes_from_its_flag_else_its_variable(monkeypatch):
    import argparse

    from tinylab.commands.runflags import add_run_arguments, config_from_args

    p = argparse.ArgumentParser()
    add_run_arguments(p)
    monkeypatch.setenv("TINYLAB_PROFILE_MEMORY", "1")
    assert config_from_args(p.parse_args(["--profile", "pytorch"]), "cpu").profile_memory is True
    assert config_from_args(p.parse_args(["--profile", "pytorch", "--no-profile-memory"]), "cpu").profile_memory is False
    assert config_from_args(p.parse_args([]), "cpu").profile_memory is False  # no pytorch profiler: no effect
    args = p.parse_args(["--profile", "rocprofv3", "--rocprofv3-pmc", "SQ_WAVES GRBM_COUNT", "--rocprofv3-pmc", "TCC_HIT"])
    assert config_from_args(args, "cpu").rocprofv3_pmc == ["SQ_WAVES GRBM_COUNT", "TCC_HIT"]

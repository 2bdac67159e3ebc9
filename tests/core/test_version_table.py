"""The version table (tinylab/core/versions.py): its records hold together, they say what the
literals of the code they replaced said, and a made-up fifth version registered in the table goes
through every code path that asks the record, none of which names a version.

Two names are read off the table when their module is imported, so a version written into the
table's source is in them and one registered at run time (this file's v5) is not: the bench's
default cases and PEER (training/bench.py) and the step advisor's PEER (analysis/advice/step.py).
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import math

import pytest

from tinylab.analysis.advice import Facts
from tinylab.analysis.advice.kernels import attention_scores
from tinylab.analysis.advice.scale import memory_capacity
from tinylab.analysis.advice.step import elementwise_chains, optimizer_share
from tinylab.anatomy.launches import kernel_config, scenario_of, scenarios
from tinylab.config import TOGGLE_HELP, ConfigError, RunConfig
from tinylab.core import versions
from tinylab.core.versions import ENGINE_LIMITS, FAULT_NAMES, FAULTS, TABLE, TOGGLES, VERSIONS, baseline, first, lookup

from support.advice import config, summary


# ------------------------------------------------------------------------------ the table
def test_the_table_lists_the_four_versions_in_order_and_the_first_is_the_default():
    assert list(TABLE) == ["v1", "v2", "v3", "v4"]
    assert all(name == v.name for name, v in TABLE.items())
    assert baseline() is TABLE["v1"] and RunConfig().version == "v1"


def test_the_views_say_what_the_config_literals_said():
    """VERSIONS, TOGGLES, FAULTS and ENGINE_LIMITS as config.py spelled them before the table,
    order included (the CLI's help and the Lab's form list them in it)."""
    assert list(VERSIONS) == ["v1", "v2", "v3", "v4"] and VERSIONS["v3"].startswith("Triton kernels:")
    assert TOGGLES == {
        "qkv_fusion": {"v2": True},
        "sdpa": {"v2": True, "v4": False},
        "swiglu_fusion": {"v2": True},
        "torch_compile": {"v2": False},
        "cuda_graph": {"v2": False, "v3": False, "v4": True},
        "recompute_ffn": {"v3": False, "v4": False},
    }
    assert list(TOGGLES) == ["qkv_fusion", "sdpa", "swiglu_fusion", "torch_compile", "cuda_graph", "recompute_ffn"]
    every, triton = ("v1", "v2", "v3", "v4"), ("v3", "v4")
    assert FAULTS == {"missing-init": every, "non-contiguous": triton, "unsynced-timing": every,
                      "naive-triton-swiglu": triton, "detached-backward": triton, "straggler": every}
    assert list(FAULTS) == list(FAULT_NAMES)
    assert list(ENGINE_LIMITS) == [("fsdp", "v4"), ("zero1", "v4"), ("zero2", "v4")]
    assert all(why.startswith("v4 keeps its GEMM weights as views of one flat buffer") for why in ENGINE_LIMITS.values())


def test_every_record_holds_together():
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    for v in TABLE.values():
        module, _, name = v.model.partition(":")
        assert isinstance(getattr(importlib.import_module(module), name), type), v.model
        assert set(v.toggles) <= set(TOGGLE_HELP) <= fields, v.name  # every toggle has its help and its field
        assert set(v.faults) <= set(FAULT_NAMES) and set(v.planned_toggles) <= set(v.toggles), v.name
        assert v.optimizer in ("torch", "fused", "flat"), v.name
        assert not v.flash_head_dims or v.triton, v.name  # the flash kernel is a Triton kernel
        assert v.fused_into is None or TABLE[v.fused_into].triton, v.name
        assert not (v.eager_attention and v.triton), v.name
    assert set(FAULT_NAMES) == {f for v in TABLE.values() for f in v.faults}  # each fault applies somewhere
    peers = [v for v in TABLE.values() if v.peer]
    assert len(peers) == 1 and not peers[0].triton and "torch_compile" in peers[0].toggles
    assert first(peer=True).fusions == ("qkv_fusion", "sdpa", "swiglu_fusion")


def test_the_records_say_what_the_version_literals_said():
    """The rules that were written as `version in ("v3", "v4")` and the like, read off the records."""
    assert [n for n, v in TABLE.items() if v.triton] == ["v3", "v4"]
    assert [n for n, v in TABLE.items() if v.fused_loss] == ["v4"]
    assert [(n, v.optimizer) for n, v in TABLE.items()] == [("v1", "torch"), ("v2", "fused"), ("v3", "fused"),
                                                              ("v4", "flat")]
    assert [n for n, v in TABLE.items() if v.strict_fp32_sdpa] == ["v4"]
    # eager attention: v1 always, v2 unless SDPA, the Triton versions never
    assert [(n, v.attends_eagerly(False), v.attends_eagerly(True)) for n, v in TABLE.items()] == [
        ("v1", True, True), ("v2", True, False), ("v3", False, False), ("v4", False, False)]
    assert TABLE["v3"].flash_head_dims == TABLE["v4"].flash_head_dims == (16, 32, 64, 128)
    assert first(triton=True).name == "v3" and TABLE["v3"].fused_into == "v4"


def test_a_stored_version_that_is_none_of_the_tables_has_no_record():
    assert lookup("v2") is TABLE["v2"]
    assert lookup("v9") is None and lookup(None) is None and lookup(["v1"]) is None


# ------------------------------------------------------------------------------ a fifth version
@pytest.fixture
def v5(monkeypatch):
    """A made-up v5, v4's record under another name, registered in the table for one test."""
    record = dataclasses.replace(TABLE["v4"], name="v5", description="Made up: v4 once more")
    monkeypatch.setitem(versions.TABLE, "v5", record)
    return record


TINY = dict(vocab_size=64, hidden_dim=32, num_layers=1, num_heads=2, num_kv_heads=1, batch_size=2, seq_len=16,
            num_steps=2, warmup_steps=0, device="cpu")


def test_the_views_and_the_config_rules_take_a_registered_version(v5):
    """RunConfig's validation and toggles read the record: its toggles, defaults, faults, engine
    limits, head sizes and memory floor are v4's."""
    assert list(VERSIONS)[-1] == "v5" and TOGGLES["sdpa"] == {"v2": True, "v4": False, "v5": False}
    assert "v5" in FAULTS["non-contiguous"] and ENGINE_LIMITS[("fsdp", "v5")] == ENGINE_LIMITS[("fsdp", "v4")]
    cfg = RunConfig(version="v5", fault="non-contiguous").validate()
    assert cfg.spec is v5 and cfg.toggle("cuda_graph") is True and cfg.toggle("qkv_fusion") is False
    assert cfg.toggle("sdpa") is True and RunConfig(version="v5", precision="bf16").toggle("sdpa") is False
    assert RunConfig(version="v5").resolved().recompute_ffn is False
    with pytest.raises(ConfigError, match="--qkv-fusion does not apply to v5: it is a toggle of v2"):
        RunConfig(version="v5", qkv_fusion=True).validate()
    with pytest.raises(ConfigError, match="--parallel fsdp cannot train v5: v4 keeps its GEMM weights"):
        RunConfig(version="v5", parallel="fsdp", nproc_per_node=2).validate()
    with pytest.raises(ConfigError, match="v5's flash-attention kernel needs a head dimension of 16, 32, 64 or 128"):
        RunConfig(version="v5", hidden_dim=96, num_heads=2, num_kv_heads=1).validate()
    parts = RunConfig(version="v5").memory_floor_parts()
    assert parts == RunConfig(version="v4").memory_floor_parts() and parts["attention"] == 0


def test_the_cli_lists_a_registered_version(v5, capsys):
    from tinylab import cli

    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    assert "model version: v1, v2, v3, v4, v5" in " ".join(capsys.readouterr().out.split())


def test_a_registered_version_builds_by_lookup_and_trains_a_step_on_a_cpu(v5, tmp_path):
    from models import build_model
    from models.v4_ultra import TinyLlamaV4
    from tinylab.training.trainer import run_training

    cfg = RunConfig(version="v5", **TINY).validate()
    assert type(build_model(cfg)) is TinyLlamaV4
    result = run_training(cfg, tmp_path / "run", out=io.StringIO())  # Triton's interpreter, v4's flat AdamW
    assert math.isfinite(result["final_loss"]) and result["params_trained"] == result["params_total"]


def test_the_anatomy_and_the_advisor_ask_the_record(v5):
    planned = scenarios(RunConfig())
    assert [label for label in planned if label.startswith("v5")] == [
        "v5", "v5 deterministic", "v5 naive-triton-swiglu", "v5 non-contiguous", "v5 no-sdpa", "v5 recompute-ffn"]
    assert scenario_of(RunConfig(version="v5", recompute_ffn=True)) == "v5 recompute-ffn"
    assert kernel_config().version == "v3"  # the first Triton version, still
    # each rule fires for v1 on these facts, and answers v5 as it answers v4
    kernels = {"total_ns": 30e6, "kernel_count": 2, "kernels": [],
               "categories": {"elementwise": {"calls": 900, "total_ns": 9e6}, "gemm": {"calls": 150, "total_ns": 21e6}}}

    def facts(version: str) -> Facts:
        return Facts("r", config=config(version=version, seq_len=2048), device="cuda:0", device_memory_mb=80_000.0,
                     summary=summary(peak_mem_mb=75_000.0, opt_ms_median=3.0), kernels=kernels,
                     kernel_source="kernels.csv", kernel_steps=3)

    for rule in (memory_capacity, optimizer_share, attention_scores, elementwise_chains):
        assert rule(facts("v1")) is not None, rule.__name__
        v4, v5 = rule(facts("v4")), rule(facts("v5"))
        assert (v4 and v4.action.changes) == (v5 and v5.action.changes), rule.__name__
    assert memory_capacity(facts("v5")).action.changes == {"recompute_ffn": True}  # a toggle of v5

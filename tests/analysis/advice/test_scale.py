"""Memory near capacity, exposed communication (the real 2-rank CPU DDP run) and a straggler."""

from __future__ import annotations

import dataclasses

import pytest

from tinylab.analysis.advice.model import Facts
from tinylab.analysis.advice.scale import exposed_communication, memory_capacity, straggler
from tinylab.core.events import RankEvent

from support.advice import config, ddp2_facts, summary


def test_a_peak_near_the_cards_capacity_suggests_recompute_or_bf16():
    full = summary(peak_mem_mb=75_000.0)
    v4 = memory_capacity(Facts("r", config=config(version="v4"), summary=full, device_memory_mb=80_000.0,
                               device_name="H100"))
    assert "94% of the 80,000 MB" in v4.measured.text and v4.action.changes == {"recompute_ffn": True}
    v1 = memory_capacity(Facts("r", config=config(), summary=full, device_memory_mb=80_000.0))
    assert v1.action.changes == {"precision": "bf16"} and v1.impact.bound == pytest.approx(2.0)
    assert memory_capacity(Facts("r", config=config(), summary=full)) is None  # capacity unknown


def test_the_real_ddp_run_spends_most_of_its_step_in_exposed_collectives():
    item = exposed_communication(ddp2_facts())
    assert "29.17 ms of 29.69 ms collectives exposed (2% hidden) = 60% of the 48.90 ms step" in item.measured.text
    assert item.impact.bound == pytest.approx(48.904 / (48.904 - 29.17), rel=1e-3)
    assert item.impact.confidence == "low"  # 4 measured steps


def test_a_rank_much_slower_than_the_others_is_a_straggler():
    f = ddp2_facts(config={**ddp2_facts().config, "fault": "straggler"})
    ranks = (RankEvent(0, fwd_ms_median=10.0), RankEvent(1, fwd_ms_median=30.0))
    item = straggler(dataclasses.replace(f, ranks=ranks))
    assert "rank 1 forward 30.00 ms = 3.0x the other ranks' median 10.00 ms" in item.measured.text
    assert item.action.changes == {"fault": None}
    even = (RankEvent(0, fwd_ms_median=10.0), RankEvent(1, fwd_ms_median=12.0))
    assert straggler(dataclasses.replace(f, ranks=even)) is None

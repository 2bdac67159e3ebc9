"""The event schema: typed events in, the same events out, docs/events.md made from the dataclasses,
and the summary's verdict on a busy machine."""

from __future__ import annotations

import pytest
from support.paths import REPO

from tinylab.core import events
from tinylab.core.eventlog import EventWriter, read_events
from tinylab.core.events import (
    ErrorEvent,
    ExitEvent,
    LoadEvent,
    PassEvent,
    ProfileEvent,
    RankEvent,
    StartEvent,
    StepEvent,
    Summary,
    TelemetryEvent,
    encode,
)


def test_docs_events_md_is_made_from_the_dataclasses():
    page = REPO / "docs" / "events.md"
    assert page.is_file() and page.read_text(encoding="utf-8") == events.schema_page(), (
        "docs/events.md is not what the event dataclasses give; regenerate it:\n"
        "  python -c \"from tinylab.core.events import schema_page; "
        "open('docs/events.md', 'w', encoding='utf-8').write(schema_page())\"")


def test_every_kind_reads_back_as_it_was_written(tmp_path):
    written = [
        StartEvent(config={"version": "v1"}, device="cpu", pid=7, params_total=3, time=1.0),
        StepEvent(step=0, loss=6.9, step_ms=2.0, fwd_ms=1.0, warmup=True, time=2.0),
        Summary(samples_per_s=10.0, steps=4, world_size=2),
        RankEvent(rank=1, steps=4, comm_ms=3.0, comm_hidden=None),
        ProfileEvent(tool="pytorch", artifacts={"trace": "profiles/pytorch/trace.json.gz"}, rank=0),
        PassEvent(2, 16, "rocprof-compute", 5, time=3.0),
        TelemetryEvent(gpu_util_pct=88.0, rank=1, time=4.0),
        LoadEvent(others_cores=0.5, cpus=8, gpu_others=None),
        ErrorEvent("RankDied", "rank 1 ended", "", rank=1, root=True, time=5.0),
        ExitEvent(1, "SIGKILL", note="torchrun was killed"),
    ]
    assert [type(e).kind for e in written] == list(events.KINDS)
    with EventWriter(tmp_path / "events.jsonl") as writer:
        for event in written:
            writer.emit(event)
    log = read_events(tmp_path / "events.jsonl")
    assert log.corrupt_lines == [] and [type(e).from_event(r) for e, r in zip(written, log.events)] == written


def test_a_line_keeps_its_keys_and_leaves_out_what_a_run_of_one_process_does_not_say():
    assert encode(PassEvent(2, 16, "rocprof-compute", 5), 9.0) == {
        "event": "pass", "time": 9.0, "pass": 2, "planned": 16, "tool": "rocprof-compute", "steps": 5}
    assert encode(ErrorEvent("OSError", "the disk is full", ""), 9.0) == {
        "event": "error", "time": 9.0, "type": "OSError", "message": "the disk is full", "traceback": ""}
    assert encode(ExitEvent(0), 9.0) == {"event": "exit", "time": 9.0, "returncode": 0, "signal": None}
    assert encode(StepEvent(step=0, loss=1.0, time=2.0), 9.0)["time"] == 2.0  # its own time, when it has one


def test_a_number_that_is_not_finite_reads_as_null():
    step = StepEvent.from_event({"event": "step", "step": 1, "loss": float("nan"), "step_ms": float("inf")})
    assert step == StepEvent(step=1, loss=None, step_ms=None)


@pytest.mark.parametrize("figures, busy", [
    ({}, None),  # a quiet machine: a narrow spread, others well inside the spare cores
    ({"others_cpu_cores": 0.2, "spare_cpu_cores": 0.0}, None),  # the lab's own polling, a quiet desktop
    ({"others_cpu_cores": 1.0, "spare_cpu_cores": 8.0}, None),  # one busy core of a machine the run left idle
    ({"others_cpu_cores": 1.0, "spare_cpu_cores": 0.0}, "other processes used 1.0 CPU cores, 0 were spare"),
    ({"others_gpu_share": 0.1}, None),
    ({"others_gpu_share": 0.5}, "another process used the GPU in 50% of the samples"),
    ({"step_ms_p10": 323.0, "step_ms_p90": 1701.0},  # the first tour's v1 on a busy 2-core machine
     "step times spread ±82% (p10 323.0 ms, p90 1,701.0 ms)"),
])
def test_a_busy_machine_is_named_from_the_recorded_load_and_spread(figures, busy):
    summary = Summary(**{"step_ms_median": 840.0, "step_ms_p10": 800.0, "step_ms_p90": 900.0, **figures})
    assert summary.busy() == busy
    if busy:
        assert any(line.startswith(f"  machine busy   {busy}") for line in summary.lines())
    assert summary.busy(profiled=True) == (None if "spread" in (busy or "") else busy)  # a profiler widens it

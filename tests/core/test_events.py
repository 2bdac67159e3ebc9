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


WIDE = {"step_ms_p10": 323.0, "step_ms_p90": 1701.0}  # the first tour's v1 on a busy 2-core machine: ±82 %
LOADED = {"others_cpu_cores": 1.0, "spare_cpu_cores": 0.0}  # two busy loops beside a run on both of 2 cores


@pytest.mark.parametrize("figures, busy", [
    ({}, None),  # no load samples (an older run, telemetry off): nothing measured says busy
    ({"others_cpu_cores": 0.2, "spare_cpu_cores": 0.0}, None),  # the lab's own polling, a quiet desktop
    ({"others_cpu_cores": 1.0, "spare_cpu_cores": 8.0}, None),  # one busy core of a machine the run left idle
    ({"others_cpu_cores": 14.95, "spare_cpu_cores": 15.0}, None),  # 16 busy loops, 16 CPUs, a GPU run not slowed
    ({"others_cpu_cores": 15.41, "spare_cpu_cores": 15.0},  # ... and where they took 0.4 of its launching thread
     "other processes used 15.4 CPU cores, 15 were spare"),
    (LOADED, "other processes used 1.0 CPU cores, 0 were spare"),
    ({"others_gpu_share": 0.1}, None),
    ({"others_gpu_share": 0.5}, "another process used the GPU in 50% of the samples"),
    (WIDE, None),  # a spread alone is no sign: an idle machine's tiny steps spread ±35 % (issue 37)
    ({**WIDE, "others_cpu_cores": 0.1, "spare_cpu_cores": 0.0}, None),  # measured quiet, spread wide
    ({**WIDE, **LOADED},  # measured busy: the spread backs it up
     "other processes used 1.0 CPU cores, 0 were spare; step times spread ±82% (p10 323.0 ms, p90 1,701.0 ms)"),
])
def test_a_busy_machine_is_named_from_the_recorded_load_and_the_spread_backs_it(figures, busy):
    summary = Summary(**{"step_ms_median": 840.0, "step_ms_p10": 800.0, "step_ms_p90": 900.0, **figures})
    assert summary.busy() == busy
    if busy:
        assert any(line.startswith(f"  machine busy   {busy}") for line in summary.lines())
    assert summary.busy(profiled=True) == (busy.split("; step times")[0] if busy else None)  # a profiler widens it


def test_a_run_without_load_samples_says_its_contention_was_not_measured():
    assert Summary(step_ms_median=840.0, others_gpu_share=0.5).lines()[-1].startswith("  machine busy   another")
    assert Summary(step_ms_median=840.0).lines()[-1] == (
        "  machine load   not measured (no load samples): contention would go unnoticed")
    assert not any(line.startswith("  machine") for line in Summary(step_ms_median=840.0, others_cpu_cores=0.1,
                                                                      spare_cpu_cores=0.0).lines())

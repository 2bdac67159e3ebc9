"""Lab: the door both faces use, over a store of hand-written runs."""

from __future__ import annotations

import json

import pytest
from support.paths import FIX
from support.exercises import HIDES_ITS_FAULT
from support.runs import make_run

from tinylab.core.errors import UserError
from tinylab.profilers.pytorch import MEMORY_HINT
from tinylab.render.compare import format_compare
from tinylab.render.report import build_report
from tinylab.render.roofline import render as render_roofline
from tinylab.render.timeline import render
from tinylab.service.lab import Lab

START = {"event": "start", "time": 1.0, "device": "cpu", "device_name": "x86_64", "config": {}}


@pytest.fixture
def lab(tmp_path) -> Lab:
    for run_id in ("20260101-000000-aaaa", "20260101-000000-bbbb"):
        make_run(tmp_path / "runs", run_id, [START])
    return Lab(tmp_path / "runs")


def test_records_are_typed_and_oldest_first(lab):
    records = lab.records()
    assert [r.id for r in records] == ["20260101-000000-aaaa", "20260101-000000-bbbb"]
    assert records[0].device_name == "x86_64" and records[0].status == "lost"


def test_remove_resolves_every_reference_before_deleting_any(lab):
    with pytest.raises(UserError, match="no run matches 'nope'"):
        lab.remove(["20260101-000000-aaaa", "nope"])
    assert len(lab.records()) == 2
    assert lab.remove(["20260101-000000-aaaa"]) == ["20260101-000000-aaaa"]
    assert [r.id for r in lab.records()] == ["20260101-000000-bbbb"]


def test_hotspots_table_of_a_profiler_output_a_run_and_a_bad_reference(lab, tmp_path):
    tables = lab.hotspots_table(str(FIX / "rocprofv3/rocm7-docs-data/kernel_trace.csv"))
    assert tables.fmt == "rocprofv3-kernel-trace" and len(tables.select()[0]) and tables.ranks == []
    with pytest.raises(UserError, match="this run has no kernel table"):
        lab.hotspots_table("20260101-000000-bbbb")
    with pytest.raises(UserError, match="no such file or folder"):
        lab.hotspots_table(str(tmp_path / "missing.csv"))


def test_hotspots_checks_the_category_before_reading_anything(lab, tmp_path):
    with pytest.raises(UserError, match="^unknown category 'conv': choose one of"):
        lab.hotspots(str(tmp_path / "missing.csv"), category="conv")  # not "no such file"
    source, summary = lab.hotspots(str(FIX / "rocprofv3/rocm7-docs-data/kernel_trace.csv"), top=3)
    assert source == str(FIX / "rocprofv3/rocm7-docs-data/kernel_trace.csv")
    assert len(summary.kernels) == 3 and summary.kernel_count > 3
    assert summary.ranks.to_json() == {"rank": None, "ranks": []}  # one process: what --json says of ranks


def test_unknown_scenario_names_the_choices(tmp_path):
    with pytest.raises(UserError, match="unknown exercise 'nope': choose one of"):
        Lab(tmp_path).scenario("nope")


def test_timeline_of_a_profiled_run_with_its_memory_and_of_a_run_without_a_trace(lab, tmp_path):
    import shutil

    run_id = "20260101-000000-cccc"
    profile = {"event": "profile", "time": 2.0, "tool": "pytorch", "kernel_table": None,
               "artifacts": {"trace.json.gz": "profiles/pytorch/trace.json.gz",
                             "memory_timeline.json.gz": "profiles/pytorch/memory_timeline.json.gz"}}
    run_dir = make_run(tmp_path / "runs", run_id, [{**START, "config": {"version": "v1", "precision": "fp32"}}, profile]).dir
    (run_dir / "profiles" / "pytorch").mkdir(parents=True)
    for name in ("trace.json.gz", "memory_timeline.json.gz"):
        shutil.copy(FIX / "pytorch-profiler" / "tinylab_cpu_v1_memory" / name, run_dir / "profiles" / "pytorch" / name)
    result = lab.timeline(run_id, step=2)
    assert result.title == f"timeline of {run_id} v1 fp32 on x86_64"
    assert result.shown_step == 2 and result.memory.peak_mb > 0
    assert MEMORY_HINT not in result.notes
    data = result.to_json()  # `tinylab timeline --json`: a run's trace says its rank and the trainer's clock
    assert list(data)[-4:] == ["timed", "rank", "ranks", "title"] and (data["rank"], data["ranks"]) == (None, [])
    (run_dir / "profiles" / "pytorch" / "memory_timeline.json.gz").unlink()
    without = lab.timeline(run_id, step=2)
    assert without.memory is None and MEMORY_HINT in without.notes  # says how to get it
    assert "--profile-memory" in render(without, "t")
    with pytest.raises(UserError, match="has no PyTorch profiler trace: launch it with --profile pytorch"):
        lab.timeline("20260101-000000-aaaa")
    trace_only = lab.timeline(str(FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz"))
    assert trace_only.has_gpu_events and trace_only.memory is None
    assert list(trace_only.to_json())[-2:] == ["notes", "title"]  # a trace file has no ranks, no trainer


def test_timeline_says_how_far_its_read_has_come(lab, tmp_path):
    import shutil

    trace = tmp_path / "trace.json.gz"
    shutil.copy(FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz", trace)
    heard = []
    lab.timeline(str(trace), progress=lambda *said: heard.append(said))
    assert heard and heard[-1] == ("reading trace.json.gz", trace.stat().st_size, trace.stat().st_size)


def test_timeline_of_a_run_of_ranks_is_one_ranks_trace(lab, tmp_path):
    import shutil

    from support.runs import ddp2_run

    run = ddp2_run(tmp_path / "runs")
    first, other = lab.timeline(run.id), lab.timeline(run.id, rank=1)
    assert (first.rank, first.ranks, other.rank) == (0, (0, 1), 1)
    assert first.source.endswith("rank0/trace.json.gz") and other.source.endswith("rank1/trace.json.gz")
    assert first.title.startswith(f"timeline of {run.id} rank 0 of 2 ")
    assert "timed" in first.to_json() and "timed" not in other.to_json()  # the trainer's steps are rank 0's
    with pytest.raises(UserError, match=r"^--rank 5: run 20261126-234143-2d72 has traces of ranks 0, 1$"):
        lab.timeline(run.id, rank=5)
    trace = str(FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz")
    with pytest.raises(UserError, match="is one trace file; --rank picks a rank's trace of a run"):
        lab.timeline(trace, rank=0)
    profile = {"event": "profile", "time": 2.0, "tool": "pytorch", "artifacts": {"trace.json.gz": "trace.json.gz"}}
    one = make_run(tmp_path / "runs", "20260101-000000-dddd", [START, profile])
    shutil.copy(trace, one.dir / "trace.json.gz")
    assert lab.timeline(one.id).rank is None
    with pytest.raises(UserError, match=r"^--rank 0: run 20260101-000000-dddd is one process, not a run of several"):
        lab.timeline(one.id, rank=0)


# ------------------------------------------------------------------------------ the roofline, for both faces
def _gpu_run(root):
    from tinylab.config import RunConfig
    from tinylab.core.eventlog import EventWriter
    from tinylab.core.events import ExitEvent, StartEvent, Summary
    from tinylab.runs.store import RunStore

    run = RunStore(root).create(RunConfig(version="v3", batch_size=8, seq_len=128))
    with EventWriter(run.dir / "events.jsonl") as ev:
        ev.emit(StartEvent(config=run.config().resolved().to_dict(), device="cuda", device_name="FakeGPU",
                           param_elements=31_977_984))
        ev.emit(Summary(step_ms_median=6.0, samples_per_s=1333.0, params_trained=50, params_total=50))
        ev.emit(ExitEvent(returncode=0, signal=None))
    return run


CEILINGS = {"copy_gbps": 4000.0, "gemm_tflops": {"fp32": {"large": 50.0}, "bf16": {"large": 780.0}}}


def test_roofline_from_a_ceilings_file_or_the_cache_never_measuring_unless_asked(tmp_path):
    """`tinylab roofline` and the lab's Hotspots panel build it here (they used to, each their own way)."""
    import json

    from tinylab.analysis.roofline import ceilings_cache
    from tinylab.service.lab import NoCeilings

    run = _gpu_run(tmp_path / "runs")
    lab = Lab(tmp_path / "runs")
    with pytest.raises(NoCeilings, match=f"no ceilings measured for FakeGPU yet: run `tinylab roofline {run.id}`"):
        lab.roofline(run.id, measure=False)
    path = tmp_path / "ceil.json"
    path.write_text(json.dumps({"ceilings": CEILINGS}))
    plot = lab.roofline(run.id, ceilings_file=path)
    assert plot.run_id == run.id and not plot.has_table and plot.result.points[0].name == "training step"
    assert "ridge at 12.5 FLOP/byte" in render_roofline(plot.result, plot.title)
    assert plot.title.startswith(f"{run.id} v3 fp32 on FakeGPU")
    ceilings_cache(tmp_path / "runs", "FakeGPU").write_text(json.dumps(CEILINGS))
    assert lab.roofline(run, measure=False).result == plot.result
    assert lab.roofline(run, measure=False, record=run.record()).result == plot.result  # read by the caller
    with pytest.raises(UserError, match="--ceilings .*nope.json"):
        lab.roofline(run.id, ceilings_file=tmp_path / "nope.json")


@pytest.mark.parametrize("kind, message", [
    ("fifo", "is a FIFO, not a regular file"), ("device", "is a device or special file"),
    ("deep", "nested deeper than 64 levels"), ("list", "not a `tinylab bench --roofline --out` JSON"),
    ("huge", "larger than 16,384 KiB"), ("malformed", "the ceilings have no fp32 GEMM rate or copy bandwidth"),
])
def test_a_ceilings_file_that_is_no_document_is_one_line_at_once(tmp_path, kind, message):
    """--ceilings /dev/zero grew until MemoryError, a FIFO hung, 5,000 brackets raised RecursionError."""
    import os

    run = _gpu_run(tmp_path / "runs")
    path = tmp_path / "ceilings.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = "/dev/zero"
    elif kind == "deep":
        path.write_text("[" * 5000 + "]" * 5000)
    elif kind == "list":
        path.write_text("[1, 2]")
    elif kind == "malformed":
        path.write_text('{"ceilings": {"copy_gbps": "fast", "gemm_tflops": {"fp32": 50}}}')
    else:
        with open(path, "wb") as fh:
            fh.truncate(17 << 20)
    with pytest.raises(UserError, match=message) as caught:
        Lab(tmp_path / "runs").roofline(run.id, ceilings_file=path)
    assert "\n" not in str(caught.value)


def test_roofline_of_an_unfinished_run(lab):
    with pytest.raises(UserError, match="has no summary \\(lost\\): a roofline needs a finished run"):
        lab.roofline("20260101-000000-aaaa", measure=False)


def test_what_a_step_hides_is_masked_in_every_view_until_its_answers_are_revealed(tmp_path):
    """performance-debugging step 1 hides its fault, but show, runs, the Run header, the Runs
    screen, compare and report printed fault=missing-init."""
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "faults.toml").write_text(HIDES_ITS_FAULT, encoding="utf-8")
    summary = {"event": "summary", "time": 3.0, "samples_per_s": 10.0, "step_ms_median": 40.0, "step_ms_p10": 39.0,
               "step_ms_p90": 41.0}
    runs = tmp_path / "runs"
    base = make_run(runs, "20260101-000000-aaaa", [START, summary], label="exercise faults step 1 baseline")
    faulty = make_run(runs, "20260101-000000-bbbb", [{**START, "config": {"fault": "missing-init"}}, summary],
                      fault="missing-init", label="exercise faults step 1")
    lab = Lab(runs, exercises_root=tmp_path / "exercises")
    record = lab.record(faulty.id)
    assert record.config["fault"] == "(hidden)" and record.ran_config["fault"] == "(hidden)"
    assert "fault=(hidden)" in record.key_config and record.to_json()["hidden"] == ["fault"]
    assert [r.config["fault"] for r in lab.records()] == [None, "(hidden)"]  # the baseline hides nothing
    # the typed view too, and the record is no damaged one for it ("(hidden)" is no valid fault)
    assert (record.settings.fault, record.ran_settings.fault, record.version) == ("(hidden)", "(hidden)", "v1")
    assert record.problem is None and lab.records()[1].settings.fault == "(hidden)"

    def report(ids: list[str], fmt: str) -> str:  # as `tinylab report` makes it
        return build_report([lab.run(i) for i in ids], fmt, mask=lab.masked)

    compared = lab.compare(base.id, faulty.id)
    views = [str(compared), format_compare(compared), json.dumps(compared.to_json()),
             report([base.id, faulty.id], "md"), report([faulty.id], "html")]
    assert all("missing-init" not in view and "(hidden)" in view for view in views)
    assert faulty.record().config["fault"] == "missing-init"  # the checks read the run itself
    lab.reveal_answers("faults", 1)
    assert lab.record(faulty.id).config["fault"] == "missing-init" and "missing-init" in report([faulty.id], "md")

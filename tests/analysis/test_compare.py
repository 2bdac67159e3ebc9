"""`compare_runs` / `tinylab compare`: ratios from the summaries, config notes, kernel diffs, scaling
across world sizes."""

from __future__ import annotations

import json
import re
import sys

import pytest
from support.runs import cli, clone_run, profile_tables, with_kernels, world_of

from tinylab.analysis.compare import METRICS, SAME_WITHIN, TIMED, UNDER_TEST, ScalingSide, compare_runs
from tinylab.render.compare import format_compare

KEYS = [m.key for m in METRICS]


def test_v1_vs_v2_ratios_come_from_the_summaries(finished_pair):
    a, b = finished_pair.v1, finished_pair.v2
    result = compare_runs(a.record(), b.record())
    sa, sb = a.events().last("summary"), b.events().last("summary")
    assert [m.key for m in result.metrics] == KEYS
    for m in result.metrics:
        direction = next(f.direction for f in METRICS if f.key == m.key)
        va, vb = sa[m.key], sb[m.key]
        if va is None or vb is None:  # peak memory and MFU are not measured on a CPU
            assert m.ratio is None and m.better is None
            continue
        assert (m.a, m.b) == (va, vb)
        assert m.ratio == pytest.approx(vb / va)
        if m.key in TIMED:  # the verdict is the interval's: a side only when the interval is past 1
            i = m.interval
            assert i.low < m.ratio < i.high and i.runs == (1, 1)
            expected = None if i.low <= 1 <= i.high else ("b" if (i.low > 1) == (direction > 0) else "a")
        else:
            distance = max(vb / va, va / vb) - 1
            expected = None if distance < SAME_WITHIN or not direction else ("b" if (vb > va) == (direction > 0) else "a")
            assert m.interval is None
        assert m.better == expected, m
    ratios = {m.key: m.ratio for m in result.metrics}
    assert ratios["samples_per_s"] == pytest.approx(sa["step_ms_median"] / sb["step_ms_median"])
    assert ratios["final_loss"] == pytest.approx(1.0, abs=1e-3), "same seed, same math: same loss"
    assert result.a.id == a.id and result.b.version == "v2" and result.b.status == "finished"


def test_v1_vs_v2_differs_only_in_toggles_under_test(finished_pair):
    result = compare_runs(finished_pair.v1.record(), finished_pair.v2.record())
    diff = {d.key: d for d in result.config_diff}
    assert {"version", "qkv_fusion", "sdpa", "swiglu_fusion"} <= set(diff)
    assert all(d.under_test for d in diff.values()) and set(diff) <= UNDER_TEST
    assert (diff["version"].a, diff["version"].b) == ("v1", "v2")
    assert besides_busy(result.notes) == []
    assert result.kernel_diff is None


def test_cli_json_and_text(finished_pair):
    root = str(finished_pair.store.root)
    proc = cli("compare", finished_pair.v1.id, finished_pair.v2.id, "--json", "--runs-dir", root)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"names", "pooled", "a", "b", "noise", "metrics", "config_diff", "notes", "scaling",
                         "kernel_diff", "advice"}
    assert data["pooled"] == {"a": [finished_pair.v1.id], "b": [finished_pair.v2.id]}
    assert data["names"] == {"a": "A", "b": "B"} and {"busy"} <= set(data["a"]) & set(data["b"])
    assert set(data["advice"]) == {"a", "b", "tried", "verdicts", "cleared", "new", "notes"}  # A's advice against B
    assert data["scaling"] is None  # one world size
    advice = data.pop("advice")
    assert data == json.loads(json.dumps(compare_runs(finished_pair.v1.record(), finished_pair.v2.record()).to_json()))
    assert (advice["a"], advice["b"], advice["tried"]) == (finished_pair.v1.id, finished_pair.v2.id, None)
    for m in data["metrics"]:
        assert set(m) == {"key", "label", "a", "b", "ratio", "better", "unit", "timed", "interval"}
        assert (m["interval"] is not None) == (m["timed"] and m["a"] is not None and m["b"] is not None)
    text = cli("compare", finished_pair.v1.id, finished_pair.v2.id, "--runs-dir", root)
    assert text.returncode == 0 and "samples/s" in text.stdout and "B/A" in text.stdout


def test_different_dimensions_and_devices_get_notes(finished_pair, tmp_path):
    b = clone_run(finished_pair.v2, tmp_path, config={"batch_size": 8, "seed": 7},
                  edit=lambda e: e.update(device="cuda:0", device_name="NVIDIA H100") if e["event"] == "start" else None)
    result = compare_runs(finished_pair.v1.record(), b.record())
    outside = {d.key for d in result.config_diff if not d.under_test}
    assert outside == {"batch_size", "seed", "device"}  # the device that ran: cpu vs cuda:0
    notes = " | ".join(result.notes)
    assert "batch_size (4 vs 8)" in notes and "seed (42 vs 7)" in notes
    assert "different devices" in notes and "NVIDIA H100" in notes
    assert "NOT under test" in format_compare(result)


def test_missing_summary_is_a_note_not_a_crash(finished_pair, tmp_path):
    b = clone_run(finished_pair.v2, tmp_path, drop=("summary", "exit"))
    result = compare_runs(finished_pair.v1.record(), b.record())
    assert result.b.status == "lost"
    assert all(m.b is None and m.ratio is None and m.better is None for m in result.metrics)
    assert any("has no summary" in n for n in result.notes)
    assert any("is lost" in n for n in result.notes)
    assert "notes" in format_compare(result)


def test_failed_and_running_runs_are_noted(finished_pair, tmp_path, own_process_record):
    failed = clone_run(finished_pair.v1, tmp_path / "f", drop=("summary", "exit"))
    with open(failed.dir / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"event": "error", "type": "FloatingPointError", "message": "loss became nan"}) + "\n")
    running = clone_run(finished_pair.v2, tmp_path / "r", drop=("summary", "exit"))
    (running.dir / "process.json").write_text(json.dumps(own_process_record))
    notes = compare_runs(failed.record(), running.record()).notes
    assert any("failed: FloatingPointError: loss became nan" in n for n in notes)
    assert any("is still running" in n for n in notes)


def test_unreadable_config_is_noted(finished_pair, tmp_path):
    b = clone_run(finished_pair.v2, tmp_path, drop=("start",))
    (b.dir / "config.json").write_text("{")
    result = compare_runs(finished_pair.v1.record(), b.record())
    assert "run B's config.json is missing or unreadable: its settings are unknown" in result.notes
    assert not any("configs differ" in n for n in result.notes), "unknown is not different"


@pytest.mark.parametrize("damage", ["precision-int", "events-not-a-file"])
def test_a_damaged_run_is_flagged(finished_pair, tmp_path, damage):
    """compare showed a run with a damaged config.json as plainly `finished`."""
    b = clone_run(finished_pair.v2, tmp_path)
    if damage == "precision-int":
        cfg = json.loads((b.dir / "config.json").read_text())
        (b.dir / "config.json").write_text(json.dumps({**cfg, "precision": 16}))
    else:
        (b.dir / "events.jsonl").unlink()
        (b.dir / "events.jsonl").mkdir()
    result = compare_runs(finished_pair.v1.record(), b.record())
    assert result.b.problem and result.a.problem is None
    assert any(n.startswith(f"run B ({b.id}) is damaged (") for n in result.notes), result.notes
    text = format_compare(result)
    header = next(line for line in text.splitlines() if line.startswith("B  "))
    assert " (damaged) " in header and "damaged" not in text.splitlines()[0]


def test_untrained_parameters_are_called_out(finished_pair, tmp_path):
    b = clone_run(finished_pair.v2, tmp_path,
                  edit=lambda e: e.update(params_trained=1) if e["event"] == "summary" else None)
    assert any("trained only 1 of" in n for n in compare_runs(finished_pair.v1.record(), b.record()).notes)


def test_kernel_diff_when_both_runs_have_kernel_tables(finished_pair, tmp_path):
    a = with_kernels(finished_pair.v1, tmp_path / "a", [("gemm_q", 30, 3e6), ("gemm_k", 30, 3e6), ("gemm_v", 30, 3e6),
                                                        ("softmax_eager", 10, 2e6), ("rmsnorm", 20, 1e6)])
    b = with_kernels(finished_pair.v2, tmp_path / "b", [("gemm_qkv", 10, 6e6), ("flash_fwd", 10, 1e6),
                                                        ("rmsnorm", 20, 0.5e6)])
    result = compare_runs(a.record(), b.record())
    diff = result.kernel_diff
    assert {k.name for k in diff.appeared} == {"gemm_qkv", "flash_fwd"}
    assert {k.name for k in diff.disappeared} == {"gemm_q", "gemm_k", "gemm_v", "softmax_eager"}
    (changed,) = diff.changed
    assert changed.name == "rmsnorm" and changed.ratio == pytest.approx(0.5)
    assert (changed.a_calls, changed.b_calls) == (20, 20)
    text = format_compare(result)
    section = text.split("kernel diff (B vs A)")[1]
    assert re.search(r"only in B \(appeared\)\n\s+kernel\s+total\s+calls\n\s+gemm_qkv\s+6 ms\s+10\n", section)
    assert re.search(r"rmsnorm\s+1 ms\s+500 us\s+0.50x\s+20 -> 20", section)
    assert json.loads(json.dumps(result.to_json()))["kernel_diff"] == diff.to_json(), "the --json output carries it"


def test_kernel_table_on_one_side_or_unreadable_is_a_note(finished_pair, tmp_path):
    a = with_kernels(finished_pair.v1, tmp_path / "a", [("gemm", 1, 1e6)])
    result = compare_runs(a.record(), finished_pair.v2.record())
    assert result.kernel_diff is None
    assert any("only run A has a kernel table" in n for n in result.notes)
    broken = with_kernels(finished_pair.v2, tmp_path / "b", [], raw="\x00\x01 not a table")
    result = compare_runs(a.record(), broken.record())
    assert result.kernel_diff is None
    assert any("could not read the kernel table of run B" in n for n in result.notes)
    assert not any("only run A has a kernel table" in n for n in result.notes), "B has one, broken"


def test_without_the_analysis_stack_there_is_no_kernel_diff(finished_pair, tmp_path, monkeypatch):
    a = with_kernels(finished_pair.v1, tmp_path / "a", [("gemm", 1, 1e6)])
    b = with_kernels(finished_pair.v2, tmp_path / "b", [("gemm", 1, 2e6)])
    monkeypatch.setitem(sys.modules, "tinylab.analysis.hotspots", None)  # makes its import fail
    result = compare_runs(a.record(), b.record())
    assert result.kernel_diff is None and besides_busy(result.notes) == []


def besides_busy(notes: list[str]) -> list[str]:
    """The notes other than a busy machine's: the session's runs share the machine with the tests,
    so they may be marked busy (the verdict is tests/test_events.py's, on recorded figures)."""
    return [note for note in notes if not note.startswith("the machine was busy during")]


def test_two_cpu_runs_compare_their_resolved_devices(finished_pair, tmp_path):
    """One asked for `auto`, the other for `cpu`: both ran on the CPU, which is no config difference."""
    auto = clone_run(finished_pair.v1, tmp_path / "a", config={"device": "auto"})
    result = compare_runs(auto.record(), finished_pair.v2.record())
    assert "device" not in {d.key for d in result.config_diff}


# ------------------------------------------------------------------------------ world sizes
def test_runs_of_different_world_sizes_show_scaling_efficiency(tmp_path):
    one = world_of(tmp_path, "20260101-000000-0001", 1, 100.0)
    two = world_of(tmp_path, "20260101-000000-0002", 2, 180.0, comm_ms=3.5, comm_hidden=0.4)
    result = compare_runs(one.record(), two.record())
    sc = result.scaling
    assert sc.a == ScalingSide(world_size=1, samples_per_s=100.0, samples_per_s_per_rank=100.0, comm_ms=None,
                               comm_hidden=None)
    assert sc.b == ScalingSide(world_size=2, samples_per_s=180.0, samples_per_s_per_rank=90.0, comm_ms=3.5,
                               comm_hidden=0.4)
    assert (sc.baseline, sc.efficiency, sc.speedup, sc.ideal_speedup) == ("a", 0.9, 1.8, 2.0)
    assert (result.a.world_size, result.b.world_size) == (1, 2)
    # the world size and the engine are what such a comparison varies: no "configs differ" warning
    assert {d.key for d in result.config_diff} == {"nproc_per_node", "parallel"}
    assert all(d.under_test for d in result.config_diff) and result.notes == ()
    text = format_compare(result)
    assert "NOT under test" not in text
    block = text[text.index("scaling (samples/s"):]
    assert re.search(r"A\s+1\s+100\.0\s+100\.0\s+-\s+-", block) and re.search(r"B\s+2\s+180\.0\s+90\.0\s+3\.50\s+40%", block)
    assert "scaling efficiency 90% (B's samples/s per rank / A's); B is" in block
    assert "B is 1.80x as fast as A, ideally 2.00x" in " ".join(block.split())
    # the larger world first: the 1-rank run is still the baseline
    swapped = compare_runs(two.record(), one.record()).scaling
    assert (swapped.baseline, swapped.efficiency) == ("b", 0.9)
    assert "scaling efficiency 90% (A's samples/s per rank / B's)" in format_compare(compare_runs(two.record(), one.record()))


def test_one_world_size_has_no_scaling_and_superlinear_scaling_is_explained(tmp_path):
    one = world_of(tmp_path, "20260101-000000-0001", 1, 100.0)
    also_one = world_of(tmp_path, "20260101-000000-0003", 1, 110.0)
    result = compare_runs(one.record(), also_one.record())
    assert result.scaling is None and "scaling" not in format_compare(result)
    fast = world_of(tmp_path, "20260101-000000-0004", 2, 300.0, comm_ms=1.0, comm_hidden=0.5)
    result = compare_runs(one.record(), fast.record())
    assert result.scaling.efficiency == 1.5
    (note,) = result.notes
    assert note.startswith("scaling efficiency above 100%: each rank of B ran faster than A alone")
    assert "OMP_NUM_THREADS=1" in note  # both on a CPU
    lost = world_of(tmp_path, "20260101-000000-0005", 2, None)
    sc = compare_runs(one.record(), lost.record()).scaling
    assert sc.efficiency is None and sc.b.samples_per_s_per_rank is None


def test_the_kernel_diff_of_a_run_of_ranks_reads_rank_0_and_says_so(tmp_path):
    one = profile_tables(world_of(tmp_path, "20260101-000000-0001", 1, 100.0), {None: [("aten::mm", 3, 60.0)]})
    two = profile_tables(world_of(tmp_path, "20260101-000000-0002", 2, 180.0, comm_ms=3.5, comm_hidden=0.4),
                         {rank: [("aten::mm", 3, mm), ("c10d::allreduce_", 1, 10.0)] for rank, mm in ((0, 60.0), (1, 90.0))})
    result = compare_runs(one.record(), two.record())
    assert result.kernel_diff.changed[0].b_total_ns == 60  # rank 0's aten::mm, not 150 of both ranks
    assert [k.name for k in result.kernel_diff.appeared] == ["c10d::allreduce_"]
    assert any(n.startswith("the kernel diff reads rank 0's table of run B") for n in result.notes)


def test_two_runs_that_differ_by_a_profiler_setting_are_told_apart(tmp_path):
    """A setting that changes what a run records lives in config.json: compare and show see it; a run
    written before the setting existed ran with its default, so it differs from none."""
    from support.exercises import make_run

    from tinylab.runs.store import Run, mark_run

    a = make_run(tmp_path, "20260101-000000-000a", config={"profilers": ["rocprofv3"], "rocprofv3_pmc": ["SQ_WAVES"]}).record()
    b = make_run(tmp_path, "20260101-000000-000b", config={"profilers": ["rocprofv3"], "rocprofv3_pmc": ["TCC_HIT TCC_MISS"]}).record()
    diff = compare_runs(a, b).config_diff
    assert [(d.key, d.a, d.b) for d in diff] == [("rocprofv3_pmc", ["SQ_WAVES"], ["TCC_HIT TCC_MISS"])]
    old = make_run(tmp_path, "20260101-000000-000c", config={"profilers": ["rocprofv3"]})
    cfg = json.loads((old.dir / "config.json").read_text())
    del cfg["rocprofv3_pmc"], cfg["ncu_launch_count"]
    (old.dir / "config.json").write_text(json.dumps(cfg))
    events = [json.loads(line) for line in (old.dir / "events.jsonl").read_text().splitlines()]
    events[0]["config"] = cfg  # the start event
    (old.dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    new = make_run(tmp_path, "20260101-000000-000d", config={"profilers": ["rocprofv3"]}).record()
    assert compare_runs(Run(old.dir).record(), new).config_diff == ()
    mark_run(a.dir)
    shown = cli("show", a.id, "--runs-dir", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    shown = shown.stdout
    assert "rocprofv3_pmc=SQ_WAVES" in shown and "ncu_launch_count" not in shown  # ncu did not profile it

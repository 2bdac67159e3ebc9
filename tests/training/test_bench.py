"""The bench's arithmetic and its regression guard (the GPU figures themselves live in docs/performance.md)."""

import json
from pathlib import Path

import pytest

from tinylab.training import bench
from tinylab.analysis.ceilings import FLOOR_METHOD
from tinylab.config import RunConfig
from tinylab.core.errors import UserError

REPO = Path(__file__).resolve().parents[2]


#: The load sampler's figures of a run beside two busy loops on a 2-core machine (Summary.busy).
BUSY = {"others_cpu_cores": 1.9, "spare_cpu_cores": 0.0}
QUIET = {"others_cpu_cores": 0.05, "spare_cpu_cores": 0.0}


def summary(sps: float, batch: int = 4, energy: float | None = None, load: dict = QUIET) -> dict:
    """A trainer's summary record of one repeat: step times 2 % either side of the median."""
    ms = batch / sps * 1e3
    return {"event": "summary", "samples_per_s": sps, "step_ms_median": ms, "step_ms_p10": 0.98 * ms,
            "step_ms_p90": 1.02 * ms, "measured_steps": 25, "params_trained": 50, "params_total": 50,
            "energy_j_per_sample": energy, **load}


def row(case: str, precision: str, repeats: list[float], peak: float | None = None, **kw) -> dict:
    result = bench.CaseResult(case, precision, 128, 4, runs=[summary(sps, **kw) for sps in repeats])
    return {**result.row(), "peak_mem_mb": peak}


def rows(v4_load: dict = QUIET):
    out = [
        row("v1", "fp32", [195.0, 205.0], 1000.0),
        row("v4", "fp32", [990.0, 1010.0], 300.0, load=v4_load),
        row(bench.PEER, "fp32", [790.0, 810.0], 500.0),
        row("v4", "bf16", [2990.0, 3010.0], 250.0),
    ]
    bench.add_speedups(out)
    return out


def test_speedups_compare_within_precision_and_seq():
    r = {(x["case"], x["precision"]): x for x in rows()}
    assert r[("v4", "fp32")]["speedup_vs_v1"] == pytest.approx(5.0, rel=1e-3)
    assert r[("v4", "fp32")]["speedup_vs_peer"] == pytest.approx(1.25, rel=1e-3)
    assert r[("v4", "fp32")]["mem_vs_v1"] == pytest.approx(0.3)
    assert r[("v4", "bf16")]["speedup_vs_v1"] is None  # no bf16 v1 in the matrix
    assert r[("v1", "fp32")]["speedup_vs_v1"] == 1.0 and r[("v1", "fp32")]["speedup_vs_v1_interval"] is None


def test_speedups_carry_the_ratio_interval_of_both_cases_repeats():
    from tinylab.analysis.stats import RunValue, ratio_interval

    r = {(x["case"], x["precision"]): x for x in rows()}
    v4 = r[("v4", "fp32")]
    expected = ratio_interval([RunValue("", v, run["within"]) for v, run in zip((195.0, 205.0), r[("v1", "fp32")]["runs"])],
                              [RunValue("", v, run["within"]) for v, run in zip((990.0, 1010.0), v4["runs"])], +1)
    interval = v4["speedup_vs_v1_interval"]
    assert interval["low"] == pytest.approx(expected.low) and interval["high"] == pytest.approx(expected.high)
    assert interval["low"] < 5.0 < interval["high"] and interval["better"] == "b" and interval["runs"] == [2, 2]
    v4_line = next(line for line in bench.format_table(list(r.values())).splitlines() if line.split()[:2] == ["v4", "fp32"])
    assert f"5.00x [{expected.low:.2f}–{expected.high:.2f}]" in v4_line


def test_a_cases_figures_are_the_geometric_mean_and_interval_of_its_repeats():
    from tinylab.analysis.stats import ASSUMED, mean_interval

    r = row("v2", "fp32", [100.0, 400.0], energy=None)
    assert r["samples_per_s"] == pytest.approx(200.0)  # the geometric mean, not the median (250)
    mean, low, high = mean_interval([100.0, 400.0], ASSUMED)
    assert r["samples_per_s_interval"] == [pytest.approx(low), pytest.approx(high)]
    assert r["step_ms"] == pytest.approx(4 / 200 * 1e3) and r["step_ms_interval"][0] < r["step_ms"]
    assert [run["samples_per_s"] for run in r["runs"]] == [100.0, 400.0] and not any(run["busy"] for run in r["runs"])
    assert r["energy_j_per_sample"] is None and r["energy_j_per_sample_interval"] is None
    measured = row("v2", "fp32", [100.0, 400.0], energy=0.5)
    assert measured["energy_j_per_sample"] == pytest.approx(0.5)
    e_low, e_high = measured["energy_j_per_sample_interval"]
    assert e_low < 0.5 < e_high
    bench.add_speedups([r, measured])
    head, cpu, gpu, _ = bench.format_table([r, measured]).splitlines()
    assert bench.figure(200.0, [low, high]) == f"200 [{low:.3g}–{high:,.0f}]" and bench.figure(None) == "-"
    assert bench.figure(200.0, [low, high]) in cpu and bench.figure(0.5, [e_low, e_high]) in gpu
    energy_end = head.index("J/sample") + len("J/sample")  # a right-aligned column
    assert cpu[energy_end - 2:energy_end] == " -"  # no power readings
    assert gpu[energy_end - len(bench.figure(0.5, [e_low, e_high])):energy_end] == bench.figure(0.5, [e_low, e_high])


def test_a_case_busy_in_every_repeat_says_so_and_a_partly_busy_one_too():
    table = bench.format_table(rows(v4_load=BUSY))
    assert "v4 fp32 seq 128: busy: timings measure contention (in all 2 repeats; other processes used 1.9" in table
    partly = bench.CaseResult("v3", "fp32", 128, 4, runs=[summary(500.0, load=BUSY), summary(510.0)]).row()
    assert partly["busy"] is None and [bool(run["busy"]) for run in partly["runs"]] == [True, False]
    bench.add_speedups([partly])
    assert "v3 fp32 seq 128: busy in 1 of 2 repeats" in bench.format_table([partly])


def test_repeats_run_interleaved_forward_then_backward():
    assert bench.schedule(3, 4) == [(0, 0), (0, 1), (0, 2), (1, 2), (1, 1), (1, 0),
                                    (2, 0), (2, 1), (2, 2), (3, 2), (3, 1), (3, 0)]
    assert bench.schedule(2, 1) == [(0, 0), (0, 1)]


def test_run_cases_follows_the_schedule_and_records_each_repeat(monkeypatch, tmp_path):
    from tinylab.training import trainer

    ran = []

    def fake_training(cfg, run_dir, out):
        ran.append(cfg.version)
        assert cfg.telemetry  # the load sampler and the power samples run in every case
        return summary({"v1": 100.0, "v2": 300.0}[cfg.version])

    monkeypatch.setattr(trainer, "run_training", fake_training)
    monkeypatch.setattr(bench, "_free_device_memory", lambda: None)
    cases = bench.build_matrix(["v1", "v2"], ["fp32"], [16], RunConfig(device="cpu", telemetry=False))
    logged = []
    results = bench.run_cases(cases, 3, log=logged.append)
    assert ran == ["v1", "v2", "v2", "v1", "v1", "v2"]
    assert [line.split()[1] for line in logged] == ran
    assert [len(r.runs) for r in results] == [3, 3]


def test_each_gpu_case_counts_the_kernels_of_one_profiled_step_after_its_timed_repeats(monkeypatch, tmp_path):
    """The timed repeats run unprofiled; then each case runs once with the PyTorch profiler on one
    step and the row gets the calls of its kernel table; the table prints them, and '-' with a
    note where none were counted (a failed profile is logged and costs no figure)."""
    from tinylab.training import trainer

    ran = []
    calls = {"v1": [300, 70, 4], "v2": [40, 2]}

    def fake_training(cfg, run_dir, out):
        ran.append((cfg.version, cfg.profilers, cfg.profile_steps))
        if cfg.profilers:
            if cfg.version == "v3":
                raise RuntimeError("CUPTI could not start")
            folder = Path(run_dir) / "profiles" / "pytorch"
            folder.mkdir(parents=True)
            lines = ["name,calls,total_ns,avg_ns,min_ns,max_ns,pct,category"]
            lines += [f"k{n},{c},1000,10,1,20,1.0,other" for n, c in enumerate(calls[cfg.version])]
            (folder / "kernels.csv").write_text("\n".join(lines) + "\n")
        return summary({"v1": 100.0, "v2": 300.0, "v3": 400.0}[cfg.version])

    monkeypatch.setattr(trainer, "run_training", fake_training)
    monkeypatch.setattr(bench, "_free_device_memory", lambda: None)
    cases = bench.build_matrix(["v1", "v2", "v3"], ["fp32"], [16], RunConfig(device="cuda", telemetry=False))
    logged = []
    results = bench.run_cases(cases, 2, log=logged.append)
    assert [r[1] for r in ran[:6]] == [[]] * 6  # no timed repeat is profiled
    assert ran[6:] == [("v1", ["pytorch"], 1), ("v2", ["pytorch"], 1), ("v3", ["pytorch"], 1)]
    assert [r.kernels_per_step for r in results] == [374, 42, None]
    assert any("v3 fp32 s16: not counted: RuntimeError: CUPTI could not start" in line for line in logged)
    table_rows = [r.row() for r in results]
    bench.add_speedups(table_rows)
    head, v1, v2, v3, note = bench.format_table(table_rows).splitlines()
    end = head.index("kernels") + len("kernels")
    assert (v1[end - 3:end], v2[end - 2:end], v3[end - 1:end]) == ("374", "42", "-")
    assert note.startswith("kernels: device kernels a step launches, from one profiled step; '-' where")


def test_a_cpu_bench_profiles_nothing_and_says_it_counted_no_kernels(monkeypatch):
    from tinylab.training import trainer

    ran = []
    monkeypatch.setattr(trainer, "run_training", lambda cfg, run_dir, out: ran.append(cfg.profilers) or summary(100.0))
    monkeypatch.setattr(bench, "_free_device_memory", lambda: None)
    cases = bench.build_matrix(["v1"], ["fp32"], [16], RunConfig(device="cpu", telemetry=False))
    results = bench.run_cases(cases, 1, log=lambda line: None)
    assert ran == [[]] and results[0].kernels_per_step is None
    table_rows = [r.row() for r in results]
    bench.add_speedups(table_rows)
    assert "a CPU runs no device kernels" in bench.format_table(table_rows)


def test_gemm_floor_is_the_groups_measured_floor_and_a_step_under_it_is_marked():
    out = rows()
    for r in out:
        r.update(step_ms=8.0, mfu=None, params_trained=50, params_total=50, error=None)
    floors = {("fp32", 128): {"floor_ms": 6.0, "method": FLOOR_METHOD}, ("bf16", 128): {"floor_ms": 8.8, "method": FLOOR_METHOD}}
    bench.add_gemm_floor(out, floors)
    fp32 = next(r for r in out if r["precision"] == "fp32")
    bf16 = next(r for r in out if r["precision"] == "bf16")
    assert fp32["gemm_floor_ms"] == 6.0 and fp32["of_gemm_floor"] == pytest.approx(0.75)
    assert fp32["gemm_floor_method"] == FLOOR_METHOD
    assert bench.floor_cell(fp32) == "75" and bench.floor_cell(bf16) == "110!"  # 10% under its floor: not a floor
    table = bench.format_table(out)
    assert "floor%" in table.splitlines()[0] and "110!" in table
    bench.add_gemm_floor(out, {})
    assert fp32["of_gemm_floor"] is None and bench.floor_cell(fp32) == "-"


def test_recorded_benches_never_beat_their_gemm_floor():
    """Every recorded bench measured with the CUDA-graph floor (tests/gpu/bench_floor.sh on an
    H200): no case runs faster than its own GEMMs alone, beyond the noise."""
    recorded = []
    for path in sorted((REPO / "tests" / "gpu" / "results").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        rows = [r for r in doc.get("rows", []) if isinstance(doc, dict) and r.get("gemm_floor_method") == FLOOR_METHOD]
        recorded += [(path.name, r) for r in rows]
    if not recorded:
        pytest.skip("no recorded bench with the CUDA-graph GEMM floor yet: tests/gpu/bench_floor.sh writes one")
    for name, row in recorded:
        if row["of_gemm_floor"] is not None:
            assert row["of_gemm_floor"] <= 1 + bench.FLOOR_NOISE, (name, row["case"], row["precision"], row["seq_len"])


def test_matrix_builds_the_peer_with_every_fusion():
    cases = bench.build_matrix(["v1", bench.PEER], ["fp32", "bf16"], [128, 1024], RunConfig())
    assert len(cases) == 8
    peer = next(c for c in cases if c.name == bench.PEER)
    cfg = peer.config
    assert cfg.version == "v2" and cfg.torch_compile and cfg.cuda_graph
    assert all(cfg.toggle(t) for t in ("sdpa", "qkv_fusion", "swiglu_fusion"))
    with pytest.raises(UserError, match="unknown bench case 'v9'"):
        bench.make_case("v9", "fp32", 128, RunConfig())
    with pytest.raises(UserError, match="unknown token 'turbo'"):
        bench.make_case("v4+turbo", "fp32", 128, RunConfig())
    assert bench.make_case("v4+sdpa", "bf16", 128, RunConfig()).config.sdpa is True


def write_baseline(path, device, sps):
    path.write_text(json.dumps({"environment": {"device": device}, "rows": [
        {"case": "v4", "precision": "fp32", "seq_len": 128, "samples_per_s": sps}]}))


def test_regression_guard_names_the_slower_case(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "environment", lambda: {"device": "FakeGPU"})
    base = tmp_path / "base.json"
    write_baseline(base, "FakeGPU", 1200.0)
    problems, skipped = bench.check_regression(rows(), bench.load_baseline(base), 10.0)
    assert len(problems) == 1 and problems[0].startswith("v4 fp32 seq 128") and "16.7% slower" in problems[0]
    assert skipped == []
    assert bench.check_regression(rows(), bench.load_baseline(base), 20.0) == ([], [])


def test_a_case_busy_in_every_repeat_is_no_regression_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "environment", lambda: {"device": "FakeGPU"})
    base = tmp_path / "base.json"
    write_baseline(base, "FakeGPU", 1200.0)
    problems, skipped = bench.check_regression(rows(v4_load=BUSY), bench.load_baseline(base), 10.0)
    assert problems == []
    assert len(skipped) == 1 and skipped[0].startswith("v4 fp32 seq 128: not checked against the baseline: the "
                                                       "machine was busy in every repeat of this bench (other processes")
    assert skipped[0].endswith("so its timings measure contention")
    # a baseline measured busy says nothing either
    doc = json.loads(base.read_text())
    doc["rows"][0]["busy"] = "other processes used 1.8 CPU cores, 0 were spare"
    base.write_text(json.dumps(doc))
    problems, skipped = bench.check_regression(rows(), bench.load_baseline(base), 10.0)
    assert problems == [] and "busy in every repeat of the baseline" in skipped[0]


def test_regression_guard_refuses_other_cards_and_bad_files(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "environment", lambda: {"device": "FakeGPU"})
    other = tmp_path / "other.json"
    write_baseline(other, "OtherGPU", 1000.0)
    with pytest.raises(UserError, match="measured on OtherGPU"):
        bench.load_baseline(other)
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2")
    with pytest.raises(UserError, match="not a tinylab bench JSON"):
        bench.load_baseline(junk)
    with pytest.raises(UserError, match="no such file"):
        bench.load_baseline(tmp_path / "missing.json")


def test_cpu_bench_runs_end_to_end(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "b.json"
    res = subprocess.run(
        [sys.executable, "-m", "tinylab", "bench", "--device", "cpu", "--cases", "v1,v2", "--repeats", "1",
         "--num-steps", "4", "--warmup-steps", "1", "--hidden-dim", "32", "--num-layers", "1", "--num-heads", "2",
         "--num-kv-heads", "2", "--seq-len", "16", "--batch-size", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert [r["case"] for r in doc["rows"]] == ["v1", "v2"]
    assert all(r["params_trained"] == r["params_total"] for r in doc["rows"])
    table = res.stdout.strip().splitlines()
    head = next(n for n, line in enumerate(table) if line.startswith("case "))
    assert [line.split()[0] for line in table[head + 1:head + 3]] == ["v1", "v2"]
    assert "J/sample" in table[head] and all(len(r["runs"]) == 1 for r in doc["rows"])
    assert "kernels" in table[head] and all(r["kernels_per_step"] is None for r in doc["rows"])
    assert any(line.startswith("kernels: ") and "a CPU runs no device kernels" in line for line in table)


def test_kernel_benchmarks_without_a_gpu_fail_before_any_case_runs(tmp_path):
    import subprocess
    import sys

    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: --kernels is valid here")
    res = subprocess.run(
        [sys.executable, "-m", "tinylab", "bench", "--device", "cpu", "--cases", "v1", "--kernels",
         "--out", str(tmp_path / "b.json")],
        capture_output=True, text=True, timeout=120,
    )
    assert res.returncode != 0
    assert "--kernels" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "b.json").exists()


def test_format_rows_shows_the_liger_peer_only_where_it_ran():
    from kernels.bench_kernels import format_rows

    table = format_rows([
        {"kernel": "rmsnorm", "ms_fwd_bwd": 0.5, "liger_ms_fwd_bwd": 0.6, "vs_liger": 1.2, "liger_timing": "graph"},
        {"kernel": "flash_attention", "ms_fwd_bwd": 1.0},
    ]).splitlines()
    assert table[0].split()[-3:] == ["liger_ms_fwd_bwd", "vs_liger", "liger_timing"]
    assert table[1].split()[-3:] == ["0.6", "1.2", "graph"]
    assert table[2].split()[-1] == "1.0"


def test_liger_pair_without_a_graph_is_compared_launched_to_launched():
    from kernels.bench_kernels import _liger_columns

    assert _liger_columns(None, 1.0, 2.0)["vs_liger"] is None
    assert _liger_columns((1.5, True), 1.0, 2.0) == {"liger_ms_fwd_bwd": 1.5, "vs_liger": 1.5, "liger_timing": "graph"}
    assert _liger_columns((3.0, False), 1.0, 2.0) == {"liger_ms_fwd_bwd": 3.0, "vs_liger": 1.5, "liger_timing": "launched"}

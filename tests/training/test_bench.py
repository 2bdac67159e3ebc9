"""The bench's arithmetic and its regression guard (the GPU figures themselves live in docs/performance.md)."""

import json
from pathlib import Path

import pytest

from tinylab.training import bench
from tinylab.analysis.ceilings import FLOOR_METHOD
from tinylab.config import RunConfig
from tinylab.core.errors import UserError

REPO = Path(__file__).resolve().parents[2]


def rows():
    out = [
        {"case": "v1", "precision": "fp32", "seq_len": 128, "samples_per_s": 200.0, "peak_mem_mb": 1000.0},
        {"case": "v4", "precision": "fp32", "seq_len": 128, "samples_per_s": 1000.0, "peak_mem_mb": 300.0},
        {"case": bench.PEER, "precision": "fp32", "seq_len": 128, "samples_per_s": 800.0, "peak_mem_mb": 500.0},
        {"case": "v4", "precision": "bf16", "seq_len": 128, "samples_per_s": 3000.0, "peak_mem_mb": 250.0},
    ]
    bench.add_speedups(out)
    return out


def test_speedups_compare_within_precision_and_seq():
    r = {(x["case"], x["precision"]): x for x in rows()}
    assert r[("v4", "fp32")]["speedup_vs_v1"] == pytest.approx(5.0)
    assert r[("v4", "fp32")]["speedup_vs_peer"] == pytest.approx(1.25)
    assert r[("v4", "fp32")]["mem_vs_v1"] == pytest.approx(0.3)
    assert r[("v4", "bf16")]["speedup_vs_v1"] is None  # no bf16 v1 in the matrix


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
    problems = bench.check_regression(rows(), bench.load_baseline(base), 10.0)
    assert len(problems) == 1 and problems[0].startswith("v4 fp32 seq 128") and "16.7% slower" in problems[0]
    assert bench.check_regression(rows(), bench.load_baseline(base), 20.0) == []


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
    assert res.stdout.strip().splitlines()[-1].startswith("v2 ")


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

"""Roofline placement: analytic FLOPs/bytes per op, roofs from given ceilings, bounds."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from tinylab.analysis import roofline
from tinylab.config import RunConfig
from tinylab.events import EventWriter
from tinylab.runs.store import RunStore

CEILINGS = {"copy_gbps": 4000.0, "gemm_tflops": {"fp32": {"large": 50.0}, "tf32": {"large": 370.0}, "bf16": {"large": 780.0}}}


def test_roof_and_ridge():
    assert roofline.roof(1.0, 50.0, 4000.0) == pytest.approx(4.0)
    assert roofline.roof(1000.0, 50.0, 4000.0) == 50.0


def test_rmsnorm_model_is_two_passes_over_the_rows():
    cfg = RunConfig(batch_size=8, seq_len=128, hidden_dim=512, precision="bf16")
    model = next(m for p, m in roofline.op_models(cfg) if p.search("_rmsnorm_fwd_kernel"))
    assert model.bytes == 2 * 1024 * 512 * 2
    assert model.flops / model.bytes == pytest.approx(1.0)


def make_run(tmp_path):
    cfg = RunConfig(version="v3", batch_size=8, seq_len=128)
    run = RunStore(tmp_path).create(cfg)
    prof = run.dir / "profiles" / "pytorch"
    prof.mkdir(parents=True)
    table = pd.DataFrame([
        {"name": "nvjet_sm90_tst_64x64", "calls": 75, "total_ns": 3.0e6, "avg_ns": 4e4, "min_ns": 1e4, "max_ns": 1e5, "pct": 60.0, "category": "gemm"},
        {"name": "_rmsnorm_fwd_kernel", "calls": 51, "total_ns": 2.0e5, "avg_ns": 3.9e3, "min_ns": 3e3, "max_ns": 5e3, "pct": 4.0, "category": "norm"},
        {"name": "_attn_fwd_kernel", "calls": 24, "total_ns": 4.0e5, "avg_ns": 1.7e4, "min_ns": 1e4, "max_ns": 2e4, "pct": 8.0, "category": "attention"},
        {"name": "void at::native::vectorized_elementwise_kernel", "calls": 99, "total_ns": 1.0e5, "avg_ns": 1e3, "min_ns": 1e3, "max_ns": 1e3, "pct": 2.0, "category": "elementwise"},
    ])
    table.to_csv(prof / "kernels.csv", index=False)
    with EventWriter(run.dir / "events.jsonl") as ev:
        ev.emit("start", config=cfg.resolved().to_dict(), device="cuda", device_name="FakeGPU", param_elements=31_977_984)
        ev.emit("summary", step_ms_median=6.0, samples_per_s=1333.0, params_trained=50, params_total=50)
        ev.emit("profile", tool="pytorch", artifacts={}, kernel_table="profiles/pytorch/kernels.csv", format="pytorch-trace", note=None)
        ev.emit("exit", returncode=0, signal=None)
    return run


def test_roofline_command_places_step_gemms_and_kernels(tmp_path):
    run = make_run(tmp_path / "runs")
    ceilings = tmp_path / "ceil.json"
    ceilings.write_text(json.dumps({"ceilings": CEILINGS}))
    res = subprocess.run([sys.executable, "-m", "tinylab", "roofline", run.id, "--runs-dir", str(tmp_path / "runs"),
                          "--ceilings", str(ceilings), "--json"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    names = [p["name"] for p in out["points"]]
    assert names[:2] == ["training step", "all GEMMs (vendor BLAS)"]
    norm = next(p for p in out["points"] if p["name"] == "_rmsnorm_fwd_kernel")
    assert norm["bound"] == "memory"
    # 51 calls of 2 * 1024 * 512 * 4 bytes in 0.2 ms
    assert norm["achieved_gbps"] == pytest.approx(51 * 2 * 1024 * 512 * 4 / 2e-4 / 1e9)
    assert norm["pct_of_roof"] == pytest.approx(100 * norm["achieved_gbps"] / 4000.0)
    assert out["unplaced"] == ["void at::native::vectorized_elementwise_kernel"]
    text = subprocess.run([sys.executable, "-m", "tinylab", "roofline", run.id, "--runs-dir", str(tmp_path / "runs"),
                           "--ceilings", str(ceilings)], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and "ridge at 12.5 FLOP/byte" in text.stdout and "memory" in text.stdout
    assert "\x1b[" not in text.stdout


def test_roofline_refuses_unfinished_runs_and_missing_ceilings(tmp_path):
    run = RunStore(tmp_path).create(RunConfig())
    res = subprocess.run([sys.executable, "-m", "tinylab", "roofline", run.id, "--runs-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "has no summary" in res.stderr and "Traceback" not in res.stderr

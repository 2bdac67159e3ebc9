"""Roofline placement: analytic FLOPs/bytes per op, roofs from given ceilings, bounds."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from kernels.work import OpModel
from tinylab.analysis import roofline
from tinylab.render.roofline import render as render_roofline
from tinylab.config import RunConfig
from tinylab.core.eventlog import EventWriter
from tinylab.core.events import ExitEvent, ProfileEvent, StartEvent, Summary
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
        {"name": "nvjet_sm90_tst_64x64", "calls": 75, "total_ns": 3.0e7, "avg_ns": 4e5, "min_ns": 1e4, "max_ns": 1e5, "pct": 60.0, "category": "gemm"},
        {"name": "_rmsnorm_fwd_kernel", "calls": 51, "total_ns": 2.0e5, "avg_ns": 3.9e3, "min_ns": 3e3, "max_ns": 5e3, "pct": 4.0, "category": "norm"},
        {"name": "_attn_fwd_kernel", "calls": 24, "total_ns": 4.0e5, "avg_ns": 1.7e4, "min_ns": 1e4, "max_ns": 2e4, "pct": 8.0, "category": "attention"},
        {"name": "void at::native::vectorized_elementwise_kernel", "calls": 99, "total_ns": 1.0e5, "avg_ns": 1e3, "min_ns": 1e3, "max_ns": 1e3, "pct": 2.0, "category": "elementwise"},
    ])
    table.to_csv(prof / "kernels.csv", index=False)
    with EventWriter(run.dir / "events.jsonl") as ev:
        ev.emit(StartEvent(config=cfg.resolved().to_dict(), device="cuda", device_name="FakeGPU", param_elements=31_977_984))
        ev.emit(Summary(step_ms_median=6.0, samples_per_s=1333.0, params_trained=50, params_total=50))
        ev.emit(ProfileEvent(tool="pytorch", artifacts={}, kernel_table="profiles/pytorch/kernels.csv", format="pytorch-trace", note=None))
        ev.emit(ExitEvent(returncode=0, signal=None))
    return run


def roofline_json(run, tmp_path):
    """`tinylab roofline RUN --json` of a run in tmp_path/runs with CEILINGS: (result, ceilings file)."""
    ceilings = tmp_path / "ceil.json"
    ceilings.write_text(json.dumps({"ceilings": CEILINGS}))
    res = subprocess.run([sys.executable, "-m", "tinylab", "roofline", run.id, "--runs-dir", str(tmp_path / "runs"),
                          "--ceilings", str(ceilings), "--json"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout), ceilings


def test_roofline_command_places_step_gemms_and_kernels(tmp_path):
    run = make_run(tmp_path / "runs")
    out, ceilings = roofline_json(run, tmp_path)
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


# ------------------------------------------------------------------------ the truth of the roof
def table_rows(*rows):
    return pd.DataFrame([{"name": n, "calls": c, "total_ns": t, "avg_ns": t / c, "min_ns": t / c, "max_ns": t / c,
                          "pct": 0.0, "category": cat} for n, c, t, cat in rows])


V4 = RunConfig(version="v4", batch_size=8, seq_len=128, precision="fp32")
V4_PARAMS = 31_977_984


def test_adamw_is_placed_per_step_not_per_launch():
    """v4's AdamW launches once per layer (9 launches a step): the issue's 850.7% came from taking
    each launch for the whole flat buffer. At the H200's measured 228.6 µs a step it sits just
    under the 4.1 TB/s roof."""
    launches_per_step, steps = 9, 3
    table = table_rows(("_adamw_kernel", launches_per_step * steps, steps * 228.6e3, "elementwise"))
    result = roofline.place(V4, table, None, steps, V4_PARAMS, 50.0, 4101.0)
    (point,) = result.points
    model = next(m for p, m in roofline.op_models(V4) if p.search("_adamw_kernel"))
    assert model.per == "step" and point.achieved_gbps == pytest.approx(model.bytes / 228.6e-6 / 1e9)
    assert 80 < point.pct_of_roof <= 100 and not result.flagged


def above_the_roof(l2_bytes: float | None = None) -> roofline.Placement:
    """16 launches of SwiGLU's 25 MB each at 6.1 TB/s on a 4.1 TB/s card: the data came from L2."""
    swiglu = next(m for p, m in roofline.op_models(V4) if p.search("_swiglu_fwd_kernel"))
    seconds = 16 * swiglu.bytes / 6.1e12
    table = table_rows(("_swiglu_fwd_kernel", 16, seconds * 1e9, "elementwise"), ("_rmsnorm_fwd_kernel", 34, 1e6, "norm"))
    return roofline.place(V4, table, None, 2, V4_PARAMS, 50.0, 4101.0, l2_bytes=l2_bytes)


def at_the_roof() -> roofline.Placement:
    """SwiGLU 3.6% above the roof: within the ceilings' noise."""
    swiglu = next(m for p, m in roofline.op_models(V4) if p.search("_swiglu_fwd_kernel"))
    near = table_rows(("_swiglu_fwd_kernel", 16, 16 * swiglu.bytes / 4.25e12 * 1e9, "elementwise"),
                      ("_rmsnorm_fwd_kernel", 34, 1e6, "norm"))
    return roofline.place(V4, near, None, 2, V4_PARAMS, 50.0, 4101.0)


def test_a_point_above_its_roof_is_flagged_with_the_reason_not_plotted():
    cached = above_the_roof(l2_bytes=50 * 2**20)
    assert [p.name for p in cached.points] == ["_rmsnorm_fwd_kernel"]
    (flag,) = cached.flagged
    assert flag.name == "_swiglu_fwd_kernel" and flag.pct_of_roof == pytest.approx(100 * 6.1 / 4.101)
    assert "fits the 50 MB L2 cache" in flag.reason
    assert flag.to_json()["reason"] == flag.reason and "reason" not in cached.points[0].to_json()  # --json
    assert above_the_roof().flagged[0].reason == roofline.ABOVE_ROOF
    # within the ceilings' noise a point is still plotted
    placed = at_the_roof()
    assert [p.name for p in placed.points] == ["_swiglu_fwd_kernel", "_rmsnorm_fwd_kernel"]
    assert 100 < placed.points[0].pct_of_roof <= 100 * (1 + roofline.ROOF_TOLERANCE)


def test_steps_seen_by_each_tool():
    cfg = RunConfig(num_steps=50, profile_steps=3)
    assert roofline.steps_seen("pytorch", cfg, 50) == 3
    short = RunConfig(num_steps=6, warmup_steps=1, profile_steps=5)
    assert roofline.steps_seen("pytorch", short, 6) == 4  # steps 2..5: clamped by the schedule
    # a graphed run records from step 4, after its 3 eager warm-up steps and the capture
    assert roofline.steps_seen("pytorch", RunConfig(version="v4", cuda_graph=True, num_steps=6, warmup_steps=1,
                                                    profile_steps=5), 6) == 2
    assert roofline.steps_seen("rocprofv3", cfg, 50) == 50 and roofline.steps_seen("nsys", cfg, None) == 50
    assert roofline.steps_seen("ncu", cfg, 50) is None
    table = table_rows(("_adamw_kernel", 27, 1e6, "elementwise"), ("nvjet_x", 10, 1e6, "gemm"),
                       ("_rmsnorm_fwd_kernel", 34, 1e6, "norm"))
    ncu = roofline.place(V4, table, None, None, V4_PARAMS, 50.0, 4101.0)
    assert [p.name for p in ncu.points] == ["_rmsnorm_fwd_kernel"]
    assert {s.name for s in ncu.skipped} == {"_adamw_kernel", "all GEMMs (vendor BLAS)"}


def test_steps_seen_after_a_graphed_ddp_ranks_warm_up():
    """One graphed DDP rank warms up for 11 eager steps (RunConfig.graph_warmup_iters), not 3: the
    profiler records from step 12, so a 14-step run's window holds 2 steps."""
    cfg = RunConfig(version="v4", cuda_graph=True, parallel="ddp", num_steps=14, warmup_steps=1, profile_steps=5)
    assert roofline.steps_seen("pytorch", cfg, 14) == 2


TINY = dict(device="cpu", vocab_size=128, hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=2, seq_len=32,
            batch_size=2)
#: Kernels whose model is their exact traffic (bar a row statistic or two); the others share a
#: name with a variant that moves more (the norms with a residual stream: the model takes the
#: variant without), or recompute (v4's RoPE re-reads cos/sin per head).
EXACT = {
    "v3": ("_rmsnorm_fwd_kernel", "_rmsnorm_bwd_kernel", "_swiglu_fwd_kernel", "_swiglu_bwd_kernel", "_rope_kernel",
           "_attn_fwd_kernel", "_attn_bwd_dkdv_kernel", "_attn_bwd_dq_kernel"),
    "v4": ("_swiglu_fwd_kernel", "_swiglu_bwd_kernel", "_cross_entropy_kernel", "_scale_kernel"),
}


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="counts bytes in the Triton interpreter (TRITON_INTERPRET=1)")
def test_byte_models_never_claim_more_than_the_kernels_move():
    """Each modelled kernel of v3 and v4 (one forward and backward at a tiny size) against the
    unique bytes its launches load and store: a model above them would lift the point above its
    roof; the exact ones within 10% below."""
    import torch
    from support.triton_bytes import count_bytes

    from models import build_model
    from models.common import canonical_init

    seen = {}
    for version in ("v3", "v4"):
        cfg = RunConfig(version=version, **TINY).validate()
        models = roofline.op_models(cfg)
        model = build_model(cfg)
        model.load_canonical(canonical_init(model.config, 0))
        x = torch.randint(0, cfg.vocab_size, (cfg.batch_size, cfg.seq_len))
        with count_bytes() as log:
            model(x, torch.roll(x, -1, 1)).backward()
        for name, launches in log.items():
            op = next((m for p, m in models if p.search(name)), None)
            if op is None:
                continue
            assert op.per == "call"
            for read, written in launches:
                moved = read + written
                assert op.bytes <= moved, f"{version} {name}: model {op.bytes} > {moved} bytes moved"
                if name in EXACT[version]:
                    assert op.bytes >= 0.9 * moved, f"{version} {name}: model {op.bytes} << {moved} bytes moved"
                seen[name] = moved
    assert {"_rmsnorm_fwd_kernel", "_swiglu_fwd_kernel", "_attn_fwd_kernel", "_attn_bwd_dkdv_kernel",
            "_attn_bwd_dq_kernel", "_rope_gqa_fwd_kernel", "_cross_entropy_kernel", "_embedding_backward_kernel"} <= set(seen)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="counts bytes in the Triton interpreter (TRITON_INTERPRET=1)")
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_adamw_model_is_what_the_kernel_moves_per_weight(precision):
    import torch
    from support.triton_bytes import count_bytes

    from kernels.adamw import adamw_step

    cfg = RunConfig(version="v4", precision=precision, **TINY).validate()
    model = next(m for p, m in roofline.op_models(cfg) if p.search("_adamw_kernel"))
    d, f, v, hd = cfg.hidden_dim, cfg.ffn_dim, cfg.vocab_size, cfg.head_dim
    weights = v * d + cfg.num_layers * (d * (cfg.num_heads + 2 * cfg.num_kv_heads) * hd + cfg.num_heads * hd * d + 3 * f * d)
    n = 5000
    p, g, m, s = (torch.randn(n) for _ in range(4))
    lp = torch.empty(n, dtype=torch.bfloat16) if precision == "bf16" else None
    with count_bytes() as log:
        adamw_step(p, g, m, s.abs(), torch.ones(1), lr=1e-3, low_precision_out=lp)
    ((read, written),) = log["_adamw_kernel"]
    assert model.bytes / weights == pytest.approx((read + written - 4) / n)  # the step counter: one fp32 read


# ------------------------------------------------------------------------ proton's own counts
def make_proton_run(root):
    """A v3 run whose profile is the H100's proton tree (tests/fixtures/proton): the kernel table
    as the hook stores it, the tree and session file beside it."""
    import shutil

    from support.paths import FIX

    from tinylab.profilers.base import write_kernel_table
    from tinylab.profilers.proton import ProtonAdapter

    cfg = RunConfig(version="v3", num_steps=12, warmup_steps=5, profilers=["proton"])
    run = RunStore(root).create(cfg)
    folder = run.dir / "profiles" / "proton"
    folder.mkdir(parents=True)
    for name in ("proton.hatchet", "proton-session.json"):
        shutil.copy(FIX / "proton" / name, folder / name)
    fields = write_kernel_table(run.dir, "proton", ProtonAdapter().collect(folder))
    with EventWriter(run.dir / "events.jsonl") as ev:
        ev.emit(StartEvent(config=cfg.resolved().to_dict(), device="cuda", device_name="NVIDIA H100 80GB HBM3",
                           param_elements=31_977_984))
        ev.emit(Summary(step_ms_median=20.0, samples_per_s=400.0, params_trained=50, params_total=50))
        ev.emit(ProfileEvent(**fields))
        ev.emit(ExitEvent(returncode=0, signal=None))
    return run


def test_a_proton_run_places_its_triton_kernels_from_protons_counts(tmp_path):
    """The H100 tree's counts (launch metadata at the run's shapes, fp32) equal the model's for all
    eight Triton kernels of v3; the points are placed from them and say so."""
    run = make_proton_run(tmp_path / "runs")
    out, ceilings = roofline_json(run, tmp_path)
    own = [p for p in (*out["points"], *out["flagged"]) if p.get("source") == "proton"]
    assert {p["name"] for p in own} == {"_rmsnorm_fwd_kernel", "_rmsnorm_bwd_kernel", "_rope_kernel", "_swiglu_fwd_kernel",
                                        "_swiglu_bwd_kernel", "_attn_fwd_kernel", "_attn_bwd_dq_kernel",
                                        "_attn_bwd_dkdv_kernel"}
    assert all(p["model_ratio"] == {"flops": 1.0, "bytes": 1.0} for p in own)
    assert out["steps_seen"] == 3  # proton records the PyTorch profiler's window
    res = subprocess.run([sys.executable, "-m", "tinylab", "roofline", run.id, "--runs-dir", str(tmp_path / "runs"),
                          "--ceilings", str(ceilings)], capture_output=True, text=True, timeout=120)
    text = " ".join(res.stdout.split())
    assert "FLOPs and bytes of 8 Triton kernels: proton's own counts (launch metadata); against the model at the" in text
    assert "8 of 8 agree" in text


def test_counts_that_differ_from_the_model_are_named():
    """A launch at other shapes than the config's (here: half the bytes counted) is placed from its
    own count, and the text names the ratio; a kernel without a model is placed from its count alone."""
    cfg = RunConfig(version="v3", batch_size=8, seq_len=128)
    model = next(m for p, m in roofline.op_models(cfg) if p.search("_rmsnorm_fwd_kernel"))
    table = table_rows(("_rmsnorm_fwd_kernel", 51, 1e6, "norm"), ("_mean_kernel", 3, 1e4, "reduction"))
    counted = {"_rmsnorm_fwd_kernel": OpModel(model.flops, model.bytes / 2), "_mean_kernel": OpModel(2048, 8200)}
    result = roofline.place(cfg, table, None, 3, V4_PARAMS, 50.0, 4101.0, counted=counted)
    points = {p.name: p for p in result.points}
    assert points["_rmsnorm_fwd_kernel"].model_ratio == {"flops": 1.0, "bytes": 0.5}
    assert points["_rmsnorm_fwd_kernel"].achieved_gbps == pytest.approx(51 * model.bytes / 2 / 1e-3 / 1e9)
    assert points["_mean_kernel"].model_ratio is None and not result.unplaced
    text = " ".join(render_roofline(result, "t").split())
    assert "against the model at the run's shapes: 0 of 1 agree; _rmsnorm_fwd_kernel 1.00x FLOPs 0.50x bytes" in text

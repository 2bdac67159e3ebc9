"""The trainer on CPU: events, honest summaries, every parameter trained, failures recorded."""

import io
import json
import math
import subprocess
import sys

import pytest

from tinylab.config import RunConfig
from tinylab.core.eventlog import read_events
from tinylab.training.trainer import run_training

# The CPU acceptance config; on a GPU machine the same tests run on the GPU.
SMALL = dict(hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=2, seq_len=32, batch_size=4, device="auto")
STEP_KEYS = {"step", "loss", "step_ms", "fwd_ms", "bwd_ms", "opt_ms", "samples_per_s", "tokens_per_s",
             "mem_alloc_mb", "mem_peak_mb", "warmup"}
SUMMARY_KEYS = {"samples_per_s", "tokens_per_s", "step_ms_median", "step_ms_p10", "step_ms_p90", "peak_mem_mb",
                "initial_loss", "final_loss", "params_trained", "params_total", "model_flops_per_step", "mfu"}

TRAINED = ("v1", "v2", "v3", "v4", "v3+recompute_ffn", "v4+recompute_ffn")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One 30-step run per version, shared by the tests below."""
    out = {}
    for case in TRAINED:
        version, *toggles = case.split("+")
        run_dir = tmp_path_factory.mktemp(version)
        cfg = RunConfig(version=version, num_steps=30, **SMALL, **{t: True for t in toggles})
        summary = run_training(cfg, run_dir, out=io.StringIO())
        out[case] = (summary, read_events(run_dir / "events.jsonl"))
    return out


@pytest.mark.parametrize("case", TRAINED)
def test_every_parameter_trains_and_loss_falls(trained, case):
    summary, log = trained[case]
    assert SUMMARY_KEYS <= set(summary)
    assert summary["params_trained"] == summary["params_total"] > 0
    assert summary["final_loss"] < summary["initial_loss"] - 0.5
    steps = log.of("step")
    assert [s["step"] for s in steps] == list(range(30))
    assert all(STEP_KEYS <= set(s) for s in steps)
    assert log.corrupt_lines == [] and not log.partial_tail


def test_step0_losses_agree_across_versions(trained):
    first = {v: trained[v][1].of("step")[0]["loss"] for v in trained}
    assert max(first.values()) - min(first.values()) < 1e-4, first
    assert abs(first["v1"] - math.log(1000)) < 0.2  # N(0, 0.02) init starts near uniform


def test_phases_add_up_on_cpu(trained):
    for s in trained["v1"][1].of("step"):
        parts = s["fwd_ms"] + s["bwd_ms"] + s["opt_ms"]
        assert abs(parts - s["step_ms"]) / s["step_ms"] < 0.1


def test_summary_medians_exclude_warmup(trained):
    summary, log = trained["v1"]
    measured = sorted(s["step_ms"] for s in log.of("step") if not s["warmup"])
    assert len(measured) == 25
    assert summary["step_ms_median"] == pytest.approx((measured[12]))
    assert summary["samples_per_s"] == pytest.approx(4 / (summary["step_ms_median"] / 1e3))


def test_random_tokens_hide_learning(tmp_path):
    """Why the corpus is structured: on uniform random tokens the loss cannot fall below ln V."""
    cfg = RunConfig(version="v1", num_steps=30, dataset="random", **SMALL)
    summary = run_training(cfg, tmp_path, out=io.StringIO())
    assert summary["final_loss"] > math.log(1000) - 0.3


def test_missing_init_explodes_initial_loss(tmp_path):
    cfg = RunConfig(version="v1", num_steps=2, warmup_steps=0, fault="missing-init", **SMALL)
    summary = run_training(cfg, tmp_path, out=io.StringIO())
    assert summary["initial_loss"] > 5 * math.log(1000)


def test_failure_is_an_error_event_and_nonzero_exit(tmp_path):
    bad = RunConfig(**SMALL).to_dict() | {"num_heads": 7}
    (tmp_path / "config.json").write_text(json.dumps(bad))
    res = subprocess.run([sys.executable, "-m", "tinylab.training.trainer", "--config", str(tmp_path / "config.json")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    err = read_events(tmp_path / "events.jsonl").last("error")
    assert err["type"] == "ConfigError" and "--num-heads 7" in err["message"]


def test_peak_memory_counts_only_the_runs_own_allocations(tmp_path):
    """A bench runs many cases in one process; what earlier cases left allocated must not show
    up in the next case's peak (it did: v1 at seq 1024 read 6,605 MB after other cases, 6,285 MB
    alone, on an H200)."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("peak memory is measured on CUDA/ROCm devices only")
    cfg = dict(version="v1", device="cuda", hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=2,
               seq_len=32, batch_size=4, num_steps=3, warmup_steps=1)
    run_training(RunConfig(**cfg), tmp_path / "warm", out=io.StringIO())  # library workspaces stay allocated
    alone = run_training(RunConfig(**cfg), tmp_path / "a", out=io.StringIO())["peak_mem_mb"]
    leftover = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")  # 256 MB held throughout
    after = run_training(RunConfig(**cfg), tmp_path / "b", out=io.StringIO())["peak_mem_mb"]
    del leftover
    assert after == pytest.approx(alone, abs=8), (alone, after)


def test_a_graphed_profiled_run_logs_no_torch_warnings(tmp_path):
    """A learner's log of a profiled v4 run held two torch warnings (H100, torch 2.11): the capture's
    AccumulateGrad stream mismatch (the warm-up kept its last loss, and so its autograd graph,
    alive) and the profiler's "clears events at the end of each cycle" (a one-cycle schedule)."""
    import warnings

    import torch

    if not torch.cuda.is_available():
        pytest.skip("CUDA graphs and the profiler's GPU trace need a CUDA/ROCm device")
    cfg = RunConfig(version="v4", device="cuda", hidden_dim=64, num_layers=2, num_heads=4, num_kv_heads=2,
                    seq_len=32, batch_size=4, num_steps=10, warmup_steps=2, profilers=["pytorch"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = run_training(cfg, tmp_path, out=io.StringIO())
    assert summary["params_trained"] == summary["params_total"]
    assert not [str(w.message)[:120] for w in caught if issubclass(w.category, UserWarning)]


class _Nvtx:
    """torch.cuda.nvtx as far as the trainer uses it, recording what it marks."""

    def __init__(self, broken: bool = False):
        self.marked: list[str] = []
        self.broken = broken

    def range_push(self, name):
        if self.broken:
            raise RuntimeError("NVTX functions not installed")

    def range_pop(self):
        pass

    def range(self, name):
        import contextlib

        self.marked.append(name)
        return contextlib.nullcontext()


def test_gpu_runs_mark_steps_and_phases_cpu_runs_do_not(tmp_path):
    """On a GPU each step is a roctx/NVTX range named for readers (warm-up says so) and the phases
    are ranges too; on a CPU nothing is marked (record_function only, as before)."""
    from types import SimpleNamespace

    import torch

    from tinylab.training.device import markers_work
    from tinylab.training.trainer import Trainer

    nvtx = _Nvtx()
    trainer = Trainer(RunConfig(device="cpu"), tmp_path)
    trainer.torch = SimpleNamespace(cuda=SimpleNamespace(nvtx=nvtx), profiler=torch.profiler)
    trainer.markers = True
    with trainer._step_marker(0, warmup=True), trainer._range("forward"):
        pass
    with trainer._step_marker(5, warmup=False):
        pass
    assert nvtx.marked == ["tinylab warm-up step 0", "forward", "tinylab step 5"]
    trainer.markers = False
    with trainer._step_marker(6, warmup=False), trainer._range("backward"):
        pass
    assert nvtx.marked[-1] == "tinylab step 5"
    assert markers_work(SimpleNamespace(cuda=SimpleNamespace(nvtx=nvtx)))
    assert not markers_work(SimpleNamespace(cuda=SimpleNamespace(nvtx=_Nvtx(broken=True))))
    trainer.close()


def test_a_run_beside_a_cpu_hog_records_the_load_and_is_marked_busy(tmp_path):
    """The run goes through the launcher as a learner's does (the supervisor roots its process
    tree); the load is made here, one spinning process per CPU from the run's first step, so the
    test does not depend on how busy the shared machine already is. The verdict on quiet figures
    is tests/test_events.py's."""
    from support.runs import tiny_config, wait_for_status, wait_for_step

    from tinylab.profilers.base import usable_cpus
    from tinylab.service.lab import Lab

    lab = Lab(tmp_path / "runs")
    run = lab.launch(tiny_config(num_steps=30, warmup_steps=2))
    hogs = []
    try:
        wait_for_step(run, timeout=120)
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(usable_cpus() or 1)]
        assert wait_for_status(run, timeout=180) == "finished"
    finally:
        for hog in hogs:
            hog.kill()
    loads = run.events().of("load")
    assert loads and all(e["cpus"] == (usable_cpus() or 1) for e in loads)
    record = lab.record(run.id)
    assert record.summary.others_cpu_cores > record.summary.spare_cpu_cores + 0.5
    assert record.busy.startswith("other processes used") and record.row()["busy"] == record.busy
    assert "machine busy   other processes used" in run.output_log.read_text()

"""The GEMM floor (tinylab/analysis/ceilings.py): it replays the model's matmul FLOPs, and is not
measured without a GPU (the bench's use of it: tests/training/test_bench.py)."""

from __future__ import annotations

import pytest

from tinylab.config import RunConfig


@pytest.mark.parametrize("cfg", [RunConfig(), RunConfig(seq_len=1024, num_kv_heads=8), RunConfig(hidden_dim=256, num_heads=4, num_kv_heads=2, num_layers=3)])
def test_the_floors_gemms_are_the_models_gemm_flops(cfg):
    """The floor replays exactly the matmul FLOPs that the roofline's GEMM point counts."""
    from tinylab.analysis.ceilings import step_gemms
    from tinylab.analysis.roofline import gemm_flops_per_step

    gemms = step_gemms(cfg)
    assert len(gemms) == 3 * (4 * cfg.num_layers + 1)
    assert sum(2 * m * n * k for _, m, n, k in gemms) == pytest.approx(gemm_flops_per_step(cfg))


def test_gemm_floor_is_not_measured_without_a_gpu():
    import torch

    from tinylab.analysis.ceilings import measure_gemm_floor

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert measure_gemm_floor(RunConfig())["floor_ms"] is None

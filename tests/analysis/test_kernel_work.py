"""The one source of the FLOP/byte formulas: every Triton kernel a v3 or v4 step launches gives
proton its work through launch metadata, from kernels.work, and where a launch's
shapes are the config's that work is the roofline's model.

The step runs on fake tensors inside kernels._utils.planning (as tinylab.anatomy plans a step):
every launch is recorded with its real arguments, nothing is compiled or run, and each kernel's
launch-metadata function is called with those arguments as Triton calls it under proton.
"""

from __future__ import annotations

import functools
import inspect
import json
import unittest.mock
import warnings

import pytest

from kernels import work as kernel_work
from tinylab.analysis import roofline
from tinylab.config import RunConfig

SIZES = dict(num_layers=2)  # the workshop's shapes; every layer launches what the second does


def record_step(cfg: RunConfig) -> list[tuple]:
    """(kernel, grid, {argument: value}) of every Triton launch of one training step of `cfg`."""
    return _recorded(cfg.to_json())


@functools.lru_cache(maxsize=None)
def _recorded(config_json: str) -> list[tuple]:
    cfg = RunConfig.from_dict(json.loads(config_json))
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    import kernels
    import models.flat_adamw
    from kernels import _utils
    from models import build_model
    from tinylab.anatomy.launches import _torch_state

    with warnings.catch_warnings(), _torch_state(torch, cfg), \
            unittest.mock.patch.object(models.flat_adamw, "adamw_reference", kernels.adamw_step), \
            _utils.planning("sm_90", 132) as recorded, FakeTensorMode():
        warnings.simplefilter("ignore")  # fake tensors' data_ptr() and CPU autocast notices
        model = build_model(cfg)
        idx = torch.randint(0, cfg.vocab_size, (cfg.batch_size, cfg.seq_len))
        amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(cfg.precision)
        with torch.autocast("cpu", dtype=amp, enabled=amp is not None):
            loss = model(idx, idx)
        loss.backward()
        optimizer_class = getattr(model, "optimizer_class", None)
        if optimizer_class is not None:
            optimizer_class(model, lr=cfg.learning_rate, weight_decay=cfg.weight_decay).step()
        return [(kernel, grid, {**dict(zip(inspect.signature(kernel.fn).parameters, args)), **kwargs})
                for kernel, grid, args, kwargs in recorded]


def metadata_function(kernel):
    """The kernel's launch_metadata, compiled (JITFunction) or interpreted (InterpretedFunction)."""
    return getattr(kernel, "launch_metadata", None) or getattr(kernel, "kwargs", {}).get("launch_metadata")


SCENARIOS = {
    "v3": dict(version="v3"),
    "v3-bf16": dict(version="v3", precision="bf16"),
    "v3-deterministic": dict(version="v3", deterministic=True),
    "v3-naive-swiglu": dict(version="v3", fault="naive-triton-swiglu"),
    "v4": dict(version="v4"),
    "v4-bf16": dict(version="v4", precision="bf16"),
    "v4-no-sdpa": dict(version="v4", sdpa=False),
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_triton_kernel_of_a_step_reports_its_work(scenario):
    cfg = RunConfig(**SIZES, **SCENARIOS[scenario]).resolved().validate()
    launches = record_step(cfg)
    assert launches
    for kernel, grid, args in launches:
        work = metadata_function(kernel)
        assert work is not None, f"{kernel.fn.__name__} has no launch metadata"
        counted = work(grid, None, args)
        assert set(counted) == {"flops", "bytes"} and counted["flops"] > 0 and counted["bytes"] > 0


def test_the_scenarios_launch_every_kernel_of_the_package():
    launched = {k.fn.__name__ for scenario in SCENARIOS.values()
                for k, _, _ in record_step(RunConfig(**SIZES, **scenario).resolved().validate())}
    assert launched == {
        "_rmsnorm_fwd_kernel", "_rmsnorm_bwd_kernel", "_column_sum_kernel", "_swiglu_fwd_kernel", "_swiglu_bwd_kernel",
        "_rope_kernel", "_rope_gqa_fwd_kernel", "_rope_gqa_bwd_kernel", "_attn_fwd_kernel", "_attn_bwd_dq_kernel",
        "_attn_bwd_dkdv_kernel", "_cross_entropy_kernel", "_mean_kernel", "_scale_kernel", "_adamw_kernel",
        "_embedding_backward_kernel", "_naive_swiglu_ffn_kernel"}


def test_v3_fp32_launches_count_what_the_roofline_models():
    """At fp32 every v3 launch runs at the config's shapes and element size: proton's counts are
    the model's exactly (measured so on an H100: tests/fixtures/proton, test_roofline)."""
    cfg = RunConfig(**SIZES, version="v3").resolved().validate()
    models = roofline.op_models(cfg)
    seen = set()
    for kernel, grid, args in record_step(cfg):
        name = kernel.fn.__name__
        model = next(m for pattern, m in models if pattern.search(name))
        counted = metadata_function(kernel)(grid, None, args)
        assert (counted["flops"], counted["bytes"]) == (model.flops, model.bytes), name
        seen.add(name)
    assert seen == {"_rmsnorm_fwd_kernel", "_rmsnorm_bwd_kernel", "_rope_kernel", "_swiglu_fwd_kernel",
                    "_swiglu_bwd_kernel", "_attn_fwd_kernel", "_attn_bwd_dq_kernel", "_attn_bwd_dkdv_kernel"}


def test_v4_residual_norms_count_their_second_stream():
    """v4's fused residual add reads x and r and writes y and h: the add_rmsnorm formula, which
    the roofline's name-based model cannot tell apart from a plain norm."""
    cfg = RunConfig(**SIZES, version="v4", sdpa=False).resolved().validate()
    t, d = cfg.batch_size * cfg.seq_len, cfg.hidden_dim
    norms = [(metadata_function(k)(g, None, a), a) for k, g, a in record_step(cfg) if k.fn.__name__ == "_rmsnorm_fwd_kernel"]
    residual = [counted for counted, args in norms if args["HAS_RESIDUAL"]]
    assert residual and all(c["bytes"] == kernel_work.rmsnorm_fwd(t, d, 4, residual=True).bytes for c in residual)


def test_the_attention_formulas_follow_the_causal_half():
    causal = kernel_work.attention_fwd(2, 4, 2, 8, 16, 4)
    full = kernel_work.attention_fwd(2, 4, 2, 8, 16, 4, causal=False)
    assert causal.flops == 4 * 2 * 4 * 8 * 4.5 * 16 and full.flops == 4 * 2 * 4 * 8 * 8 * 16
    assert kernel_work.attention_bwd_dkdv(2, 4, 2, 8, 16, 4).flops == 2 * causal.flops
    assert kernel_work.attention_bwd_dq(2, 4, 2, 8, 16, 4).flops == 1.5 * causal.flops

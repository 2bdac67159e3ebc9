"""The TinyLlama model versions v1..v4, one readable file each, sharing one parameter layout.

`build_model(run_config)` picks the version. Every version can load the same canonical weights
(v1's layout: separate q/k/v and gate/up), so one seed gives identical weights in every version
and their losses and gradients can be compared directly.
"""

from models.common import ModelConfig, canonical_init, to_canonical, from_canonical


def build_model(cfg, kernels_ok: bool = True):
    """Build the model for a tinylab RunConfig (fault and toggles included)."""
    mc = ModelConfig.from_run_config(cfg)
    if cfg.version == "v1":
        from models.v1_baseline import TinyLlamaV1 as cls
    elif cfg.version == "v2":
        from models.v2_fused import TinyLlamaV2 as cls
    elif cfg.version == "v3":
        from models.v3_triton import TinyLlamaV3 as cls
    elif cfg.version == "v4":
        from models.v4_ultra import TinyLlamaV4 as cls
    else:
        raise ValueError(f"unknown version {cfg.version!r}")
    return cls(mc)


__all__ = ["ModelConfig", "build_model", "canonical_init", "to_canonical", "from_canonical"]

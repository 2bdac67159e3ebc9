"""The TinyLlama model versions v1..v4, one readable file each, sharing one parameter layout.

`build_model(run_config)` builds the class its version's record names (tinylab/core/versions.py).
Every version can load the same canonical weights (v1's layout: separate q/k/v and gate/up), so
one seed gives identical weights in every version and their losses and gradients can be compared
directly.
"""

import importlib

from models.common import ModelConfig, canonical_init, to_canonical, from_canonical
from tinylab.core.versions import TABLE


def build_model(cfg, kernels_ok: bool = True):
    """Build the model for a tinylab RunConfig (fault and toggles included). A version's module is
    imported when it is built, so building v1 never imports the Triton kernels."""
    spec = TABLE.get(cfg.version)
    if spec is None:
        raise ValueError(f"unknown version {cfg.version!r}")
    module, _, name = spec.model.partition(":")
    cls = getattr(importlib.import_module(module), name)
    return cls(ModelConfig.from_run_config(cfg))


__all__ = ["ModelConfig", "build_model", "canonical_init", "to_canonical", "from_canonical"]

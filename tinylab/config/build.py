"""RunConfig from what a person chose: the CLI's flags, the Lab's form and an exercise step's preset
all come through `from_choices`, so presets, the profilers' environment defaults and "several
processes train under ddp" are written once.
"""

from __future__ import annotations

from typing import Any, Mapping

from tinylab.config import RunConfig, env_defaults

#: Model and batch sizes by machine. The workshop's sizes are the RunConfig defaults and what a
#: GPU gets; on a CPU they take 19 s a v1 step, so a machine without a GPU starts from `cpu`,
#: where a 50-step v1 run takes seconds (head dim 32: v3 and v4 run too). docs/performance.md
#: has the timings.
PRESETS: dict[str, dict[str, int]] = {
    "workshop": {"hidden_dim": 512, "num_layers": 8, "num_heads": 8, "num_kv_heads": 4, "batch_size": 8,
                 "seq_len": 128},
    "cpu": {"hidden_dim": 128, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "batch_size": 4, "seq_len": 64},
}
PRESET_HELP = {
    "workshop": "the reference workshop's sizes (hidden 512, 8 layers, batch 8, seq 128): for a GPU",
    "cpu": "small sizes for a machine without a GPU (hidden 128, 2 layers, batch 4, seq 64)",
}


def preset_for(device_type: str) -> str:
    """The preset a machine starts from: `cpu` when the run will be on the CPU, else the workshop's."""
    return "cpu" if device_type == "cpu" else "workshop"


def matching_preset(values: dict[str, Any]) -> str | None:
    """The preset whose sizes these are, or None (custom sizes)."""
    return next((name for name, sizes in PRESETS.items() if all(values.get(k) == v for k, v in sizes.items())), None)


def from_choices(values: dict[str, Any], *, preset: str | None = None,
                 environ: Mapping[str, str] | None = None) -> RunConfig:
    """The RunConfig of `values` (RunConfig fields a person set), not yet validated (the caller
    validates, or checks it against the machine).

    Under them: the sizes of `preset` (None: the values hold their own) and each chosen
    profiler's settings from its TINYLAB_* variable (env_defaults). A run of several processes
    with no engine named trains under ddp, as `--nproc-per-node 2` alone does in torchrun's world.
    A key that is no RunConfig field is a ConfigError.
    """
    values = {**env_defaults(values.get("profilers", []), environ), **(PRESETS[preset] if preset else {}), **values}
    if values.get("parallel") is None and values.get("nproc_per_node", 1) * values.get("nnodes", 1) > 1:
        values["parallel"] = "ddp"
    return RunConfig.from_dict(values)

"""The run flags shared by `train`, `run`, `bench` and `exercises check`, named as in the workshop."""

from __future__ import annotations

import argparse
import dataclasses

from tinylab.config import (
    COMPILE_MODES,
    DATASETS,
    FAULTS,
    PRECISIONS,
    PROFILERS,
    TOGGLE_HELP,
    TOGGLES,
    VERSIONS,
    RunConfig,
)

_DEFAULTS = RunConfig()


def add_run_arguments(p: argparse.ArgumentParser, with_version: bool = True) -> None:
    m = p.add_argument_group("model")
    if with_version:
        m.add_argument("--version", default=_DEFAULTS.version, metavar="V",
                       help=f"model version: {', '.join(VERSIONS)} (default {_DEFAULTS.version})")
    m.add_argument("--vocab-size", type=int, default=_DEFAULTS.vocab_size)
    m.add_argument("--hidden-dim", type=int, default=_DEFAULTS.hidden_dim)
    m.add_argument("--num-layers", type=int, default=_DEFAULTS.num_layers)
    m.add_argument("--num-heads", type=int, default=_DEFAULTS.num_heads)
    m.add_argument("--num-kv-heads", type=int, default=_DEFAULTS.num_kv_heads,
                   help="key/value heads for grouped-query attention (must divide --num-heads)")
    t = p.add_argument_group("training")
    t.add_argument("--batch-size", type=int, default=_DEFAULTS.batch_size)
    t.add_argument("--seq-len", type=int, default=_DEFAULTS.seq_len)
    t.add_argument("--num-steps", type=int, default=_DEFAULTS.num_steps)
    t.add_argument("--warmup-steps", type=int, default=_DEFAULTS.warmup_steps,
                   help="steps excluded from the medians (default %(default)s)")
    t.add_argument("--learning-rate", type=float, default=_DEFAULTS.learning_rate)
    t.add_argument("--weight-decay", type=float, default=_DEFAULTS.weight_decay)
    t.add_argument("--use-amp", action="store_true", help="mixed precision (autocast); dtype from --amp-dtype")
    t.add_argument("--amp-dtype", choices=["bf16", "fp16"], default="bf16")
    t.add_argument("--precision", choices=PRECISIONS, default=None,
                   help="fp32, bf16 or fp16 (overrides --use-amp/--amp-dtype)")
    t.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=False,
                   help="allow TF32 matmuls for fp32 (off: strict fp32)")
    t.add_argument("--dataset", choices=DATASETS, default=_DEFAULTS.dataset,
                   help="patterns: learnable synthetic corpus; random: uniform tokens (loss stays at ln V)")
    f = p.add_argument_group("fusion toggles (default: the version's own)")
    for name in TOGGLES:
        versions = ", ".join(TOGGLES[name])
        f.add_argument("--" + name.replace("_", "-"), dest=name, action=argparse.BooleanOptionalAction,
                       default=None, help=f"{TOGGLE_HELP[name]} [{versions}]")
    f.add_argument("--compile-mode", choices=COMPILE_MODES, default=_DEFAULTS.compile_mode)
    e = p.add_argument_group("environment")
    e.add_argument("--device", default=_DEFAULTS.device, help="auto, cpu, cuda or cuda:N (default auto)")
    e.add_argument("--seed", type=int, default=_DEFAULTS.seed)
    e.add_argument("--deterministic", action="store_true", help="deterministic algorithms and fixed seeds")
    e.add_argument("--profile", dest="profilers", action="append", default=[], metavar="TOOL",
                   help=f"profile the run with TOOL (repeatable): {', '.join(PROFILERS)}")
    e.add_argument("--profile-steps", type=int, default=_DEFAULTS.profile_steps,
                   help="steps recorded by the PyTorch profiler (default %(default)s)")
    e.add_argument("--fault", default=None, metavar="NAME",
                   help=f"inject a teaching fault: {', '.join(FAULTS)}")
    e.add_argument("--label", default="", help="a note shown in run lists")


def config_from_args(args: argparse.Namespace, **overrides) -> RunConfig:
    """RunConfig from parsed flags; validated (ConfigError on bad values)."""
    names = {f.name for f in dataclasses.fields(RunConfig)}
    values = {k: v for k, v in vars(args).items() if k in names}
    values["precision"] = args.precision or (args.amp_dtype if args.use_amp else "fp32")
    values.update(overrides)
    return RunConfig(**values).validate()

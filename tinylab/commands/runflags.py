"""The run flags shared by `train`, `run`, `bench` and `exercises check`, named as in the workshop.

Sizes (hidden, layers, heads, kv heads, batch, seq) start from a preset chosen by the machine
(`--preset auto`: `cpu` when the run will be on the CPU, else the workshop's); a size flag given
on the command line wins over the preset.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from tinylab.config import (
    COMPILE_MODES,
    ConfigError,
    ENGINES,
    DATASETS,
    ENV_DEFAULTS,
    FAULTS,
    PRECISIONS,
    TOGGLE_HELP,
    TOGGLES,
    VERSIONS,
    RunConfig,
)
from tinylab.config import range_text
from tinylab.config.build import PRESET_HELP, PRESETS, from_choices, preset_for
from tinylab.commands._common import integer, setting_type
from tinylab.service import profilers

_DEFAULTS = RunConfig()
SIZES = tuple(PRESETS["workshop"])
PRESET = "(%s; default: the preset's)"


def add_run_arguments(p: argparse.ArgumentParser, with_version: bool = True, with_preset: bool = True,
                      with_world: bool = True) -> None:
    """The run flags; `with_world=False` leaves out --nproc-per-node, --nnodes and --rdzv-endpoint
    (`tinylab submit` asks Slurm for --nodes and --gpus-per-node, and Slurm gives the endpoint)."""
    m = p.add_argument_group("model")
    if with_version:
        m.add_argument("--version", default=_DEFAULTS.version, metavar="V",
                       help=f"model version: {', '.join(VERSIONS)} (default {_DEFAULTS.version})")
    if with_preset:
        m.add_argument("--preset", choices=("auto", *PRESETS), default="auto",
                       help="starting sizes: " + "; ".join(f"{k}: {v}" for k, v in PRESET_HELP.items())
                       + "; auto (default): cpu when the run will be on the CPU, else workshop")
    m.add_argument("--vocab-size", **_ranged("vocab_size", "(%s; default %%(default)s)"), default=_DEFAULTS.vocab_size)
    m.add_argument("--hidden-dim", **_ranged("hidden_dim", PRESET), default=None)
    m.add_argument("--num-layers", **_ranged("num_layers", PRESET), default=None)
    m.add_argument("--num-heads", **_ranged("num_heads", PRESET), default=None)
    m.add_argument("--num-kv-heads", **_ranged("num_kv_heads", "key/value heads for grouped-query attention (must "
                                               "divide --num-heads; %s; default: the preset's)"), default=None)
    t = p.add_argument_group("training")
    t.add_argument("--batch-size", **_ranged("batch_size", PRESET), default=None)
    t.add_argument("--seq-len", **_ranged("seq_len", PRESET), default=None)
    t.add_argument("--num-steps", **_ranged("num_steps", "(%s; default %%(default)s)"), default=_DEFAULTS.num_steps)
    t.add_argument("--warmup-steps", **_ranged("warmup_steps", "steps excluded from the medians (%s, fewer than "
                                               "--num-steps; default %%(default)s)"), default=_DEFAULTS.warmup_steps)
    t.add_argument("--learning-rate", **_ranged("learning_rate", "(%s; default %%(default)s)"),
                   default=_DEFAULTS.learning_rate)
    t.add_argument("--weight-decay", **_ranged("weight_decay", "(%s; default %%(default)s)"),
                   default=_DEFAULTS.weight_decay)
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
    e.add_argument("--seed", **_ranged("seed", "(%s; default %%(default)s)"), default=_DEFAULTS.seed)
    e.add_argument("--deterministic", action="store_true", help="deterministic algorithms and fixed seeds")
    e.add_argument("--profile", dest="profilers", action="append", default=[], metavar="TOOL",
                   help=f"profile the run with TOOL (repeatable): {', '.join(profilers.names())}")
    e.add_argument("--profile-steps", **_ranged("profile_steps", "steps recorded by the PyTorch profiler (%s, at "
                                                 f"most --num-steps; default {_DEFAULTS.profile_steps}, fewer in a "
                                                 "shorter run)"), default=None)
    s = p.add_argument_group("what a profiler records (default: the tool's own, or the TINYLAB_* variable named)")
    for setting in profilers.settings():
        s.add_argument(setting.flag, dest=setting.name, **_flag_options(setting))
    e.add_argument("--fault", default=None, metavar="NAME",
                   help=f"inject a teaching fault: {', '.join(FAULTS)}")
    e.add_argument("--label", default="", help="a note shown in run lists")
    d = p.add_argument_group("several processes (torchrun starts one a GPU; gloo on a CPU)")
    d.add_argument("--parallel", choices=tuple(ENGINES), default=None,
                   help="; ".join(f"{k}: {v}" for k, v in ENGINES.items())
                   + " (default: one process, or ddp for several)")
    if not with_world:
        return
    d.add_argument("--nproc-per-node", **_ranged("nproc_per_node", "processes (ranks) on this node, one a GPU "
                                                  "(%s; default 1)"), default=1, metavar="N")
    d.add_argument("--nnodes", **_ranged("nnodes", "nodes of the run (%s; default 1); several nodes need "
                                         "--rdzv-endpoint, or `tinylab submit`"), default=1, metavar="N")
    d.add_argument("--rdzv-endpoint", default=None, metavar="HOST:PORT",
                   help="where the nodes of a run of several meet (the first node's address and a free port)")


def _ranged(name: str, help_text: str) -> dict[str, Any]:
    """The type and help of a run setting's flag: its range (tinylab.config's INT_RANGES or
    FLOAT_RANGES) put in the help at `%s`, and the same words in argparse's refusal."""
    return {"type": setting_type(name), "help": help_text % range_text(name)}


def _flag_options(setting: profilers.Setting) -> dict[str, Any]:
    """A profiler setting's flag, as its adapter declares it: repeated for a list, with --no-X for a
    bool. Its default is None where a variable may set the setting (config_from_args then takes
    the variable's value, else the setting's default), else the setting's default."""
    options: dict[str, Any] = {"default": None if setting.env else setting.default_value(), "help": setting.help}
    if setting.type is bool:
        options["action"] = argparse.BooleanOptionalAction
    elif setting.type is list:
        options["action"] = "append"
    elif setting.type is int:
        options["type"] = integer(setting.low, setting.high)
    if setting.metavar:
        options["metavar"] = setting.metavar
    elif setting.choices:  # shown as {a,b} and refused by argparse itself
        options["choices"] = setting.choices
    if setting.env:
        options["help"] += f"; ${setting.env}" + (f", split by {setting.split}" if setting.split != "," else "")
    if setting.type is int:
        options["help"] += f"; {setting.low} to {setting.high}"
    return options


def chosen_preset(args: argparse.Namespace, device_type: str) -> str:
    """The preset the flags ask for, `auto` resolved for the device the run will be on."""
    preset = getattr(args, "preset", "auto")
    return preset_for(device_type) if preset == "auto" else preset


def config_from_args(args: argparse.Namespace, device_type: str = "cuda", **overrides) -> RunConfig:
    """RunConfig from parsed flags, sizes from the preset unless a flag set them, profiler settings from
    their TINYLAB_* variable unless a flag set them; validated.

    `device_type` ("cpu" or "cuda": where the run will be) picks the preset of `--preset auto`.
    """
    names = {f.name for f in dataclasses.fields(RunConfig)}
    # None: the preset's size, the variable's or the default setting, the default window
    unset = (*SIZES, *ENV_DEFAULTS, "profile_steps")
    values = {k: v for k, v in vars(args).items() if k in names and not (k in unset and v is None)}
    values["precision"] = args.precision or (args.amp_dtype if args.use_amp else "fp32")
    values.update(overrides)
    cfg = from_choices(values, preset=chosen_preset(args, device_type)).validate()
    asked = getattr(args, "profile_steps", None)
    if asked is not None and asked > cfg.num_steps:  # never recordable; the default shrinks in a short run instead
        raise ConfigError(f"--profile-steps {asked} is more than the run's {cfg.num_steps} steps (--num-steps): "
                          f"ask for at most {cfg.num_steps}")
    return cfg

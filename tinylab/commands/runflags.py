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
from tinylab.config.build import PRESET_HELP, PRESETS, from_choices, preset_for
from tinylab.service import profilers

_DEFAULTS = RunConfig()
SIZES = tuple(PRESETS["workshop"])


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
    m.add_argument("--vocab-size", type=int, default=_DEFAULTS.vocab_size)
    m.add_argument("--hidden-dim", type=int, default=None, help="(default: the preset's)")
    m.add_argument("--num-layers", type=int, default=None, help="(default: the preset's)")
    m.add_argument("--num-heads", type=int, default=None, help="(default: the preset's)")
    m.add_argument("--num-kv-heads", type=int, default=None,
                   help="key/value heads for grouped-query attention (must divide --num-heads; default: the preset's)")
    t = p.add_argument_group("training")
    t.add_argument("--batch-size", type=int, default=None, help="(default: the preset's)")
    t.add_argument("--seq-len", type=int, default=None, help="(default: the preset's)")
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
                   help=f"profile the run with TOOL (repeatable): {', '.join(profilers.names())}")
    e.add_argument("--profile-steps", type=int, default=_DEFAULTS.profile_steps,
                   help="steps recorded by the PyTorch profiler (default %(default)s)")
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
    d.add_argument("--nproc-per-node", type=int, default=1, metavar="N",
                   help="processes (ranks) on this node, one a GPU (default 1)")
    d.add_argument("--nnodes", type=int, default=1, metavar="N",
                   help="nodes of the run (default 1); several nodes need --rdzv-endpoint, or `tinylab submit`")
    d.add_argument("--rdzv-endpoint", default=None, metavar="HOST:PORT",
                   help="where the nodes of a run of several meet (the first node's address and a free port)")


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
        options["type"] = int
    if setting.metavar:
        options["metavar"] = setting.metavar
    elif setting.choices:  # shown as {a,b} and refused by argparse itself
        options["choices"] = setting.choices
    if setting.env:
        options["help"] += f"; ${setting.env}" + (f", split by {setting.split}" if setting.split != "," else "")
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
    unset = (*SIZES, *ENV_DEFAULTS)  # None: the preset's size, the variable's or the default setting
    values = {k: v for k, v in vars(args).items() if k in names and not (k in unset and v is None)}
    values["precision"] = args.precision or (args.amp_dtype if args.use_amp else "fp32")
    values.update(overrides)
    return from_choices(values, preset=chosen_preset(args, device_type)).validate()

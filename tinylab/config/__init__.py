"""RunConfig: everything one training run needs, validated before anything starts.

Kept free of torch so that the CLI, the TUI form and the exercise loader can validate a config
(and print a one-line error) without paying for a torch import.

The profilers' own settings are no fields written here: each adapter declares them
(tinylab/profilers/, `Setting`), and config_class adds them to RunConfigBase's fields, so a tool's
options, checks and environment variables live with the tool (docs/profilers.md).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

from tinylab.core.errors import UserError
from tinylab.core.window import DDP_GRAPH_WARMUP_ITERS, GRAPH_WARMUP_ITERS
from tinylab.profilers import registry
from tinylab.profilers.base import IN_PROCESS, ProfilerAdapter
# What applies to each version (descriptions, toggles and their defaults, faults, engines that cannot
# train it) is read off its record in the version table, under the names the faces use.
from tinylab.core.versions import ENGINE_LIMITS, FAULTS, TABLE, TOGGLES, VERSIONS, Version, baseline

PRECISIONS = ("fp32", "bf16", "fp16")
DEVICES = ("auto", "cpu", "cuda")
DATASETS = ("patterns", "random")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

TOGGLE_HELP: dict[str, str] = {
    "qkv_fusion": "one GEMM for q, k and v instead of three",
    "sdpa": "torch scaled_dot_product_attention (flash/memory-efficient) instead of eager (v2) or Triton (v4) attention",
    "swiglu_fusion": "one GEMM for gate and up instead of two",
    "torch_compile": "torch.compile the model (inductor)",
    "cuda_graph": "capture the whole training step in a CUDA/HIP graph and replay it (GPU only)",
    "recompute_ffn": "activation checkpointing: keep only the FFN's input and recompute the FFN in the backward, less memory for more FLOPs",
}

#: Engines that spread training over several processes (torchrun starts one a GPU), and the
#: versions each can train. tinylab/training/parallel.py builds them; ENGINE_LIMITS says why a pair is out.
ENGINES: dict[str, str] = {
    "ddp": "DistributedDataParallel: every rank holds the whole model and all-reduces the gradients in the backward",
    "fsdp": "FSDP2 (fully_shard): parameters, gradients and optimizer state sharded per layer, all-gathered for compute",
    "zero1": "DeepSpeed ZeRO stage 1: optimizer state partitioned across ranks",
    "zero2": "DeepSpeed ZeRO stage 2: optimizer state and gradients partitioned across ranks",
}
MAX_WORLD = 2048
MAX_PER_NODE = 256

MAX_SEED = 2**32 - 1
MAX_LABEL = 200
#: The most steps a run may train: days of the tiny model, and no typo's "forever" (an orphan of
#: `--num-steps 99999999999999999999` trained on after its command was killed).
MAX_STEPS = 10_000_000
#: (lowest, highest) of each integer setting, which validate and the flags' help and errors read:
#: far beyond what a node can train (the memory estimate refuses most of that before launch), but
#: below what would overflow a tensor's shape or a step counter first.
INT_RANGES: dict[str, tuple[int, int]] = {
    "vocab_size": (1, 1 << 20), "hidden_dim": (1, 1 << 16), "num_layers": (1, 1024), "num_heads": (1, 1024),
    "num_kv_heads": (1, 1024), "ffn_multiplier": (1, 64), "batch_size": (1, 1 << 20), "seq_len": (1, 1 << 20),
    "num_steps": (1, MAX_STEPS), "warmup_steps": (0, MAX_STEPS - 1), "profile_steps": (1, MAX_STEPS),
    "seed": (0, MAX_SEED), "nproc_per_node": (1, MAX_PER_NODE), "nnodes": (1, MAX_WORLD),
}
#: (lowest, whether the lowest itself is allowed, highest) of each float setting (finite only).
FLOAT_RANGES: dict[str, tuple[float, bool, float]] = {
    "learning_rate": (0.0, False, 10.0), "weight_decay": (0.0, True, 10.0), "norm_eps": (0.0, False, 1.0),
    "rope_theta": (0.0, False, 1e9),
}


def range_text(name: str) -> str:
    """A setting's range as its help and its error say it: "from 1 to 1024", "> 0 and <= 10"."""
    if name in INT_RANGES:
        return "from {} to {}".format(*INT_RANGES[name])
    low, closed, high = FLOAT_RANGES[name]
    return f"{'>=' if closed else '>'} {low:g} and <= {high:g}"


def in_range(name: str, value: Any) -> bool:
    """Whether `value` is a number of setting `name`'s type inside its range (true/false is none)."""
    if isinstance(value, bool):
        return False
    if name in INT_RANGES:
        low, high = INT_RANGES[name]
        return isinstance(value, int) and low <= value <= high
    low, closed, high = FLOAT_RANGES[name]
    return isinstance(value, (int, float)) and math.isfinite(value) and (low <= value if closed else low < value) \
        and value <= high
#: Control characters, and the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069)
#: that make a terminal show text in another order than it is stored: refused in a label.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class ConfigError(UserError):
    """A user mistake in a run configuration; its message is one line naming the bad value."""


@dataclass
class RunConfigBase:
    """Every field of a run but the profilers' own settings, and what a run config does: RunConfig
    is this with the settings of its adapters added as fields (config_class)."""

    #: the profiler adapters whose settings are this class's fields, which validate checks against
    adapters: ClassVar[tuple[type[ProfilerAdapter], ...]] = ()
    version: str = baseline().name
    # model
    vocab_size: int = 1000
    hidden_dim: int = 512
    num_layers: int = 8
    num_heads: int = 8
    num_kv_heads: int = 4
    ffn_multiplier: int = 4
    norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    # training
    batch_size: int = 8
    seq_len: int = 128
    num_steps: int = 50
    warmup_steps: int = 5
    learning_rate: float = 3e-4
    weight_decay: float = 0.01
    precision: str = "fp32"
    tf32: bool = False
    dataset: str = "patterns"
    # fusion toggles; None means "the version's default"
    qkv_fusion: bool | None = None
    sdpa: bool | None = None
    swiglu_fusion: bool | None = None
    torch_compile: bool | None = None
    compile_mode: str = "default"
    cuda_graph: bool | None = None
    recompute_ffn: bool | None = None
    # environment
    device: str = "auto"
    seed: int = 42
    deterministic: bool = False
    profilers: list[str] = field(default_factory=list)
    profile_steps: int = 3
    # (each profiler's own settings follow the fields, from its adapter: config_class)
    telemetry: bool = True
    fault: str | None = None
    label: str = ""
    # several processes (tinylab/training/parallel.py); None: one process, no torch.distributed
    parallel: str | None = None
    nproc_per_node: int = 1
    nnodes: int = 1
    rdzv_endpoint: str | None = None  # HOST:PORT of the first node, when nnodes > 1 outside Slurm

    # ------------------------------------------------------------------ derived
    @property
    def spec(self) -> Version:
        """The version's record in the version table (what it runs, what applies to it)."""
        return TABLE[self.version]

    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads

    @property
    def ffn_dim(self) -> int:
        return self.ffn_multiplier * self.hidden_dim

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes

    @property
    def graph_warmup_iters(self) -> int:
        """The eager warm-up steps a graphed run trains before its capture: the trainer runs them,
        the profilers' windows and the roofline's step count start after them. (Of the engines,
        only DDP may graph.)"""
        return DDP_GRAPH_WARMUP_ITERS if self.parallel == "ddp" else GRAPH_WARMUP_ITERS

    @property
    def use_amp(self) -> bool:
        return self.precision != "fp32"

    def toggle(self, name: str) -> bool:
        """Effective value of a fusion toggle for this version (False where unsupported)."""
        value = getattr(self, name)
        supported = TOGGLES[name]
        if self.version not in supported:
            return False
        if value is None and name == "cuda_graph" and self._graph_blocked():
            return False
        if value is None and name == "sdpa" and self.spec.strict_fp32_sdpa:
            # Strict fp32 forces Triton's dots to IEEE fp32 (no tensor cores), where torch's SDPA is
            # faster (H200, seq 128, one bench run: 6.35 vs 6.62 ms a step); otherwise our flash kernel wins.
            return self.precision == "fp32" and not self.tf32
        return supported[self.version] if value is None else bool(value)

    def _graph_blocked(self) -> str | None:
        """Why a whole-step graph cannot run with this config (None when it can)."""
        if self.precision == "fp16":
            return "--cuda-graph supports fp32 and bf16, not fp16 (its loss scaler syncs the host)"
        if self.fault == "unsynced-timing":
            return "fault 'unsynced-timing' times phases, which a graph replay does not have: add --no-cuda-graph"
        for adapter in self.adapters:  # a profiler that needs the eager step (its adapter says why)
            blocked = adapter.graph_blocked(self) if adapter.name in self.profilers else None
            if blocked:
                return blocked
        if self.parallel in ("fsdp", "zero1", "zero2"):
            return (f"--parallel {self.parallel} gathers and partitions outside the step a graph would replay: "
                    "add --no-cuda-graph, or use --parallel ddp")
        if self.parallel == "ddp" and self.world_size > 1:
            # measured on 4 H100s (torch 2.11, NCCL 2.28.9): the graphed ranks train, then never leave
            # their process group (docs/scale-out.md)
            return ("a whole-step graph of several DDP ranks trains but its ranks never shut down their process "
                    "group: add --no-cuda-graph (one rank, --nproc-per-node 1, may graph)")
        if self.fault == "straggler":
            return "fault 'straggler' delays one rank's forward from the host, which a graph replay skips: add --no-cuda-graph"
        return None

    def resolved(self) -> "RunConfig":
        """A copy with every toggle made explicit, as stored in config.json.

        An unset `cuda_graph` stays unset: its default depends on the device the trainer finds
        (graphs on GPUs only), and the trainer records the value it used in its start event.
        """
        out = dataclasses.replace(self, **{f.name: list(getattr(self, f.name)) for f in dataclasses.fields(self)
                                           if isinstance(getattr(self, f.name), list)})
        for name in TOGGLES:
            if name == "cuda_graph" and self.cuda_graph is None and TOGGLES[name].get(self.version):
                continue
            setattr(out, name, self.toggle(name))
        return out

    # ------------------------------------------------------------- validation
    def validate(self) -> "RunConfig":
        """Raise ConfigError (one line, naming the value and what is allowed) on bad input.

        Every value the trainer would choke on is refused here (types, finite floats, the seed's
        range, a profiler named twice, control characters in the label): flags, the lab's form,
        exercise presets and a hand-edited config.json all pass through it.
        """
        if not isinstance(self.version, str) or self.version not in VERSIONS:
            raise ConfigError(f"unknown version {self.version!r}: choose one of {', '.join(VERSIONS)}")
        for name in ("vocab_size", "hidden_dim", "num_layers", "num_heads", "num_kv_heads", "ffn_multiplier",
                     "batch_size", "seq_len", "num_steps", "warmup_steps", "profile_steps"):
            if not in_range(name, getattr(self, name)):
                raise ConfigError(f"{_flag(name)} must be an integer {range_text(name)}, got {getattr(self, name)!r}")
        if self.warmup_steps >= self.num_steps:
            raise ConfigError(
                f"--warmup-steps ({self.warmup_steps}) must be smaller than --num-steps ({self.num_steps})"
            )
        if self.hidden_dim % self.num_heads:
            raise ConfigError(
                f"--num-heads {self.num_heads} must divide --hidden-dim {self.hidden_dim}"
            )
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(
                f"--num-kv-heads {self.num_kv_heads} must divide --num-heads {self.num_heads}"
            )
        if self.head_dim % 2:
            raise ConfigError(
                f"head dimension {self.head_dim} (= hidden {self.hidden_dim} / heads {self.num_heads})"
                " must be even for RoPE"
            )
        dims = self.spec.flash_head_dims
        if dims and self.head_dim not in dims:
            raise ConfigError(
                f"{self.version}'s flash-attention kernel needs a head dimension of "
                f"{', '.join(map(str, dims[:-1]))} or {dims[-1]}; hidden {self.hidden_dim} / heads {self.num_heads} gives {self.head_dim}"
            )
        for name in FLOAT_RANGES:
            if not in_range(name, getattr(self, name)):
                raise ConfigError(f"{_flag(name)} must be a finite number {range_text(name)}, got {getattr(self, name)!r}")
        if not in_range("seed", self.seed):
            raise ConfigError(f"--seed must be an integer {range_text('seed')} (2**32 - 1), got {self.seed!r}")
        for name in ("tf32", "deterministic", "telemetry"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{_flag(name)} must be true or false, got {getattr(self, name)!r}")
        for name in TOGGLES:
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{_flag(name)} must be true, false or unset, got {getattr(self, name)!r}")
        if not isinstance(self.label, str) or len(self.label) > MAX_LABEL or _CONTROL.search(self.label):
            raise ConfigError(f"--label must be text of at most {MAX_LABEL} characters without control characters "
                              "or direction overrides, "
                              f"got {self.label!r}"[:200])
        if not isinstance(self.precision, str) or self.precision not in PRECISIONS:
            raise ConfigError(f"unknown precision {self.precision!r}: choose one of {', '.join(PRECISIONS)}")
        if not isinstance(self.dataset, str) or self.dataset not in DATASETS:
            raise ConfigError(f"unknown dataset {self.dataset!r}: choose one of {', '.join(DATASETS)}")
        index = re.fullmatch(r"cuda:(\d{1,9})", self.device) if isinstance(self.device, str) else None
        if not isinstance(self.device, str) or (self.device not in DEVICES and not (index and int(index[1]) < MAX_PER_NODE)):
            raise ConfigError(f"unknown device {self.device!r}: choose one of {', '.join(DEVICES)} or cuda:N "
                              f"(N from 0 to {MAX_PER_NODE - 1})"[:200])
        if not isinstance(self.compile_mode, str) or self.compile_mode not in COMPILE_MODES:
            raise ConfigError(
                f"unknown compile mode {self.compile_mode!r}: choose one of {', '.join(COMPILE_MODES)}"
            )
        for name, supported in TOGGLES.items():
            if getattr(self, name) and self.version not in supported:
                raise ConfigError(
                    f"{_flag(name)} does not apply to {self.version}: it is a toggle of"
                    f" {', '.join(supported)}"
                )
        if self.cuda_graph and self._graph_blocked():
            raise ConfigError(self._graph_blocked())
        if not isinstance(self.profilers, list):
            raise ConfigError(f"--profile takes tool names, got {self.profilers!r}")
        kinds = {a.name: a.kind for a in self.adapters}
        for i, prof in enumerate(self.profilers):
            if not isinstance(prof, str) or prof not in kinds:
                raise ConfigError(f"unknown profiler {prof!r}: choose from {', '.join(kinds)}")
            if prof in self.profilers[:i]:
                raise ConfigError(f"profiler {prof!r} is asked for twice: name each tool once")
        self._validate_tools()
        wrappers = [p for p in self.profilers if kinds[p] != IN_PROCESS]
        if len(wrappers) > 1:
            raise ConfigError(
                f"only one external profiler can wrap a run, got {', '.join(wrappers)}"
            )
        self._validate_parallel()
        if self.fault is not None:
            if not isinstance(self.fault, str) or self.fault not in FAULTS:
                raise ConfigError(f"unknown fault {self.fault!r}: choose one of {', '.join(FAULTS)}")
            if self.version not in FAULTS[self.fault]:
                raise ConfigError(
                    f"fault {self.fault!r} applies to {', '.join(FAULTS[self.fault])}, not {self.version}"
                )
            if self.fault == "straggler" and self.world_size < 2:
                raise ConfigError("fault 'straggler' slows one rank of several: add --nproc-per-node 2 (or more)")
        return self

    def _validate_parallel(self) -> None:
        for name in ("nproc_per_node", "nnodes"):
            if not in_range(name, getattr(self, name)):
                raise ConfigError(f"{_flag(name)} must be an integer {range_text(name)}, got {getattr(self, name)!r}")
        if self.world_size > MAX_WORLD:
            raise ConfigError(f"--nproc-per-node x --nnodes is {self.world_size} ranks; tinylab runs at most {MAX_WORLD}")
        if self.parallel is None:
            if self.world_size > 1:
                raise ConfigError(f"{self.world_size} processes need an engine: --parallel {'|'.join(ENGINES)}")
            if self.rdzv_endpoint is not None:
                raise ConfigError("--rdzv-endpoint applies to runs of several nodes (--nnodes 2 or more)")
            return
        if not isinstance(self.parallel, str) or self.parallel not in ENGINES:
            raise ConfigError(f"unknown engine {self.parallel!r}: choose one of {', '.join(ENGINES)}")
        why = ENGINE_LIMITS.get((self.parallel, self.version))
        if why:
            raise ConfigError(f"--parallel {self.parallel} cannot train {self.version}: {why}; use --parallel ddp")
        if self.precision == "fp16" and self.parallel != "ddp":
            raise ConfigError(f"--parallel {self.parallel} with fp16 would need its own loss scaling: use bf16 or fp32")
        if self.world_size > 1:
            limits = {a.name: a.rank_limit for a in self.adapters if a.rank_limit}
            for prof in self.profilers:
                if prof in limits:
                    raise ConfigError(f"--profile {prof} cannot follow {self.world_size} ranks: {limits[prof]}; "
                                      "profile a run of --nproc-per-node 1")
        if isinstance(self.device, str) and re.fullmatch(r"cuda:\d+", self.device) and self.nproc_per_node > 1:
            raise ConfigError(f"--device {self.device} names one GPU, but each of {self.nproc_per_node} ranks takes "
                              "the GPU of its local rank: use --device cuda")
        if self.rdzv_endpoint is not None:
            # a host name or address, never something torchrun would read as a flag (`--help:1`)
            endpoint = re.fullmatch(r"(?:[A-Za-z0-9][A-Za-z0-9.\-_]*|\[[0-9A-Fa-f:.]+\]):(\d{1,5})", self.rdzv_endpoint) \
                if isinstance(self.rdzv_endpoint, str) else None
            if endpoint is None or not 1 <= int(endpoint.group(1)) <= 65535:
                raise ConfigError(f"--rdzv-endpoint must be HOST:PORT, the first node's name or address and a port "
                                  f"from 1 to 65535, got {self.rdzv_endpoint!r}"[:200])
            if self.nnodes == 1:
                raise ConfigError("--rdzv-endpoint applies to runs of several nodes (--nnodes 2 or more)")

    def _validate_tools(self) -> None:
        """Each profiler setting's value, then the settings of tools the run does not use (each
        must be its default), then what each tool the run uses refuses (its config_problem)."""
        settings = [s for a in self.adapters for s in a.settings]
        for setting in settings:
            problem = setting.problem(getattr(self, setting.name))
            if problem:
                raise ConfigError(problem)
        for setting in settings:
            problem = None if setting.tool in self.profilers else setting.unused(getattr(self, setting.name))
            if problem:
                raise ConfigError(problem)
        for adapter in self.adapters:
            problem = adapter.config_problem(self) if adapter.name in self.profilers else None
            if problem:
                raise ConfigError(problem)

    def check_device(self, device_type: str) -> "RunConfig":
        """The rules that depend on the device the run will use ("cpu" or "cuda").

        Shared by the lab's form, the CLI's pre-launch check and the trainer (which applies them to
        the device it really got), so nothing the trainer refuses can be launched.
        """
        if device_type != "cuda" and self.cuda_graph:
            raise ConfigError("--cuda-graph needs a GPU; drop it or use --device cuda")
        return self

    def parameter_count(self) -> int:
        """Parameters of the model (every version has the same ones: q/k/v/o, gate/up/down, norms,
        the tied embedding)."""
        d, hd = self.hidden_dim, self.head_dim
        per_layer = d * self.num_heads * hd * 2 + d * self.num_kv_heads * hd * 2 + 3 * d * self.ffn_dim + 2 * d
        return self.vocab_size * d + self.num_layers * per_layer + d

    def memory_floor_parts(self) -> dict[str, int]:
        """Lower bounds, in bytes, on what one rank's training holds at once, by what holds it:

        - weights: fp32 weights, gradients and AdamW's two moments (16 bytes a parameter);
        - activations: what every version keeps for the backward (about 10 hidden-sized and 3
          ffn-sized fp32 values a token and layer);
        - logits: the loss's [batch x seq, vocab] fp32 tensors: in the backward of v1-v3's
          cross-entropy the log-probabilities it saved, their gradient and the logits' gradient
          (3 copies); v4's fused cross-entropy (Version.fused_loss) works in place on the logits (1 copy);
        - attention: eager attention (v1, v2 without SDPA) saves each layer's fp32 [batch, heads,
          seq, seq] softmax, and the backward of the last layer holds that softmax's gradient and
          its input's besides (layers + 2 copies): the term that grows with the square of --seq-len.
        """
        tokens = self.batch_size * self.seq_len
        element = 4 if self.precision == "fp32" else 2
        eager = self.spec.attends_eagerly(self.toggle("sdpa"))
        return {
            "weights": 16 * self.parameter_count(),
            "activations": 4 * tokens * self.num_layers * (10 * self.hidden_dim + 3 * self.ffn_dim),
            "logits": tokens * self.vocab_size * (element if self.spec.fused_loss else 3 * 4),
            "attention": (self.num_layers + 2) * self.batch_size * self.num_heads * self.seq_len ** 2 * 4 if eager else 0,
        }

    def memory_floor_bytes(self) -> int:
        """A lower bound on the memory one rank's training needs (memory_floor_parts): a run above it
        cannot fit."""
        return sum(self.memory_floor_parts().values())

    def check_fits(self, available_bytes: int | None, where: str) -> "RunConfig":
        """Refuse, from the estimate, a model that cannot fit in `available_bytes` of `where`, naming
        what takes most of it and the flags that shrink that."""
        parts = self.memory_floor_parts()
        need = sum(parts.values())
        if available_bytes and need > available_bytes:
            largest = max(parts, key=parts.__getitem__)
            what, fix = {
                "weights": (f"{self.parameter_count():,} parameters", "fewer --num-layers, a smaller --hidden-dim "
                            "or --vocab-size"),
                "activations": (f"activations of {self.num_layers} layers x {self.batch_size * self.seq_len:,} tokens",
                                "a smaller --batch-size or --seq-len, or fewer --num-layers"),
                "logits": (f"the loss's logits, {self.batch_size * self.seq_len:,} tokens x a vocabulary of "
                           f"{self.vocab_size:,}", "a smaller --vocab-size, --batch-size or --seq-len"),
                "attention": (f"eager attention's [batch, heads, seq, seq] scores at seq {self.seq_len:,}",
                              "a smaller --seq-len or --batch-size, or attention that keeps no scores "
                              "(--version v2 --sdpa, v3, v4)"),
            }[largest]
            raise ConfigError(
                f"this run needs at least {need / 2**30:,.1f} GiB ({parts[largest] / 2**30:,.1f} GiB of it {what}) and "
                f"{where} has {available_bytes / 2**30:,.1f} GiB: use {fix}")
        return self

    # ----------------------------------------------------------- (de)serialise
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(f"unknown config key {unknown[0]!r}")
        return cls(**data)

    @classmethod
    def read(cls, data: Any) -> "RunConfig | None":
        """The typed view of a config a run folder holds (its config.json, or what its start event
        says ran): keys it lacks take their defaults (a run from before a setting existed ran with
        the default), and None when it is not a valid config (missing, damaged or foreign: every
        config tinylab wrote names its version)."""
        if not isinstance(data, dict) or "version" not in data or set(data) - {f.name for f in dataclasses.fields(cls)}:
            return None
        try:
            return cls(**data).validate()
        except (ConfigError, TypeError, ValueError, AttributeError):
            return None

    @classmethod
    def from_json_file(cls, path: str) -> "RunConfig":
        """A config.json (the trainer's and the supervisor's input): bounded, never through a link."""
        from tinylab.core.safeio import read_json

        data = read_json(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path} holds a {type(data).__name__}, not an object")
        return cls.from_dict(data)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def env_defaults(profilers: list[str], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings of the run's `profilers` whose TINYLAB_* variable is set (ENV_DEFAULTS), parsed
    into their field's type: the faces (flags, the lab's form, exercise steps) put them under what
    the learner chose when they build a config. A variable for a tool the run does not use is left
    alone, as the tool would have; a bad value is a one-line error naming the variable. The
    variable is read here, never by the trainer: from then on the value lives in config.json, so
    two runs that differ by one are told apart by `show` and `compare`."""
    environ = os.environ if environ is None else environ
    found: dict[str, Any] = {}
    for setting in registry.settings():
        raw = environ.get(setting.env, "").strip() if setting.env else ""
        if not raw or setting.tool not in profilers:
            continue
        try:
            found[setting.name] = setting.parse(raw)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return found


def config_class(adapters: Sequence[type[ProfilerAdapter]]) -> type[RunConfigBase]:
    """The run config of these profilers: RunConfigBase's fields and, after them, each adapter's
    settings (Setting.name, its config.json key), which validate checks as each tool declares.
    RunConfig below is the registry's; a test that registers a made-up tool builds its own."""
    settings = [(s.name, s.annotation, s.config_field()) for a in adapters for s in a.settings]
    return dataclasses.make_dataclass("RunConfig", settings, bases=(RunConfigBase,),
                                      namespace={"adapters": tuple(adapters), "__module__": __name__,
                                                 "__doc__": "One run's configuration: RunConfigBase's fields and "
                                                            "the settings of `adapters`."})


RunConfig = config_class(registry.ADAPTERS)
#: The profilers, in the registry's order.
PROFILERS = tuple(a.name for a in RunConfig.adapters)
#: Profilers that run inside the trainer (hooks); the others wrap its process, one at a time.
IN_PROCESS_PROFILERS = tuple(a.name for a in RunConfig.adapters if a.kind == IN_PROCESS)
#: The settings an environment variable may default, and its variable (env_defaults).
ENV_DEFAULTS: dict[str, str] = {s.name: s.env for a in RunConfig.adapters for s in a.settings if s.env}
#: Which profiler each of those settings is for: `show` leaves out those of tools a run did not use.
PROFILER_SETTINGS: dict[str, str] = {s.name: s.tool for a in RunConfig.adapters for s in a.settings if s.env}

"""The model versions, one record each in one table: what a version is, what it runs and what
applies to it. Whatever depends on the version asks its record (RunConfig's validation and
toggles, models.build_model, the trainer, the anatomy's plans, the bench, the advisor), so a new
version is a record here and a model file in models/; tests/core/test_version_table.py registers a
made-up fifth one and shows which code paths then need no change.

Free of torch (a record names its model class, models.build_model imports it), so that the CLI's
help and the Lab's form read the table for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, TypeVar


@dataclass(frozen=True)
class Version:
    """One model version. Its name is what --version takes and what runs record."""

    name: str
    #: one line: the Lab's list of versions and the CLI's help
    description: str
    #: its nn.Module as "module:Class" (models.build_model imports it)
    model: str
    #: whether its step launches Triton kernels of kernels/ (on a CPU, in Triton's interpreter)
    triton: bool = False
    #: its fusion toggles and each one's default, in the order the CLI and the Lab list them
    toggles: Mapping[str, bool] = field(default_factory=dict)
    #: the teaching faults it can be given (FAULT_NAMES)
    faults: tuple[str, ...] = ()
    #: engines (--parallel) that cannot train it, and why
    engine_limits: Mapping[str, str] = field(default_factory=dict)
    #: whether its attention, where SDPA does not replace it, is eager: it keeps each layer's
    #: [batch, heads, seq, seq] softmax for the backward
    eager_attention: bool = False
    #: the head dimensions its flash-attention kernel supports (empty: any the model allows)
    flash_head_dims: tuple[int, ...] = ()
    #: whether its loss is a fused cross-entropy working in place on the logits (one fp32 copy in
    #: the backward instead of three: RunConfig.memory_floor_parts)
    fused_loss: bool = False
    #: its AdamW: "torch" (torch's default, per tensor), "fused" (torch's fused kernel on a GPU),
    #: "flat" (its own kernel over one flat buffer, models/flat_adamw.py)
    optimizer: str = "fused"
    #: whether an unset sdpa is on exactly in strict fp32 (no TF32), where Triton's dots lose the
    #: tensor cores and torch's SDPA is faster than its own flash kernel
    strict_fp32_sdpa: bool = False
    #: toggles whose other value launches other Triton kernels: the anatomy plans each one flipped
    planned_toggles: tuple[str, ...] = ()
    #: whether this version with its fusions, compiled and graphed, is the fastest step PyTorch
    #: alone makes: the bench's peer, and what the advisor offers an eager PyTorch step
    peer: bool = False
    #: the version that fuses what this one still launches as chains of small kernels
    fused_into: str | None = None

    def attends_eagerly(self, sdpa: bool) -> bool:
        """Whether a run of this version keeps eager attention's scores, `sdpa` being the run's
        sdpa toggle (v1 always, v2 unless SDPA, v3 and v4 never)."""
        return self.eager_attention and not (sdpa and "sdpa" in self.toggles)

    @property
    def fusions(self) -> tuple[str, ...]:
        """Its toggles that are on by default (v2's QKV, SDPA and SwiGLU fusions): the advisor
        sets them explicitly when it moves a run to this version (a config of another version
        resolved them off)."""
        return tuple(name for name, on in self.toggles.items() if on)


#: The teaching faults, in the order --fault's help and the errors list them. They are described
#: where they are implemented (tinylab/training/faults.py); a record says which apply to it.
FAULT_NAMES = ("missing-init", "non-contiguous", "unsynced-timing", "naive-triton-swiglu", "detached-backward",
               "straggler")
#: The faults that are no Triton kernel's mistake (the others apply to the Triton versions only).
_EVERY_VERSION_FAULTS = ("missing-init", "unsynced-timing", "straggler")
_FLAT = ("v4 keeps its GEMM weights as views of one flat buffer and updates them with its own AdamW kernel "
         "(models/flat_adamw.py)")
_ZERO = _FLAT + "; ZeRO partitions the optimizer it is given, torch's AdamW over the parameters"

#: Every version by name, in the order the faces list them; the first is the baseline.
TABLE: dict[str, Version] = {v.name: v for v in (
    Version(
        "v1", "PyTorch baseline: separate q/k/v and gate/up GEMMs, eager attention, eager RMSNorm/RoPE",
        "models.v1_baseline:TinyLlamaV1",
        faults=_EVERY_VERSION_FAULTS, eager_attention=True, optimizer="torch",
    ),
    Version(
        "v2", "PyTorch fused: toggles for QKV fusion, SDPA flash attention, SwiGLU fusion, torch.compile",
        "models.v2_fused:TinyLlamaV2",
        toggles={"qkv_fusion": True, "sdpa": True, "swiglu_fusion": True, "torch_compile": False, "cuda_graph": False},
        faults=_EVERY_VERSION_FAULTS, eager_attention=True, peer=True,
    ),
    Version(
        "v3", "Triton kernels: RMSNorm, RoPE, SwiGLU and flash attention, each with its own backward",
        "models.v3_triton:TinyLlamaV3",
        triton=True, toggles={"cuda_graph": False, "recompute_ffn": False}, faults=FAULT_NAMES,
        flash_head_dims=(16, 32, 64, 128), fused_into="v4",
    ),
    Version(
        "v4", "Ultra: v3 plus fused residual+RMSNorm, RoPE+attention off the fused QKV, fused "
              "cross-entropy, fused AdamW+bf16 cast, whole-step graph",
        "models.v4_ultra:TinyLlamaV4",
        triton=True, toggles={"sdpa": False, "cuda_graph": True, "recompute_ffn": False}, faults=FAULT_NAMES,
        engine_limits={"fsdp": _FLAT + "; FSDP2 turns every parameter into a sharded DTensor of its own",
                       "zero1": _ZERO, "zero2": _ZERO},
        flash_head_dims=(16, 32, 64, 128), fused_loss=True, optimizer="flat", strict_fp32_sdpa=True,
        planned_toggles=("sdpa", "recompute_ffn"),
    ),
)}


def baseline() -> Version:
    """The version a config names when it names none, and the one speedups are measured against."""
    return next(iter(TABLE.values()))


def lookup(name: object) -> Version | None:
    """The record of a version named in a run's stored config, None when the name is none of the
    table's (a damaged or foreign config.json, or no config at all)."""
    return TABLE.get(name) if isinstance(name, str) else None


def first(**fields: Any) -> Version:
    """The first version whose fields have these values (`first(peer=True)`, `first(triton=True)`)."""
    return next(v for v in TABLE.values() if all(getattr(v, k) == want for k, want in fields.items()))


K = TypeVar("K")
V = TypeVar("V")


class Derived(Mapping[K, V]):
    """A mapping read off the table each time it is asked: RunConfig's VERSIONS, TOGGLES, FAULTS
    and ENGINE_LIMITS are views of the records, never copies, so a version registered in TABLE
    (the made-up one of tests/core/test_version_table.py) is in every one of them."""

    def __init__(self, derive: Callable[[], dict[K, V]]) -> None:
        self._derive = derive

    def __getitem__(self, key: K) -> V:
        return self._derive()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._derive())

    def __len__(self) -> int:
        return len(self._derive())

    def __repr__(self) -> str:
        return repr(self._derive())


def _toggles() -> dict[str, dict[str, bool]]:
    names = dict.fromkeys(name for v in TABLE.values() for name in v.toggles)  # first seen first
    return {name: {v.name: v.toggles[name] for v in TABLE.values() if name in v.toggles} for name in names}


#: version -> its description
VERSIONS: Mapping[str, str] = Derived(lambda: {v.name: v.description for v in TABLE.values()})
#: Fusion toggles, the versions that honour them, and each version's default.
TOGGLES: Mapping[str, dict[str, bool]] = Derived(_toggles)
#: fault -> the versions it applies to
FAULTS: Mapping[str, tuple[str, ...]] = Derived(
    lambda: {f: tuple(v.name for v in TABLE.values() if f in v.faults) for f in FAULT_NAMES})
#: (engine, version) -> why that engine cannot train that version
ENGINE_LIMITS: Mapping[tuple[str, str], str] = Derived(
    lambda: {(engine, v.name): why for v in TABLE.values() for engine, why in v.engine_limits.items()})

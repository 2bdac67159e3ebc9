"""The Lab form's fields: their labels and help lines, the profiler boxes' rows, and the fields a
check's message names (lab.py flags those red, so the form never re-implements a rule)."""

from __future__ import annotations

import re

from tinylab.config import ENGINE_LIMITS, ENGINES, VERSIONS
from tinylab.service import profilers

#: Profiler boxes a row of the form holds.
PROFILERS_A_ROW = 4

#: Form fields: RunConfig attribute -> label.
NUMBERS = {
    "batch_size": "batch",
    "seq_len": "seq",
    "hidden_dim": "hidden",
    "num_layers": "layers",
    "num_heads": "heads",
    "num_kv_heads": "kv",
    "num_steps": "steps",
    "warmup_steps": "warm-up",
    "nproc_per_node": "ranks",
}
NUMBER_HELP = {
    "batch_size": "sequences per step",
    "seq_len": "tokens per sequence",
    "hidden_dim": "model width; heads must divide it",
    "num_layers": "transformer blocks",
    "num_heads": "attention heads; must divide hidden",
    "num_kv_heads": "key/value heads (grouped-query attention); must divide heads",
    "num_steps": "training steps",
    "warmup_steps": "steps left out of the summary's medians; fewer than steps",
    "nproc_per_node": "processes torchrun starts, one a GPU (gloo ranks on a CPU); above 1 trains under the engine",
}
TOGGLE_LABELS = {
    "qkv_fusion": "QKV",
    "sdpa": "SDPA",
    "swiglu_fusion": "SwiGLU",
    "torch_compile": "compile",
    "cuda_graph": "graph",
    "recompute_ffn": "recomp",
}
_FLAG = re.compile(r"--([a-z][a-z-]*)")


def engine_help(engine: object) -> str:
    """What an engine does and the versions it trains (docs/scale-out.md)."""
    if engine not in ENGINES:
        return "one process (ranks above 1 train under ddp); space opens the list"
    out = [v for v in VERSIONS if (engine, v) in ENGINE_LIMITS]
    return f"{engine}: {ENGINES[engine]}" + (f"; not {', '.join(out)} (its own flat optimizer)" if out else "")


def flags_in(message: str) -> set[str]:
    """RunConfig fields named as --flags in a ConfigError message."""
    return {m.replace("-", "_") for m in _FLAG.findall(message)}


def profiler_rows() -> list[tuple[str, ...]]:
    """The form's rows of profiler boxes: every registered tool in the registry's order (a tool
    added there gets a box), PROFILERS_A_ROW a row."""
    names = profilers.names()
    return [names[i:i + PROFILERS_A_ROW] for i in range(0, len(names), PROFILERS_A_ROW)]

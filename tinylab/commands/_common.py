"""Helpers shared by the sub-commands (argument snippets, run resolution, printing)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_runs_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs-dir", default=None,
                   help="run store folder (default: $TINYLAB_RUNS_DIR or ./tinylab_runs)")


def store_from(args: argparse.Namespace):
    from tinylab.runs.store import RunStore

    return RunStore(args.runs_dir)


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def require_device(cfg) -> None:
    """One-line error before launch when the config asks for a GPU this machine lacks."""
    from tinylab.config import ConfigError

    if not cfg.device.startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(f"--device {cfg.device} requested but no CUDA/ROCm GPU is visible to torch")

"""rocprofv3 (ROCprofiler-SDK): kernel dispatch trace + per-kernel stats on AMD GPUs.

Flags are the ones rocprofv3.py defines (FORMATS.md 1.2). `--stats` only adds statistics for
domains that are traced, so it needs `--kernel-trace`. `--output-format csv` is always asked
for: ROCm 7 switched the default to the rocpd database, and the long option works on 6.x and
7.x alike. Output lands in <out>/<hostname>/<pid>_kernel_{stats,trace}.csv, one set per process
(PyTorch may start helper processes), which collect merges.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from tinylab.errors import UserError
from tinylab.profilers.base import WrapperAdapter

if TYPE_CHECKING:
    from tinylab.config import RunConfig

OUTPUT_FORMATS = ("csv", "json", "pftrace", "otf2", "rocpd")
EXTRA_TRACES = {"hip": "--hip-trace", "memory-copy": "--memory-copy-trace"}


class Rocprofv3Adapter(WrapperAdapter):
    name = "rocprofv3"
    executable = "rocprofv3"
    vendor = "amd"
    description = "AMD kernel trace and per-kernel stats (ROCprofiler-SDK rocprofv3)"
    fix = "install ROCm >= 6.2 (rocprofiler-sdk) and put /opt/rocm/bin on PATH; needs an AMD GPU (/dev/kfd)"

    def __init__(self, traces: tuple[str, ...] = (), output_formats: tuple[str, ...] = ("csv",)):
        for trace in traces:
            if trace not in EXTRA_TRACES:
                raise UserError(f"unknown rocprofv3 trace {trace!r}: choose from {', '.join(EXTRA_TRACES)}")
        for fmt in output_formats:
            if fmt not in OUTPUT_FORMATS:
                raise UserError(f"unknown rocprofv3 output format {fmt!r}: choose from {', '.join(OUTPUT_FORMATS)}")
        self.traces = tuple(traces)
        self.output_formats = ("csv",) + tuple(f for f in output_formats if f != "csv")

    @classmethod
    def from_env(cls) -> "Rocprofv3Adapter":
        """Extra traces and formats from TINYLAB_ROCPROFV3_TRACE ("hip,memory-copy") and
        TINYLAB_ROCPROFV3_FORMAT ("rocpd,pftrace"); the run config has no fields for them."""
        return cls(_env_list("TINYLAB_ROCPROFV3_TRACE"), _env_list("TINYLAB_ROCPROFV3_FORMAT") or ("csv",))

    def wrap_argv(self, out_dir: Path, config: "RunConfig") -> list[str]:
        argv = [self.argv0(), "--kernel-trace", "--stats", "--truncate-kernels"]
        argv += [EXTRA_TRACES[t] for t in self.traces]
        argv += ["--output-format", *self.output_formats, "--output-directory", str(out_dir), "--"]
        return argv


def _env_list(name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in os.environ.get(name, "").split(",") if item.strip())

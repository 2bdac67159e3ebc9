"""rocprof-sys (ROCm Systems Profiler, formerly omnitrace): whole-program trace + timemory tables.

`rocprof-sys-run --profile --trace -o <out> --` (flags from rocprof-sys' argparse.cpp, FORMATS.md 2).
It writes <out>[/<timestamp>]/perfetto-trace-<pid>.proto (open in ui.perfetto.dev) and
wall_clock-<pid>.{json,txt}. With ROCm support each GPU kernel dispatch is a wall_clock entry
named by its kernel, so the kernel table comes from wall_clock-<pid>.json; the Perfetto trace
is read instead only when the `perfetto` package is installed and no wall_clock file exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tinylab.profilers.base import (
    CollectResult,
    WrapperAdapter,
    list_artifacts,
    read_table,
)

if TYPE_CHECKING:
    from tinylab.config import RunConfig


class RocprofSysAdapter(WrapperAdapter):
    name = "rocprof-sys"
    executable = "rocprof-sys-run"
    vendor = "amd"
    description = "AMD whole-program timeline (Perfetto) and per-function/kernel wall-clock tables"
    fix = "install ROCm >= 6.3 with rocprofiler-systems (rocprof-sys-run on PATH); needs an AMD GPU (/dev/kfd)"

    def wrap_argv(self, out_dir: Path, config: "RunConfig") -> list[str]:
        return [self.argv0(), "--profile", "--trace", "-o", str(out_dir), "--"]

    def collect(self, out_dir: Path) -> CollectResult:
        artifacts = list_artifacts(out_dir)
        table, fmt, note = read_table(out_dir)
        traces = [name for name in artifacts if name.endswith(".proto")]
        if traces:
            view = f"open {traces[0]} in https://ui.perfetto.dev for the timeline"
            note = f"{note}; {view}" if note else view
        return CollectResult(artifacts, table, note, fmt)

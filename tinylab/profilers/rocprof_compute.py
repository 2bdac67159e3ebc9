"""rocprof-compute (formerly Omniperf): hardware-counter analysis of AMD kernels.

Profile: `rocprof-compute profile -n tinylab -p <out>/workload --no-roof -- <trainer>` (or
`--roof-only` for roofline ceilings only). With -p the path is used as is, so the workload is
always <out>/workload (FORMATS.md 3). Collect then runs `analyze`: `--list-stats` (kernel and
dispatch lists; also writes pmc_kernel_top.csv) and `--dispatch N --save-dfs` for the longest
dispatch, whose per-panel tables are saved as CSV: the fancy_grid boxes are never parsed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from tinylab.errors import UserError
from tinylab.profilers.base import (
    CollectResult,
    WrapperAdapter,
    list_artifacts,
    read_table,
    run_tool,
)

if TYPE_CHECKING:
    from tinylab.config import RunConfig

WORKLOAD_NAME = "tinylab"
MODES = {"counters": "--no-roof", "roof-only": "--roof-only"}


class RocprofComputeAdapter(WrapperAdapter):
    name = "rocprof-compute"
    executable = "rocprof-compute"
    vendor = "amd"
    description = "AMD per-kernel hardware counters, speed-of-light and roofline (rocprof-compute)"
    fix = "install ROCm >= 6.3 with rocprofiler-compute and its Python requirements; needs an AMD Instinct GPU"

    def __init__(self, mode: str = "counters"):
        if mode not in MODES:
            raise UserError(f"unknown rocprof-compute mode {mode!r}: choose from {', '.join(MODES)}")
        self.mode = mode

    @classmethod
    def from_env(cls) -> "RocprofComputeAdapter":
        """Mode from TINYLAB_ROCPROF_COMPUTE_MODE (counters | roof-only)."""
        return cls(os.environ.get("TINYLAB_ROCPROF_COMPUTE_MODE", "counters").strip() or "counters")

    def wrap_argv(self, out_dir: Path, config: "RunConfig") -> list[str]:
        return [
            self.argv0(), "profile", "-n", WORKLOAD_NAME, "-p", str(out_dir / "workload"), MODES[self.mode], "--",
        ]  # fmt: skip

    def collect(self, out_dir: Path) -> CollectResult:
        from tinylab.analysis.formats.rocprof_compute import (  # pandas: after the run
            find_workload,
            read_roofline,
        )

        workload = find_workload(out_dir / "workload")
        notes = []
        if workload is None:
            return CollectResult(list_artifacts(out_dir), None, f"no rocprof-compute workload under {out_dir}", None)
        if self.executable_path():
            notes += self._analyze(workload, out_dir / "analyze")
        roofline = read_roofline(workload)
        if roofline:
            (out_dir / "roofline.json").write_text(json.dumps(roofline, indent=2), encoding="utf-8")
        table, fmt, note = read_table(workload)
        notes.insert(0, note)
        return CollectResult(list_artifacts(out_dir), table, "; ".join(n for n in notes if n) or None, fmt)

    def _analyze(self, workload: Path, analyze_dir: Path) -> list[str]:
        exe = self.argv0()
        ok, detail = run_tool([exe, "analyze", "-p", str(workload), "--list-stats"], analyze_dir / "list_stats.txt")
        if not ok:
            return [f"analyze --list-stats failed: {detail}"]
        from tinylab.analysis.formats.rocprof_compute import longest_dispatch

        dispatch = longest_dispatch(workload)
        if dispatch is None:
            return []
        tables = analyze_dir / f"dispatch_{dispatch}"
        ok, detail = run_tool(
            [exe, "analyze", "-p", str(workload), "--dispatch", str(dispatch), "--save-dfs", str(tables)],
            analyze_dir / f"dispatch_{dispatch}.txt",
        )
        if not ok:
            return [f"analyze --dispatch {dispatch} failed: {detail}"]
        saved = sorted(tables.glob("*.csv")) if tables.is_dir() else []
        return [f"analyze: {len(saved)} tables for dispatch {dispatch} (the longest) in analyze/{tables.name}/"]

"""Nsight Systems (`nsys`): whole-program timeline on NVIDIA GPUs, kernel summary via `nsys stats`.

`nsys profile -o <out>/report -t cuda,nvtx,osrt --force-overwrite true <trainer>` (FORMATS.md
6.2; nsys takes the program right after its options, without "--"). Collect then runs
`nsys stats --report cuda_gpu_kern_sum --format csv --output <out>/report report.nsys-rep`,
which writes report_cuda_gpu_kern_sum.csv (and report.sqlite); releases before 2023 call the
report `gpukernsum`, so that name is tried next.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tinylab.profilers.base import (
    CollectResult,
    WrapperAdapter,
    list_artifacts,
    read_table,
    run_tool,
)

if TYPE_CHECKING:
    from tinylab.config import RunConfig

REPORT = "report"
KERNEL_REPORTS = ("cuda_gpu_kern_sum", "gpukernsum")


class NsysAdapter(WrapperAdapter):
    name = "nsys"
    executable = "nsys"
    whole_run_table = True
    vendor = "nvidia"
    description = "NVIDIA Nsight Systems: CUDA/NVTX/OS-runtime timeline and kernel summary"
    fix = "install Nsight Systems (CUDA toolkit or nsight-systems package) and put nsys on PATH; needs an NVIDIA GPU"

    def wrap_argv(self, out_dir: Path, config: "RunConfig") -> list[str]:
        return [
            self.argv0(), "profile", "-o", str(out_dir / REPORT), "-t", "cuda,nvtx,osrt", "--force-overwrite", "true",
        ]  # fmt: skip

    def collect(self, out_dir: Path) -> CollectResult:
        reports = sorted(out_dir.glob(f"{REPORT}.nsys-rep")) + sorted(out_dir.glob(f"{REPORT}.qdrep"))
        if not reports:
            return CollectResult(list_artifacts(out_dir), None, f"nsys wrote no {REPORT}.nsys-rep", None)
        failures = []
        for name in KERNEL_REPORTS:
            csv_path = out_dir / f"{REPORT}_{name}.csv"
            if not csv_path.is_file() and self.executable_path():
                ok, detail = run_tool(
                    [self.argv0(), "stats", "--report", name, "--format", "csv", "--output", str(out_dir / REPORT), str(reports[0])],
                    out_dir / f"stats_{name}.log",
                )
                if not ok:
                    failures.append(detail)
                    continue
            if csv_path.is_file():
                table, fmt, note = read_table(csv_path)
                return CollectResult(list_artifacts(out_dir), table, note, fmt)
        note = "nsys stats produced no kernel summary" + (f": {failures[-1]}" if failures else "")
        return CollectResult(list_artifacts(out_dir), None, note, None)

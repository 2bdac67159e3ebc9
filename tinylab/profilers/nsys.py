"""Nsight Systems (`nsys`): whole-program timeline on NVIDIA GPUs, kernel summary via `nsys stats`.

`nsys profile -o <out>/report -t cuda,nvtx,osrt --force-overwrite true <trainer>` (docs/formats.md
6.2; nsys takes the program right after its options, without "--"). On a GPU the trainer marks
each step as an NVTX range (tinylab/core/markers.py), which `-t nvtx` records. Collect runs `nsys stats
--format csv --output <out>/report report.nsys-rep` for `nvtx_pushpop_trace` and `cuda_gpu_trace`
(report_<name>.csv): where the step ranges are there, the kernel table holds the kernels that
started in a measured step, and the profile says how many steps that is. Otherwise it is
cuda_gpu_kern_sum's whole-run summary (releases before 2023 call it `gpukernsum`, tried next).
"""

from __future__ import annotations

from pathlib import Path

from tinylab.core.errors import UserError
from tinylab.profilers.base import (
    RUN,
    CollectResult,
    Config,
    Viewer,
    WrapperAdapter,
    list_artifacts,
    read_table,
    run_tool,
)

REPORT = "report"
KERNEL_REPORTS = ("cuda_gpu_kern_sum", "gpukernsum")
#: The reports that place each kernel in a step: its ranges, and every kernel with its start
STEP_REPORTS = ("nvtx_pushpop_trace", "cuda_gpu_trace")


class NsysAdapter(WrapperAdapter):
    name = "nsys"
    executable = "nsys"
    whole_run_table = True
    vendor = "nvidia"
    description = "NVIDIA Nsight Systems: CUDA/NVTX/OS-runtime timeline and kernel summary"
    fix = "install Nsight Systems (CUDA toolkit or nsight-systems package) and put nsys on PATH; needs an NVIDIA GPU"
    table_steps = RUN
    traces = True
    viewers = (Viewer((".nsys-rep", ".qdrep"), "timeline, in the Nsight Systems GUI or as tables in a terminal:",
                      ("nsys-ui FILE", "nsys stats FILE")),)

    def wrap_argv(self, out_dir: Path, config: Config) -> list[str]:
        return [
            self.argv0(), "profile", "-o", str(out_dir / REPORT), "-t", "cuda,nvtx,osrt", "--force-overwrite", "true",
        ]  # fmt: skip

    def collect(self, out_dir: Path) -> CollectResult:
        reports = sorted(out_dir.glob(f"{REPORT}.nsys-rep")) + sorted(out_dir.glob(f"{REPORT}.qdrep"))
        if not reports:
            return CollectResult(list_artifacts(out_dir), None, f"nsys wrote no {REPORT}.nsys-rep", None)
        ranges, trace = (self._stats(out_dir, reports[0], name)[0] for name in STEP_REPORTS)
        failures = []
        if ranges and trace:
            from tinylab.analysis.formats._base import FormatError  # pandas: after the run
            from tinylab.analysis.formats.nsys import gpu_trace_dispatches, pushpop_ranges
            from tinylab.core.steps import measured_kernels, step_windows

            try:
                windows = step_windows(pushpop_ranges(ranges))
                # the GPU trace is read only when there is a measured step to cut it to
                measured = measured_kernels(*gpu_trace_dispatches(trace), windows) \
                    if any(not warmup for _, warmup, _, _ in windows) else None
            except (FormatError, UserError, ValueError, OSError) as exc:  # the whole-run summary still stands
                measured, failures = None, [f"{trace.name} / {ranges.name}: {exc}"]
            if measured is not None:
                table, steps = measured
                note = f"kernels of the {steps} measured steps (NVTX step ranges; warm-up and start-up left out)"
                return CollectResult(list_artifacts(out_dir), table, note, "nsys-gpu-trace", steps=steps)
        whole = ((f"the step ranges could not be read ({failures[0]})" if failures else
                  "no NVTX step ranges recorded (the trainer marks steps on a GPU only)")
                 + ": the table covers the whole run, warm-up included")
        for name in KERNEL_REPORTS:
            csv_path, failure = self._stats(out_dir, reports[0], name)
            if csv_path is None:
                failures.append(failure)
                continue
            table, fmt, note = read_table(csv_path)
            return CollectResult(list_artifacts(out_dir), table, "; ".join(filter(None, [note, whole])) if table is not None
                                 else note, fmt)
        note = "nsys stats produced no kernel summary" + (f": {failures[-1]}" if failures else "")
        return CollectResult(list_artifacts(out_dir), None, note, None)

    def _stats(self, out_dir: Path, report: Path, name: str) -> tuple[Path | None, str]:
        """<out>/report_<name>.csv, written by `nsys stats` unless it is there; (None, why) without it."""
        csv_path = out_dir / f"{REPORT}_{name}.csv"
        if not csv_path.is_file() and self.executable_path():
            ok, detail = run_tool(
                [self.argv0(), "stats", "--report", name, "--format", "csv", "--output", str(out_dir / REPORT), str(report)],
                out_dir / f"stats_{name}.log",
            )
            if not ok:
                return None, detail
        return (csv_path, "") if csv_path.is_file() else (None, f"no {csv_path.name}")

"""rocprof-compute (Omniperf in ROCm 6.2): hardware counters, speed-of-light and roofline of AMD kernels.

Profile: `<exe> profile -n tinylab -p <out>/workload [--no-roof | --roof-only] [-k ...] [-d ...]
--device <gpu> -- <trainer>`, exe `omniperf` on 6.2 and `rocprof-compute` from 6.3. With -p the
path is used as is, so the workload is always <out>/workload (docs/rocm-tools.md). The program
is given as the interpreter's absolute path: 6.2-6.4 refuse an argv[0] that is not a file.

rocprof-compute runs the program once per group of hardware counters: 15-25 times on MI200/MI300
(the perfmon/*.txt files it writes first, one a run). It never tells the program which run it is
in, so the trainer counts its own starts (tinylab/runs/passes.py): pass 1 is the run's record, the
other passes train only the warm-up and a few steps, their events kept apart. `--device` is the
run's GPU; rocprof-compute uses it only for its roofline microbenchmark. The run's
`profile_kernels` (--profile-kernel, an exercise step's preset) become -k, rocprof's kernel filter,
so every pass collects the kernels that matter only; `--rocprof-compute-dispatch 20:40` (-d)
narrows them to a dispatch range.

Collect then runs `analyze`: `--list-stats` (kernel and dispatch lists; also writes
pmc_kernel_top.csv) and, for the longest dispatch of each kernel worth it (the top kernel of each
name in the filter, the top GEMM, the top kernel: analysis_targets), `--dispatch N --save-dfs
analyze/dispatch_N`, whose per-panel tables (2.1_Speed-of-Light.csv among them) are saved as CSV:
the fancy_grid boxes are never parsed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from tinylab.profilers import rocm_releases as rr
from tinylab.profilers.base import CollectResult, list_artifacts, read_table, run_tool
from tinylab.profilers.rocm import Release, RocmToolAdapter, kfd_gpus, release_from_version, release_of_tree

if TYPE_CHECKING:
    from tinylab.config import RunConfig

#: -n: at most 35 characters without "-" or "." (6.x), no "/" (7.0): RocprofComputeFacts.name_forbids
WORKLOAD_NAME = "tinylab"
#: mode -> the profile flag it adds (full: counters and the roofline benchmark)
MODES = {"full": None, "counters": "--no-roof", "roof-only": "--roof-only"}
_VERSION = re.compile(r"version:\s*(\d+\.\d+\.\d+)", re.IGNORECASE)


class RocprofComputeAdapter(RocmToolAdapter):
    name = "rocprof-compute"
    executable = "rocprof-compute"
    executables = ("rocprof-compute", "omniperf")
    probe_args = ("--version",)  # -v/--version on every release (argparse action="version"); -V is --verbose
    table = rr.ROCPROF_COMPUTE
    description = "AMD per-kernel hardware counters, speed-of-light and roofline (rocprof-compute)"
    fix = ("install ROCm >= 6.2 with rocprofiler-compute (omniperf on 6.2) and its Python requirements; "
           "needs an AMD Instinct GPU")

    def __init__(self, mode: str = "full", dispatches: tuple[str, ...] = ()):
        super().__init__()
        # the names are checked by RunConfig.validate (ROCPROF_COMPUTE_MODES, the dispatch syntax)
        self.mode = mode
        self.dispatches = tuple(dispatches)
        self.kernels: tuple[str, ...] = ()  # the kernel filter of the run it wrapped, for collect

    @classmethod
    def from_config(cls, config: "RunConfig | None") -> "RocprofComputeAdapter":
        """The mode (full | counters | roof-only) and dispatches ("20:40") the run's config asks for;
        the kernel filter is the run's own too (RunConfig.profile_kernels), read when the argv is built."""
        if config is None:
            return cls()
        return cls(config.rocprof_compute_mode, tuple(config.rocprof_compute_dispatch))

    # ------------------------------------------------------------------ release
    def version_from_output(self, output: str) -> str | None:
        m = _VERSION.search(output)
        return m.group(1) if m else None

    def release_from_output(self, path: str, output: str) -> Release | None:
        version = self.version_from_output(output)
        rocm = rr.COMPUTE_TO_ROCM.get(version or "")
        return release_from_version(rocm, f"{Path(path).name} --version ({version})") if rocm else None

    # ------------------------------------------------------------------ argv
    def check(self, config: "RunConfig") -> None:
        self._options(config)
        if self.mode == "roof-only":
            arch = gpu_arch(config.device)
            if arch in self.facts().no_roofline:
                raise self.refuse(f"runs no roofline on MI300 ({arch}): its --roof-only stops with 'Roofline "
                                  "temporarily disabled in MI300'",
                                  "profile the counters (--rocprof-compute-mode full or counters) or use "
                                  "ROCm 6.4 or newer")

    def _options(self, config: "RunConfig") -> list[str]:
        flags = ["--name", "--path", "--device"] + ([MODES[self.mode]] if MODES[self.mode] else [])
        flags += ["--kernel"] if config.profile_kernels else []
        flags += ["--dispatch"] if self.dispatches else []
        return [self.option(flag) for flag in flags]

    def wrap_argv(self, out_dir: Path, config: "RunConfig") -> list[str]:
        self._options(config)
        self.kernels = tuple(config.profile_kernels)
        argv = [self.argv0(), "profile", "-n", WORKLOAD_NAME, "-p", str(out_dir / "workload")]
        argv += [MODES[self.mode]] if MODES[self.mode] else []
        argv += ["-k", *self.kernels] if self.kernels else []
        argv += ["-d", *self.dispatches] if self.dispatches else []
        return argv + ["--device", str(gpu_index(config.device)), "--"]

    def reruns_program(self, out_dir: Path) -> bool:
        return True

    def planned_passes(self, out_dir: Path, arch: str | None) -> int | None:
        """Runs of the program: rocprof-compute's own pass files, written before the first run (exact),
        else this release's count for the GPU (rocm_releases.py; computed from source for 6.3/6.4)."""
        files = list((out_dir / "workload").rglob("perfmon/*.txt"))
        if files:
            return len(files)
        path = self.executable_path()
        release = release_of_tree(path) if path else None
        return self.table[release.key].passes.get((arch or "").split(":")[0]) if release else None

    # ------------------------------------------------------------------ collect
    def collect(self, out_dir: Path) -> CollectResult:
        from tinylab.analysis.formats.rocprof_compute import (  # pandas: after the run
            find_workload,
            read_roofline,
            roofline_disabled,
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
        elif self.mode != "counters":
            notes.append(f"no roofline: {roofline_disabled(workload) or 'no roofline.csv in the workload'}")
        table, fmt, note = read_table(workload)
        notes.insert(0, note)
        return CollectResult(list_artifacts(out_dir), table, "; ".join(n for n in notes if n) or None, fmt)

    def _analyze(self, workload: Path, analyze_dir: Path) -> list[str]:
        exe = self.argv0()
        ok, detail = run_tool([exe, "analyze", "-p", str(workload), "--list-stats"], analyze_dir / "list_stats.txt")
        if not ok:
            return [f"analyze --list-stats failed: {detail}"]
        from tinylab.analysis.formats.rocprof_compute import SOL_TABLE, analysis_targets
        from tinylab.analysis.names import short_name

        done, notes = [], []
        for dispatch, kernel in analysis_targets(workload, self.kernels):
            tables = analyze_dir / f"dispatch_{dispatch}"  # --save-dfs makes one folder level: analyze/ exists
            ok, detail = run_tool(
                [exe, "analyze", "-p", str(workload), "--dispatch", str(dispatch), "--save-dfs", str(tables)],
                analyze_dir / f"dispatch_{dispatch}.txt",
            )
            if not ok:
                notes.append(f"analyze --dispatch {dispatch} failed: {detail}")
            elif (tables / SOL_TABLE).is_file():
                done.append(f"{dispatch} ({short_name(kernel)})")
        if done:
            notes.insert(0, f"speed-of-light tables ({SOL_TABLE}) in analyze/dispatch_<N>/ for dispatch "
                            + ", ".join(done))
        return notes


def gpu_index(device: str) -> int:
    """The GPU index of a run's device ("cuda:2" -> 2; "cuda", "auto" -> 0, the default device)."""
    index = device.partition(":")[2]
    return int(index) if index.isdigit() else 0


def gpu_arch(device: str) -> str | None:
    """The architecture of the run's GPU as the driver lists it (gfx942), or None when not known."""
    archs = kfd_gpus()
    index = gpu_index(device)
    return archs[index] if index < len(archs) else None

"""rocprof-compute (Omniperf in ROCm 6.2): hardware counters, speed-of-light and roofline of AMD kernels.

Every option comes from the installed tool's own help (`profile --help`, `analyze --help`:
tinylab/profilers/rocm_help.py), and is chosen by its long name: a short flag's meaning moves (`-d` was
--dispatch to 3.9 and is --output-directory from 3.10, ROCm 10.2). Profile: `<exe> profile --name tinylab
(--output-directory | --path) <out>/workload [--no-roof | --roof-only] [--set NAME] [--kernel ...]
[--dispatch ... | --kernel-iteration-range ...] --device <gpu> -- <trainer>`,
exe `omniperf` on 6.2 and `rocprof-compute` from 6.3; --output-directory where listed (3.5+; -p is
deprecated there and gone from 3.7, ROCm 7.14), the workload folder always a fresh one (3.8+ refuse a
non-empty folder without --overwrite, which is passed only if it ever is not). The program is given
as the interpreter's absolute path: 6.2-6.4 refuse an argv[0] that is not a file.

rocprof-compute runs the program once per group of hardware counters: 15-25 times on MI200/MI300
(the perfmon/*.txt files it writes first, one a run), once with a single-pass metric set (`--set`,
3.3+: the run's `profile_set`). It never tells the program which run it is in, so the trainer counts
its own starts (tinylab/runs/passes.py): pass 1 is the run's record, the other passes train only the
warm-up and a few steps, their events kept apart. `--device` is the run's GPU; rocprof-compute uses
it only for its roofline microbenchmark. The run's `profile_kernels` (--profile-kernel, an exercise
step's preset) become -k, rocprof's kernel filter, so every pass collects the kernels that matter
only; `--rocprof-compute-dispatch 20:40` narrows them.

Dispatches are numbered from 0 in tinylab on every release, as rocprof-compute did to 3.9 ("20:40" is
dispatches 20 to 39). 3.10 numbers them from 1 and takes rocprofv3's `--kernel-iteration-range` syntax
(inclusive, 1-based: "[21-40]"), so where profile's help lists --kernel-iteration-range the range is
converted the way rocprof-compute's own rocprofv3 backend converts its --dispatch
(RS@1b1610fc2 rocprof_compute_profile/profiler_rocprof_v3.py:67-80: "4:7 -> 5-7"), and the workload's
dispatch IDs are shown less one.

Collect then runs `analyze`: `--list-stats` (kernel and dispatch lists; also writes
pmc_kernel_top.csv, and from 3.6 merges the per-pass results_*.csv into pmc_perf.csv) and, for the
longest dispatch of each kernel worth it (analysis_targets), `--dispatch N` with
`--output-format csv --output-name analyze/dispatch_N` where listed (3.3+), else `--save-dfs
analyze/dispatch_N`: per-table CSVs (2.1_Speed-of-Light.csv) to 3.6, one CSV per analysis view
(kernel_metric.csv) from 3.7. Either is read (tinylab.analysis.formats.rocprof_compute); the
fancy_grid boxes are never parsed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tinylab.core.errors import UserError
from tinylab.core import rocm_releases as rr
from tinylab.profilers.base import RUN, CollectResult, Config, Setting, list_artifacts, read_table, run_tool
from tinylab.profilers.rocm import Release, RocmToolAdapter, kfd_gpus, release_from_version, release_of_tree
from tinylab.profilers.rocm_help import ToolHelp

#: -n: at most 35 characters without "-" or "." (6.x), no "/" (7.0): RocprofComputeFacts.name_forbids
WORKLOAD_NAME = "tinylab"
#: mode -> the profile flag it adds (full: counters and the roofline benchmark)
MODES = {"full": None, "counters": "--no-roof", "roof-only": "--roof-only"}
#: A kernel name or part of one, and a metric set's name. Plain names mean the same to 6.x's
#: kernel-name filter (a substring) and to 7.x's (--kernel-include-regex, the names joined with
#: "|"): docs/rocm-tools.md
_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,127}"
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
    settings = (
        Setting("profile_kernels", list, (), flag="--profile-kernel", metavar="NAME", pattern=_NAME, items="kernel names",
                invalid="{flag} {value!r} is not a kernel name or part of one (letters, digits and _)",
                needs="{flag} {value[0]} narrows rocprof-compute's counters: add --profile rocprof-compute",
                help="collect rocprof-compute's counters for kernels whose name holds NAME only (repeatable; "
                     "default: every kernel, in each of its passes)"),
        Setting("profile_set", str, None, metavar="NAME", pattern=_NAME,
                invalid="{flag} {value!r} is not a metric set name (letters, digits and _; rocprof-compute profile "
                        "--list-sets lists them)",
                needs="{flag} {value} is a rocprof-compute metric set: add --profile rocprof-compute",
                help="rocprof-compute: collect one metric set in a single pass (its --set, ROCm 7.1+; "
                     "rocprof-compute profile --list-sets names them)"),
        Setting("rocprof_compute_mode", str, "full", choices=tuple(MODES), metavar="MODE",
                env="TINYLAB_ROCPROF_COMPUTE_MODE", invalid="unknown rocprof-compute mode {value!r}: choose from {choices}",
                help=f"rocprof-compute: {', '.join(MODES)} (default full)"),
        Setting("rocprof_compute_dispatch", list, (), pattern=r"\d+(?::\d+)?", metavar="N|A:B",
                env="TINYLAB_ROCPROF_COMPUTE_DISPATCH", invalid="{flag} {value!r}: a dispatch id or a range such as 20:40",
                help="rocprof-compute: a dispatch id or range A:B (A to B-1) to profile, counted from 0 on every "
                     "release (repeatable)"),
    )
    table_steps = RUN  # whole_run_table stays False: WrapperAdapter says why
    traces = True
    rank_limit = "rocprof-compute runs the program once per counter pass, which ranks cannot repeat in step"

    def __init__(self, mode: str = "full", dispatches: tuple[str, ...] = ()):
        super().__init__()
        # the names are checked by RunConfig.validate (the settings above: the modes, the dispatch syntax)
        self.mode = mode
        self.dispatches = tuple(dispatches)
        self.kernels: tuple[str, ...] = ()  # the kernel filter of the run it wrapped, for collect

    @classmethod
    def from_config(cls, config: Config | None) -> "RocprofComputeAdapter":
        """The mode (full | counters | roof-only) and dispatches ("20:40") the run's config asks for;
        the kernel filter is the run's own too (RunConfig.profile_kernels), read when the argv is built."""
        if config is None:
            return cls()
        return cls(config.rocprof_compute_mode, tuple(config.rocprof_compute_dispatch))

    # ------------------------------------------------------------------ release
    def version_from_output(self, output: str) -> str | None:
        m = _VERSION.search(output)
        return m.group(1) if m else None

    def guess_release(self, path: str, output: str) -> Release | None:
        """Its version names no ROCm: mapped through the CHANGELOGs' headings (rocm_releases.COMPUTE_TO_ROCM),
        used only where no tree says the release."""
        version = self.version_from_output(output)
        rocm = rr.COMPUTE_TO_ROCM.get(version or "")
        return release_from_version(rocm, f"{Path(path).name} --version ({version})") if rocm else None

    # ------------------------------------------------------------------ argv
    def check(self, config: Config) -> None:
        self._profile_options(config, self.help("profile"))
        if self.mode == "roof-only":
            if config.profile_set:
                raise UserError(f"--profile-set {config.profile_set} collects counters: rocprof-compute's --set "
                                "cannot be used with --roof-only (--rocprof-compute-mode roof-only)")
            arch = gpu_arch(config.device)
            if arch in self.facts().no_roofline:
                raise self.refuse(f"runs no roofline on MI300 ({arch}): its --roof-only stops with 'Roofline "
                                  "temporarily disabled in MI300'",
                                  "profile the counters (--rocprof-compute-mode full or counters) or use "
                                  "ROCm 6.4 or newer")

    def _profile_options(self, config: Config, listed: ToolHelp) -> dict[str, str | None]:
        """The profile options this run needs, as the tool spells them (None: not used)."""
        mode = MODES[self.mode]
        return {
            "name": listed.first("--name"),
            "out": self.need(listed, "--output-directory", "--path", purpose="to write its workload into the run's folder"),
            "mode": self.need(listed, mode, purpose=f"for --rocprof-compute-mode {self.mode}") if mode else None,
            "set": self.need(listed, "--set", purpose=f"for --profile-set {config.profile_set} (single-pass "
                                                      "metric sets came with rocprof-compute 3.3, ROCm 7.1)")
            if config.profile_set else None,
            "kernel": self.need(listed, "--kernel", purpose="for --profile-kernel") if config.profile_kernels else None,
            "dispatch": self.need(listed, "--kernel-iteration-range", "--dispatch", purpose="for --rocprof-compute-dispatch")
            if self.dispatches else None,
            "device": listed.first("--device"),
            "overwrite": listed.first("--overwrite"),
        }

    def wrap_argv(self, out_dir: Path, config: Config) -> list[str]:
        flags = self._profile_options(config, self.help("profile"))
        self.kernels = tuple(config.profile_kernels)
        workload = out_dir / "workload"
        argv = [self.argv0(), "profile"]
        argv += [flags["name"], WORKLOAD_NAME] if flags["name"] else []
        argv += [flags["out"], str(workload)]  # type: ignore[list-item]
        if flags["overwrite"] and workload.is_dir() and any(workload.iterdir()):
            argv.append(flags["overwrite"])  # 3.8+ refuses a folder with files in it; tinylab's is fresh
        argv += [flags["mode"]] if flags["mode"] else []
        argv += [flags["set"], config.profile_set] if flags["set"] else []  # type: ignore[list-item]
        argv += [flags["kernel"], *self.kernels] if flags["kernel"] else []  # type: ignore[list-item]
        if flags["dispatch"] == "--kernel-iteration-range":
            argv += [flags["dispatch"], iteration_range(self.dispatches)]
        elif flags["dispatch"]:
            argv += [flags["dispatch"], *self.dispatches]
        argv += [flags["device"], str(gpu_index(config.device))] if flags["device"] else []
        return argv + ["--"]  # type: ignore[return-value]

    def reruns_program(self, out_dir: Path) -> bool:
        return True

    def planned_passes(self, out_dir: Path, arch: str | None) -> int | None:
        """Runs of the program: rocprof-compute's own pass files, written before the first run (exact),
        else this release's count for the GPU (rocm_releases.py; computed from source for 6.3/6.4)."""
        files = list((out_dir / "workload").rglob("perfmon/*.txt"))
        if files:
            return len(files)
        path = self.executable_path()
        release = release_of_tree(path, files_only=True) if path else None  # asked inside the profiled program
        return self.table[release.key].passes.get((arch or "").split(":")[0]) if release else None

    def capabilities(self) -> list[str]:
        profile, analyze = self.help("profile"), self.help("analyze")
        found = ["analyze -> " + ("csv (--output-format csv --output-name)" if _csv_output(analyze)
                                  else "--save-dfs" if analyze.has("--save-dfs") else "no table output")]
        found.append("profile -> " + (profile.first("--output-directory", "--path") or "no output folder option"))
        found.append("dispatches: " + ("--kernel-iteration-range (IDs from 1)" if profile.has("--kernel-iteration-range")
                                       else "--dispatch (IDs from 0)"))
        try:
            passes = self.facts().passes
        except UserError:
            passes = {}
        found += [f"{n} passes on {arch}" for arch, n in passes.items() if arch == "gfx942"]
        found += ["single-pass sets (--set)"] if profile.has("--set") else []
        found += ["--overwrite"] if profile.has("--overwrite") else []
        return found

    # ------------------------------------------------------------------ collect
    def collect(self, out_dir: Path) -> CollectResult:
        from tinylab.analysis.formats.rocprof_compute import (  # pandas: after the run
            find_workload,
            has_counters,
            read_roofline,
            roofline_disabled,
        )

        workload = find_workload(out_dir / "workload")
        notes = []
        if workload is None:
            return CollectResult(list_artifacts(out_dir), None, f"no rocprof-compute workload under {out_dir}", None)
        counters = has_counters(workload)
        if not counters:  # 3.6+ --roof-only: "creates roofline.csv only"
            notes.append("no kernel table: the workload holds roofline.csv only (--roof-only, rocprof-compute 3.6+)")
        elif self.executable_path():
            notes += self._analyze(workload, out_dir / "analyze")
        roofline = read_roofline(workload)
        if roofline:
            (out_dir / "roofline.json").write_text(json.dumps(roofline, indent=2), encoding="utf-8")
        elif self.mode != "counters":
            notes.append(f"no roofline: {roofline_disabled(workload) or 'no roofline.csv in the workload'}")
        table, fmt, note = read_table(workload) if counters else (None, None, None)
        notes.insert(0, note)
        return CollectResult(list_artifacts(out_dir), table, "; ".join(n for n in notes if n) or None, fmt)

    def _analyze(self, workload: Path, analyze_dir: Path) -> list[str]:
        exe = self.argv0()
        try:
            listed = self.help("analyze")
            path = self.need(listed, "--path", purpose="to read the workload")
            dispatch = self.need(listed, "--dispatch", purpose="to analyze one dispatch")
            base = dispatch_base(self.help("profile"))
        except UserError as exc:
            return [f"no analyze: {exc}"]
        ok, detail = run_tool([exe, "analyze", path, str(workload), "--list-stats"], analyze_dir / "list_stats.txt")
        if not ok:
            return [f"analyze --list-stats failed: {detail}"]
        from tinylab.analysis.formats.rocprof_compute import analysis_targets, sol_file
        from tinylab.core.names import short_name

        if _csv_output(listed):
            save = ["--output-format", "csv", "--output-name"]
        elif listed.has("--save-dfs"):
            save = ["--save-dfs"]
        else:
            return [f"no speed-of-light tables: {self.who()} lists neither --output-format nor --save-dfs in "
                    f"`{listed.command}`"]
        done, notes, written = [], [], set()
        for native, kernel in analysis_targets(workload, self.kernels):
            number = native - base  # tinylab's number, from 0 on every release
            tables = analyze_dir / f"dispatch_{number}"  # one folder level, as both outputs make: analyze/ exists
            ok, detail = run_tool([exe, "analyze", path, str(workload), dispatch, str(native), *save, str(tables)],
                                  analyze_dir / f"dispatch_{number}.txt")
            found = sol_file(tables)
            if not ok:
                notes.append(f"analyze --dispatch {number} failed: {detail}")
            elif found is not None:
                done.append(f"{number} ({short_name(kernel)})")
                written.add(found.name)
        if done:
            notes.insert(0, f"speed-of-light tables ({', '.join(sorted(written))}) in analyze/dispatch_<N>/ for "
                            f"dispatch " + ", ".join(done) + " (counted from 0" +
                            (f"; rocprof-compute numbers them from {base}" if base else "") + ")")
        return notes


def dispatch_base(profile: ToolHelp) -> int:
    """The number the tool gives a workload's first dispatch: 1 where profile takes rocprofv3's
    --kernel-iteration-range (3.10+, which renamed the filter and renumbered the dispatches together), else 0."""
    return 1 if profile.has("--kernel-iteration-range") else 0


def iteration_range(dispatches: tuple[str, ...]) -> str:
    """tinylab's dispatches ("4", "20:40": from 0, the end left out) in rocprofv3's --kernel-iteration-range
    syntax ("[5,21-40]": from 1, inclusive; SDK rocprofiler-sdk-tool/config.cpp get_kernel_filter_range)."""
    parts = []
    for item in dispatches:
        start, _, end = item.partition(":")
        parts.append(f"{int(start) + 1}-{end}" if end else str(int(start) + 1))
    return "[" + ",".join(parts) + "]"


def _csv_output(analyze: ToolHelp) -> bool:
    """analyze writes its tables with --output-format csv --output-name (rocprof-compute 3.3+)."""
    return analyze.has("--output-format") and analyze.has("--output-name")


def gpu_index(device: str) -> int:
    """The GPU index of a run's device ("cuda:2" -> 2; "cuda", "auto" -> 0, the default device)."""
    index = device.partition(":")[2]
    return int(index) if index.isdigit() else 0


def gpu_arch(device: str) -> str | None:
    """The architecture of the run's GPU as the driver lists it (gfx942), or None when not known."""
    archs = kfd_gpus()
    index = gpu_index(device)
    return archs[index] if index < len(archs) else None

"""rocprofv3 (ROCprofiler-SDK): kernel dispatch trace, per-kernel stats and roctx ranges on AMD GPUs.

Release-aware (rocm_releases.py, docs/rocm-tools.md): the tool is probed with `--help` (every
release has it; `--version` only 7.0+), argv holds only the flags its release accepts, and a
format or counter request the release cannot serve is refused before the run starts, naming the
release. `--output-format csv` is always asked for: ROCm 7 writes the rocpd database by default.

Files: <dir>/<pid>_<name>.csv on 6.2.0-6.2.2, <dir>/<hostname>/<pid>_<name>.csv from 6.3; one set
per process (PyTorch may start helpers). `--marker-trace` records the trainer's roctx step ranges
(tinylab/training/markers.py): when they are there, the kernel table holds only the measured steps'
dispatches, and the profile says how many steps that is.

Hardware counters (TINYLAB_ROCPROFV3_PMC="SQ_WAVES GRBM_COUNT;TCC_HIT TCC_MISS", groups split by
";"): one group is `--pmc` (6.3+, one pass); several groups, or any on 6.2 (which has no --pmc),
go through `-i counters.txt`, one `pmc:` line per group, and rocprofv3 then runs the program once
per line into <dir>/pmc_<n>/: the trainer keeps such a run one clean record (tinylab/runs/passes.py),
and the kernel table is pass 1's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from tinylab.errors import UserError
from tinylab.safeio import read_bounded
from tinylab.profilers import rocm_releases as rr
from tinylab.profilers.base import CollectResult, list_artifacts, probe, read_table
from tinylab.profilers.rocm import Release, RocmToolAdapter, release_from_version

if TYPE_CHECKING:
    from tinylab.config import RunConfig

#: Every format some release writes (the env is checked against it; the release then decides).
OUTPUT_FORMATS = tuple(dict.fromkeys(f for facts in rr.ROCPROFV3.values() for f in facts.formats))
EXTRA_TRACES = {"hip": "--hip-trace", "memory-copy": "--memory-copy-trace"}
COUNTERS_FILE = "counters.txt"
_COUNTER = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\[\d+\])?(?::device=\d+)?")
#: What `--help` of each release shows first, for a tool outside a ROCm tree (checked in order).
_HELP_MARKERS = (("7.0", "--agent-index"), ("6.4", "--collection-period"), ("6.3", "--pmc"), ("6.2", "--kernel-names"))


class Rocprofv3Adapter(RocmToolAdapter):
    name = "rocprofv3"
    executable = "rocprofv3"
    executables = ("rocprofv3",)
    whole_run_table = True
    probe_args = ("--help",)
    table = rr.ROCPROFV3
    description = "AMD kernel trace and per-kernel stats (ROCprofiler-SDK rocprofv3)"
    fix = "install ROCm >= 6.2 (rocprofiler-sdk) and put /opt/rocm/bin on PATH; needs an AMD GPU (/dev/kfd)"

    def __init__(self, traces: tuple[str, ...] = (), output_formats: tuple[str, ...] = ("csv",),
                 counters: tuple[tuple[str, ...], ...] = ()):
        super().__init__()
        self._version: str | None = None  # `--version` output (7.0+), asked once
        for trace in traces:
            if trace not in EXTRA_TRACES:
                raise UserError(f"unknown rocprofv3 trace {trace!r}: choose from {', '.join(EXTRA_TRACES)}")
        for fmt in output_formats:
            if fmt not in OUTPUT_FORMATS:
                raise UserError(f"unknown rocprofv3 output format {fmt!r}: choose from {', '.join(OUTPUT_FORMATS)}")
        for group in counters:
            for counter in group:
                if not _COUNTER.fullmatch(counter):
                    raise UserError(f"rocprofv3 counter {counter!r} is not a counter name (e.g. SQ_WAVES, TCC_HIT[0])")
        self.traces = tuple(traces)
        self.output_formats = ("csv",) + tuple(f for f in output_formats if f != "csv")
        self.counters = tuple(g for g in counters if g)

    @classmethod
    def from_env(cls) -> "Rocprofv3Adapter":
        """Extra traces, formats and counter groups from TINYLAB_ROCPROFV3_TRACE ("hip,memory-copy"),
        TINYLAB_ROCPROFV3_FORMAT ("rocpd,pftrace") and TINYLAB_ROCPROFV3_PMC ("A B;C D": one pass a group)."""
        groups = tuple(tuple(g.split()) for g in os.environ.get("TINYLAB_ROCPROFV3_PMC", "").split(";") if g.strip())
        return cls(_env_list("TINYLAB_ROCPROFV3_TRACE"), _env_list("TINYLAB_ROCPROFV3_FORMAT") or ("csv",), groups)

    # ------------------------------------------------------------------ release
    def probe_ok(self, rc: int | None, output: str) -> bool:
        return rc == 0 and "usage: rocprofv3" in output

    def release_from_output(self, path: str, output: str) -> Release | None:
        """Outside a ROCm tree: 7.0+ says its rocm_version; older ones are told apart by their options."""
        if "--version" in output:
            m = re.search(r"rocm_version:\s*(\S+)", self._version_text(path))
            if m:
                return release_from_version(m.group(1), f"{Path(path).name} --version")
        for release, marker in _HELP_MARKERS:
            if marker in output:
                key = "6.2.2" if release == "6.2" else release
                return Release(release, key, f"guessed from the options {Path(path).name} --help lists")
        return None

    def version_from_output(self, output: str) -> str | None:
        """The SDK version, which only releases with --version (7.0+) print."""
        release = self.release()
        if release is None or not self.table[release.key].version_flag:
            return None
        m = re.search(r"^\s*version:\s*(\S+)", self._version_text(self._probe()[0]), re.MULTILINE)  # type: ignore[index]
        return m.group(1) if m else None

    def _version_text(self, path: str) -> str:
        if self._version is None:
            rc, text = probe(path, ("--version",))
            self._version = text if rc == 0 else ""
        return self._version

    # ------------------------------------------------------------------ argv
    def check(self, config: "RunConfig") -> None:
        facts = self.facts()
        for fmt in self.output_formats:
            if fmt not in facts.formats:
                first = next(k for k, f in rr.ROCPROFV3.items() if fmt in f.formats)
                raise self.refuse(f"cannot write {fmt!r} output (it writes {', '.join(facts.formats)})",
                                  f"{fmt} needs ROCm {first} or newer (TINYLAB_ROCPROFV3_FORMAT)")
        self._options()

    def _options(self) -> list[str]:
        """The tool's own options for this run (each one checked against the release)."""
        facts = self.facts()
        flags = ["--kernel-trace", "--stats", "--truncate-kernels", "--marker-trace"]
        flags += [EXTRA_TRACES[t] for t in self.traces]
        if len(self.counters) == 1 and facts.pmc_option:
            flags += ["--pmc"]
        elif self.counters:
            flags += ["--input"]
        for flag in flags + ["--output-format", "--output-directory"]:
            self.option(flag)
        return flags

    def wrap_argv(self, out_dir: Path, config: "RunConfig") -> list[str]:
        argv = [self.argv0()]
        for flag in self._options():
            if flag == "--pmc":
                argv += ["--pmc", *self.counters[0]]
            elif flag == "--input":
                (out_dir / COUNTERS_FILE).write_text("".join(f"pmc: {' '.join(g)}\n" for g in self.counters),
                                                     encoding="utf-8")
                argv += ["--input", str(out_dir / COUNTERS_FILE)]
            else:
                argv.append(flag)
        return argv + ["--output-format", *self.output_formats, "--output-directory", str(out_dir), "--"]

    def reruns_program(self, out_dir: Path) -> bool:
        return (out_dir / COUNTERS_FILE).is_file()  # written by wrap_argv only for -i: a run per line

    def planned_passes(self, out_dir: Path, arch: str | None) -> int | None:
        try:
            lines = read_bounded(out_dir / COUNTERS_FILE, 1 << 20).decode("utf-8", "replace").splitlines()
        except (OSError, UserError):
            return None
        return sum(line.startswith("pmc:") for line in lines) or None

    # ------------------------------------------------------------------ collect
    def collect(self, out_dir: Path) -> CollectResult:
        artifacts = list_artifacts(out_dir)
        passes = sorted((p for p in out_dir.glob("pmc_*") if p.is_dir()), key=lambda p: _pass_number(p.name))
        source = passes[0] if passes else out_dir
        notes = []
        if passes:
            notes.append(f"counters in {len(passes)} passes ({', '.join(p.name for p in passes)}: one run of the "
                         f"program each); the kernel table is from {source.name}")
        pattern = self._layout_glob()
        traces, markers = sorted(source.glob(pattern + "_kernel_trace.csv")), sorted(source.glob(pattern + "_marker_api_trace.csv"))
        if pattern and not (traces or list(source.glob(pattern + "_kernel_stats.csv"))):
            release = self.release()
            notes.append(f"no kernel files at {self.facts().layout} ({release.label if release else ''}); "
                         "read from wherever they are")
        from tinylab.analysis.formats.rocprofv3 import marker_ranges, trace_dispatches  # pandas: after the run
        from tinylab.analysis.steps import measured_kernels, step_windows

        windows = step_windows(marker_ranges(markers)) if traces and markers else []
        # the kernel trace is read only when there is a measured step to cut it to
        measured = measured_kernels(*trace_dispatches(traces), windows) \
            if any(not warmup for _, warmup, _, _ in windows) else None
        if measured is not None:
            table, steps = measured
            notes.append(f"kernels of the {steps} measured steps (roctx step ranges; warm-up and start-up left out)")
            return CollectResult(artifacts, table, "; ".join(notes), "rocprofv3-kernel-trace", steps=steps)
        table, fmt, note = read_table(source)
        notes.append(note)
        if table is not None:
            notes.append("no roctx step ranges recorded: the table covers the whole run, warm-up included"
                         + self._why_no_ranges())
        return CollectResult(artifacts, table, "; ".join(n for n in notes if n) or None, fmt)

    def _why_no_ranges(self) -> str:
        """A release whose --marker-trace does not preload the SDK's roctx may miss torch's ranges."""
        try:
            facts = self.facts()
        except UserError:
            return ""
        if facts.marker_preload:
            return " (the trainer marks steps on a GPU only)"
        return (f" ({self.release().label}'s rocprofv3 does not preload the SDK's roctx library, so ranges "  # type: ignore[union-attr]
                "from a torch linked to roctracer's roctx are not recorded; 6.3+ preloads it)")

    def _layout_glob(self) -> str:
        """Glob of the per-process file prefix under a pass folder, from this release's layout
        ("" when the release is unknown here: the whole folder is searched)."""
        try:
            return "*/[0-9]*" if self.facts().host_dir else "[0-9]*"
        except UserError:
            return ""


def _pass_number(name: str) -> int:
    digits = name.rpartition("_")[2]
    return int(digits) if digits.isdigit() else 0


def _env_list(name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in os.environ.get(name, "").split(",") if item.strip())

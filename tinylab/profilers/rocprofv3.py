"""rocprofv3 (ROCprofiler-SDK): kernel dispatch trace, per-kernel stats and roctx ranges on AMD GPUs.

The argv comes from the installed tool's own `--help` (tinylab/profilers/rocm_help.py): where its
`--output-format` lists rocpd (ROCm 7.0+, whose default it is, and whose help calls direct csv
"deprecated" from 10.0), the run records the rocpd database and the kernel table is read from it;
where it does not (6.x), CSV with `--stats`. A format or counter request the tool cannot serve is
refused before the run starts, in one line naming the tool and its release.

Files land where any release writes them, so none is assumed: <dir>/<pid>_<name> (6.2.0-6.2.2) or
<dir>/<hostname>/<pid>_<name> (6.3+), `_results.db` for rocpd; counter passes in <dir>/pmc_<n>/ (-i
FILE) or <dir>/pass_<n>/ (repeated --pmc, SDK 1.3.0+); the profile's note says which layout was
found. `--marker-trace` records the trainer's roctx step ranges (tinylab/core/markers.py), and the
kernel table holds only the measured steps' dispatches: from the CSV marker trace, or from the rocpd
database's regions, which rocprofiler-sdk names after their ROCTx message from ROCm 10.1 (before, a
generic label: the database is then read whole, and the note says so).

Hardware counters (RunConfig.rocprofv3_pmc: `--rocprofv3-pmc "SQ_WAVES GRBM_COUNT" --rocprofv3-pmc
"TCC_HIT TCC_MISS"`, a group each): one group is `--pmc` (6.3+, one pass); several are repeated `--pmc` groups where the help
says --pmc is multi-pass (ROCm 7.13+, which has no .txt input), else `-i counters.txt` with one
`pmc:` line a group (6.2 has no --pmc at all). Each group is a run of the program: the trainer keeps
such a run one clean record (tinylab/runs/passes.py), and the kernel table is pass 1's.
"""

from __future__ import annotations

import re
from pathlib import Path

from tinylab.core.errors import UserError
from tinylab.core import rocm_releases as rr
from tinylab.profilers.base import PERFETTO, RUN, CollectResult, Config, Setting, Viewer, list_artifacts, read_table
from tinylab.profilers.rocm import Release, RocmToolAdapter, release_from_version, rocpd_measured
from tinylab.profilers.rocm_help import ToolHelp, ask

EXTRA_TRACES = {"hip": "--hip-trace", "memory-copy": "--memory-copy-trace"}
#: --output-format's values over the releases read (rocm_releases.ROCPROFV3): what --rocprofv3-formats
#: may name; the installed tool's own help says which it takes.
FORMATS = ("csv", "json", "pftrace", "otf2", "rocpd")
#: A hardware counter as --pmc takes it (SQ_WAVES, TCC_HIT[0], GRBM_COUNT:device=1); a group is
#: several split by spaces.
_COUNTER = r"[A-Za-z][A-Za-z0-9_]*(?:\[\d+\])?(?::device=\d+)?"
COUNTERS_FILE = "counters.txt"
#: Written beside the output when the program runs once per counter group (repeated --pmc): the
#: number of passes, for reruns_program/planned_passes, which may only read files.
PASSES_FILE = "passes.txt"
#: What `--help` of each release shows first, for a tool outside a ROCm tree (checked in order).
_HELP_MARKERS = (("7.0", "--agent-index"), ("6.4", "--collection-period"), ("6.3", "--pmc"), ("6.2", "--kernel-names"))
_PASS_FOLDER = re.compile(r"(pmc|pass)_(\d+)")


class Rocprofv3Adapter(RocmToolAdapter):
    name = "rocprofv3"
    executable = "rocprofv3"
    executables = ("rocprofv3",)
    whole_run_table = True
    probe_args = ("--help",)
    table = rr.ROCPROFV3
    description = "AMD kernel trace and per-kernel stats (ROCprofiler-SDK rocprofv3)"
    fix = "install ROCm >= 6.2 (rocprofiler-sdk) and put /opt/rocm/bin on PATH; needs an AMD GPU (/dev/kfd)"
    settings = (
        Setting("rocprofv3_traces", list, (), choices=tuple(EXTRA_TRACES), metavar="TRACE", env="TINYLAB_ROCPROFV3_TRACE",
                help=f"rocprofv3: an extra trace, {' or '.join(EXTRA_TRACES)} (repeatable)"),
        Setting("rocprofv3_formats", list, (), choices=FORMATS, metavar="FORMAT", env="TINYLAB_ROCPROFV3_FORMAT",
                help=f"rocprofv3: an output format besides its default: {', '.join(FORMATS)} (repeatable)"),
        Setting("rocprofv3_pmc", list, (), pattern=rf"\s*{_COUNTER}(?:\s+{_COUNTER})*\s*", metavar="'C1 C2'",
                env="TINYLAB_ROCPROFV3_PMC", split=";",
                invalid="{flag} {value!r}: a group of counter names split by spaces, e.g. 'SQ_WAVES GRBM_COUNT'",
                help="rocprofv3: a group of hardware counters, one pass of the program a group (repeatable)"),
    )
    table_steps = RUN
    traces = True
    viewers = (Viewer((".pftrace",), PERFETTO),
               Viewer((".db", ".sqlite"), "rocpd database (rocpd and sqlite3 read it too):", ("tinylab hotspots FILE",)))

    def __init__(self, traces: tuple[str, ...] = (), output_formats: tuple[str, ...] = (),
                 counters: tuple[tuple[str, ...], ...] = ()):
        super().__init__()
        self._version: str | None = None  # `--version` output (7.0+), asked once
        self.traces = tuple(traces)
        self.output_formats = tuple(dict.fromkeys(output_formats))  # asked for besides the table's format
        self.counters = tuple(g for g in counters if g)

    @classmethod
    def from_config(cls, config: Config | None) -> "Rocprofv3Adapter":
        """Extra traces, formats and counter groups (one pass a group) as the run's config asks."""
        if config is None:
            return cls()
        groups = tuple(tuple(group.split()) for group in config.rocprofv3_pmc)
        return cls(tuple(config.rocprofv3_traces), tuple(config.rocprofv3_formats), groups)

    # ------------------------------------------------------------------ release
    def probe_ok(self, rc: int | None, output: str) -> bool:
        return rc == 0 and "usage: rocprofv3" in output

    def tool_release(self, path: str, output: str) -> Release | None:
        """7.0+ says its rocm_version in `--version` (which 6.x does not have: argparse exits 2)."""
        m = re.search(r"rocm_version:\s*(\S+)", self._version_text(path, output))
        return release_from_version(m.group(1), f"{Path(path).name} --version") if m else None

    def guess_release(self, path: str, output: str) -> Release | None:
        """Outside a ROCm tree, 6.x is told apart by the options its --help lists."""
        listed = _help_of(path, output)
        for release, marker in _HELP_MARKERS:
            if listed.has(marker):
                key = "6.2.2" if release == "6.2" else release
                return Release(release, key, f"{Path(path).name} --help", "the tool itself",
                               guess=f"its --help lists {marker}, which ROCm {release} brought")
        return None

    def version_from_output(self, output: str) -> str | None:
        """The SDK version, which only releases with --version (7.0+) print."""
        probed = self._probe()
        if probed is None:
            return None
        m = re.search(r"^\s*version:\s*(\S+)", self._version_text(probed[0], output), re.MULTILINE)
        return m.group(1) if m else None

    @staticmethod
    def _version_text(path: str, help_text: str) -> str:
        if not _help_of(path, help_text).has("--version"):
            return ""
        rc, text = ask(path, ("--version",))
        return text if rc == 0 else ""

    # ------------------------------------------------------------------ argv
    def check(self, config: Config) -> None:
        self._options()

    def _formats(self, listed: ToolHelp) -> list[str]:
        """--output-format's values: rocpd where the tool lists it (the kernel table then comes from the
        database), else csv; then what --rocprofv3-formats asks for, each refused if not listed."""
        accepted = listed.choices.get("--output-format") or self.facts().formats
        base = "rocpd" if "rocpd" in accepted else "csv"
        for fmt in self.output_formats:
            if fmt not in accepted:
                first = next(k for k, f in rr.ROCPROFV3.items() if fmt in f.formats)
                raise self.refuse(f"cannot write {fmt!r} output (it writes {', '.join(accepted)})",
                                  f"{fmt} needs ROCm {first} or newer (--rocprofv3-formats)")
        return list(dict.fromkeys([base, *self.output_formats]))

    def _options(self) -> list[str]:
        """This run's options, each one the tool lists (the values are filled in by wrap_argv)."""
        listed = self.help()
        formats = self._formats(listed)
        flags = [self.need(listed, "--kernel-trace", purpose="to trace the kernels")]
        flags += [f for f in ("--truncate-kernels", "--marker-trace") if listed.has(f)]
        if "csv" in formats:
            flags.append(self.need(listed, "--stats", purpose="for the per-kernel table of its CSV output"))
        flags += [self.need(listed, EXTRA_TRACES[t], purpose="for --rocprofv3-traces") for t in self.traces]
        flags += self._counter_flags(listed)
        flags.append(self.need(listed, "--output-format", purpose="to choose what it writes"))
        flags.append(self.need(listed, "--output-directory", "-d", purpose="to write into the run's folder"))
        return flags

    def _counter_flags(self, listed: ToolHelp) -> list[str]:
        """--pmc for one group; for several, repeated --pmc where its help says multi-pass, else -i FILE."""
        if not self.counters:
            return []
        if len(self.counters) == 1 and listed.has("--pmc"):
            return ["--pmc"]
        if listed.has("--pmc") and listed.describes("--pmc", "multi-pass"):
            return ["--pmc*"]
        if self.facts().txt_input:
            return [self.need(listed, "--input", "-i", purpose=f"for {len(self.counters)} counter groups (--rocprofv3-pmc)")]
        raise UserError(f"{self.who()} takes neither repeated --pmc groups nor a .txt counter file: "
                        f"give one counter group (one --rocprofv3-pmc)")

    def wrap_argv(self, out_dir: Path, config: Config) -> list[str]:
        argv = [self.argv0()]
        formats = self._formats(self.help())
        for flag in self._options():
            if flag == "--pmc":
                argv += ["--pmc", *self.counters[0]]
            elif flag == "--pmc*":  # one --pmc a group: a run of the program each, into pass_<n>/
                for group in self.counters:
                    argv += ["--pmc", *group]
                (out_dir / PASSES_FILE).write_text(f"{len(self.counters)}\n", encoding="utf-8")
            elif flag in ("--input", "-i"):
                (out_dir / COUNTERS_FILE).write_text("".join(f"pmc: {' '.join(g)}\n" for g in self.counters),
                                                     encoding="utf-8")
                argv += [flag, str(out_dir / COUNTERS_FILE)]
            elif flag == "--output-format":
                argv += [flag, *formats]
            elif flag in ("--output-directory", "-d"):
                argv += [flag, str(out_dir)]
            else:
                argv.append(flag)
        return argv + ["--"]

    def reruns_program(self, out_dir: Path) -> bool:
        return self.planned_passes(out_dir, None) is not None  # counters.txt or passes.txt: a run a group

    def planned_passes(self, out_dir: Path, arch: str | None) -> int | None:
        from tinylab.core.safeio import read_bounded

        try:
            lines = read_bounded(out_dir / COUNTERS_FILE, 1 << 20).decode("utf-8", "replace").splitlines()
            return sum(line.startswith("pmc:") for line in lines) or None
        except (OSError, UserError):
            pass
        try:
            text = read_bounded(out_dir / PASSES_FILE, 1 << 10).decode("utf-8", "replace").strip()
        except (OSError, UserError):
            return None
        return int(text) if text.isdigit() and int(text) > 0 else None

    # ------------------------------------------------------------------ collect
    def collect(self, out_dir: Path) -> CollectResult:
        artifacts = list_artifacts(out_dir)
        passes = sorted((p for p in out_dir.iterdir() if p.is_dir() and _PASS_FOLDER.fullmatch(p.name)),
                        key=lambda p: int(_PASS_FOLDER.fullmatch(p.name).group(2))) if out_dir.is_dir() else []  # type: ignore[union-attr]
        source = passes[0] if passes else out_dir
        notes = []
        if passes:
            notes.append(f"counters in {len(passes)} passes ({', '.join(p.name for p in passes)}: one run of the "
                         f"program each); the kernel table is from {source.name}")
        layout, files = _layout(source)
        notes.append(f"files at {layout}" if files else f"no per-process files under {source.name}/")
        traces = sorted(p for p in files if p.name.endswith("_kernel_trace.csv"))
        markers = sorted(p for p in files if p.name.endswith("_marker_api_trace.csv"))
        from tinylab.analysis.formats.rocprofv3 import marker_ranges, trace_dispatches  # pandas: after the run
        from tinylab.core.steps import measured_kernels, step_windows

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
        databases = [p for p in files if p.name.endswith("_results.db")]
        if fmt == "rocpd" and databases:  # its ROCTx regions, named after their message from ROCm 10.1
            measured, scope = rocpd_measured(databases[0])
            if measured is not None:
                notes.append(scope)
                return CollectResult(artifacts, measured[0], "; ".join(n for n in notes if n), fmt, steps=measured[1])
            notes.append(scope)
        elif table is not None:
            notes.append("no roctx step ranges recorded: the table covers the whole run, warm-up included"
                         + self._why_no_ranges())
        return CollectResult(artifacts, table, "; ".join(n for n in notes if n) or None, fmt)

    def _why_no_ranges(self) -> str:
        """Why a CSV record has no step ranges: a CPU run has none, or a release's --marker-trace does
        not preload the SDK's roctx."""
        try:
            facts = self.facts()
        except UserError:
            return ""
        if facts.marker_preload:
            return " (the trainer marks steps on a GPU only)"
        return (f" ({self.release().label}'s rocprofv3 does not preload the SDK's roctx library, so ranges "  # type: ignore[union-attr]
                "from a torch linked to roctracer's roctx are not recorded; 6.3+ preloads it)")

    def capabilities(self) -> list[str]:
        listed = self.help()
        formats = listed.choices.get("--output-format", ())
        found = ["kernel table from " + ("its rocpd database" if "rocpd" in formats else "CSV (--stats)")]
        if formats:
            found.append("writes " + " ".join(formats))
        if listed.has("--pmc"):
            found.append("counter groups: " + ("repeated --pmc (pass_<n>/)" if listed.describes("--pmc", "multi-pass")
                                               else "one --pmc, several through -i counters.txt (pmc_<n>/)"))
        else:
            found.append("counters through -i counters.txt only")
        return found


def _help_of(path: str, help_text: str) -> ToolHelp:
    from tinylab.profilers.rocm_help import parse_help

    return parse_help(help_text, f"{Path(path).name} --help")


def _layout(folder: Path) -> tuple[str, list[Path]]:
    """Where the per-process files are, whatever the release: <dir>/<pid>_* or <dir>/<host>/<pid>_*
    (the layout named as found), and those files."""
    direct = sorted(p for p in folder.glob("[0-9]*_*") if p.is_file())
    hosted = sorted(p for p in folder.glob("*/[0-9]*_*") if p.is_file() and not _PASS_FOLDER.fullmatch(p.parent.name))
    if hosted and not direct:
        return f"<dir>/<hostname>/<pid>_* ({hosted[0].parent.name}/)", hosted
    return "<dir>/<pid>_*", direct + hosted


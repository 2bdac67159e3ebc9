"""rocprof-sys (ROCm Systems Profiler; omnitrace in ROCm 6.2): whole-program trace + timemory tables.

`<runner> --profile --trace -o <out> --` with runner `omnitrace-run` on 6.2 and `rocprof-sys-run`
from 6.3, each flag one the installed runner's help lists (timemory's help: `--help`, or from
1.6.0, ROCm 7.13, `--help=all`, since its `--help` shows the essential options and topics only).
Both flags are needed: --profile alone turns the trace off. It writes
<out>/<timestamp>/perfetto-trace-<pid>.proto (open it in ui.perfetto.dev) and
wall_clock-<pid>.{json,txt}. With ROCm support each GPU kernel dispatch is a wall_clock entry named
by its kernel, so the kernel table comes from wall_clock-<pid>.json. In the Perfetto trace the
kernels are slices of category device_hip (6.2, 6.3) or rocm_kernel_dispatch (6.4+), and the
trainer's roctx step ranges show above them, which is what the lab tells the learner to look for.
The wall-clock tables have no timestamps, so where the optional `perfetto` package can read the
trace, the kernel table is cut to the measured steps from it (tinylab.core.steps); otherwise it
covers the whole run, and the profile says so. The trainer's ranges are never counted as kernels.

From 1.7.0 (ROCm 7.14) the runner has `--output-format` (proto, rocpd, json, text), whose tokens are
authoritative and which "cannot be combined with" --trace/--profile; from 1.9.0 (ROCm 10.1) a rocpd
database, rocpd.db, is what it writes by default, Perfetto only with `--output-format proto`. Where its
help lists --output-format, the run asks for `rocpd` (and `proto` with --rocprof-sys-perfetto), and the
kernel table and the step cut come from rocpd.db through the same reader as rocprofv3's database.
"""

from __future__ import annotations

import re
from pathlib import Path

from tinylab.core.errors import UserError
from tinylab.core import rocm_releases as rr
from tinylab.profilers.base import PERFETTO, RUN, CollectResult, Config, Setting, Viewer, list_artifacts, read_table
from tinylab.profilers.rocm import Release, RocmToolAdapter, release_from_version, rocpd_measured
from tinylab.profilers.rocm_help import ToolHelp, tool_help

_VERSION = re.compile(r"v(\d+\.\d+\.\d+)")
#: `--version` names the ROCm it was built for: "(rev: ..., rocm: v7.1.x)" (RS defines.h.in:71-88,
#: ROCPROFSYS_ROCM_VERSION_COMPAT_STRING "v<major>.<minor>.x").
_ROCM = re.compile(r"rocm:\s*v(\d+\.\d+)")


class RocprofSysAdapter(RocmToolAdapter):
    name = "rocprof-sys"
    executable = "rocprof-sys-run"
    executables = ("rocprof-sys-run", "omnitrace-run")
    whole_run_table = True
    probe_args = ("--version",)  # timemory's enable_version: EXIT_SUCCESS on every release
    table = rr.ROCPROF_SYS
    description = "AMD whole-program timeline (Perfetto) and per-function/kernel wall-clock tables"
    fix = ("install ROCm >= 6.2 with rocprofiler-systems (rocprof-sys-run, or omnitrace-run on 6.2) on PATH; "
           "needs an AMD GPU (/dev/kfd)")
    settings = (
        Setting("rocprof_sys_perfetto", bool, False, env="TINYLAB_ROCPROF_SYS_PERFETTO",
                help="rocprof-sys: also write its Perfetto trace where its runner has --output-format (1.7+, "
                     "ROCm 7.14; its timeline is then rocpd.db); older runners always write one"),
    )
    table_steps = RUN
    traces = True
    viewers = (Viewer((".proto",), PERFETTO),
               Viewer((".db",), "rocpd database (rocpd and sqlite3 read it too):", ("tinylab hotspots FILE",)))

    def __init__(self, perfetto: bool = False):
        super().__init__()
        self.perfetto = perfetto

    @classmethod
    def from_config(cls, config: Config | None) -> "RocprofSysAdapter":
        """Whether the run asks for the Perfetto trace too (--rocprof-sys-perfetto)."""
        return cls(bool(config and config.rocprof_sys_perfetto))

    def version_from_output(self, output: str) -> str | None:
        m = _VERSION.search(output)
        return m.group(1) if m else None

    def tool_release(self, path: str, output: str) -> Release | None:
        """`--version` names the ROCm it was built for ("rocm: v7.1.x")."""
        m = _ROCM.search(output)
        return release_from_version(m.group(1), f"{Path(path).name} --version (rocm: v{m.group(1)}.x)") if m else None

    def guess_release(self, path: str, output: str) -> Release | None:
        """A version that names no ROCm, mapped through the CHANGELOG (rocm_releases.SYS_TO_ROCM)."""
        version = self.version_from_output(output)
        rocm = rr.SYS_TO_ROCM.get(version or "")
        return release_from_version(rocm, f"{Path(path).name} --version ({version})") if rocm else None

    def help(self, *args: str) -> ToolHelp:
        """Its options; from 1.6.0 `--help` lists the essential ones and topics, `--help=all` every one."""
        listed = super().help(*args)
        if listed.says("--help=all"):
            return tool_help(self.argv0(), (*args, "--help=all"))
        return listed

    def check(self, config: Config) -> None:
        self._options()

    def _options(self) -> list[str]:
        """The options and their values before "--" (the output folder is filled in by wrap_argv)."""
        listed = self.help()
        output = self.need(listed, "--output", "-o", purpose="to write into the run's folder")
        if listed.has("--output-format"):  # 1.7+: its tokens alone decide what is written
            formats = ["rocpd"] + (["proto"] if self.perfetto else [])
            shown = listed.choices.get("--output-format")
            missing = [f for f in formats if shown and f not in shown]
            if missing:
                raise self.refuse(f"lists no {' nor '.join(missing)} among --output-format's values ({', '.join(shown)})")
            return ["--output-format", *formats, output]
        return [self.need(listed, "--profile", "-P", purpose="for its wall-clock tables"),
                self.need(listed, "--trace", "-T", purpose="for its timeline (--profile alone turns it off)"), output]

    def wrap_argv(self, out_dir: Path, config: Config) -> list[str]:
        return [self.argv0(), *self._options(), str(out_dir), "--"]

    def capabilities(self) -> list[str]:
        listed = self.help()
        return [f"runner {Path(self.argv0()).name}", " ".join(self._options()) + " <dir>",
                "help by topic (--help=all)" if listed.command.endswith("--help=all") else "one --help"]

    def collect(self, out_dir: Path) -> CollectResult:
        artifacts = list_artifacts(out_dir)
        traces = [name for name in artifacts if name.endswith(".proto")]
        databases = [name for name in artifacts if name.endswith(".db")]
        if databases:  # 1.7+ with --output-format rocpd, or 1.9+'s default: rocpd.db
            steps, scope = rocpd_measured(out_dir / databases[0])
            fmt_steps = "rocpd"
            source = out_dir / databases[0]
        else:
            steps, scope = self._measured_steps(out_dir, traces)
            fmt_steps, source = "rocprof-sys-perfetto", out_dir
        if steps is not None:
            table, fmt, note = steps[0], fmt_steps, None
        else:  # the database or wall-clock tables whole, read only when nothing gives measured steps
            table, fmt, note = read_table(source)
        if table is not None:
            note = f"{note}; {scope}" if note else scope
        if traces:
            try:
                facts = self.facts()
                where = f"kernels are slices of category {facts.kernel_category} ({self.release().label})"  # type: ignore[union-attr]
            except UserError:
                where = f"kernels are slices of category {' or '.join(rr.SYS_KERNEL_CATEGORIES)}"
            view = (f"open {traces[0]} in https://ui.perfetto.dev for the timeline: {where}, "
                    "under the 'tinylab step' ranges")
            note = f"{note}; {view}" if note else view
        elif databases:
            view = f"its timeline is {databases[0]} (rocpd convert -f pftrace makes a Perfetto trace of it)"
            note = f"{note}; {view}" if note else view
        return CollectResult(artifacts, table, note, fmt, steps=steps[1] if steps else None)

    @staticmethod
    def _measured_steps(out_dir: Path, traces: list[str]) -> tuple[tuple | None, str]:
        """(the measured steps' kernel table and their count, or None; what the table covers). The
        wall-clock tables have no timestamps: only the Perfetto trace places kernels in the trainer's
        step ranges, and reading it needs the perfetto package."""
        from tinylab.analysis.formats._base import FormatError  # pandas: after the run
        from tinylab.analysis.formats.rocprof_sys import perfetto_steps
        from tinylab.core.steps import measured_kernels, step_windows

        whole = "the table covers the whole run, warm-up included"
        if not traces:
            return None, whole
        try:
            dispatches, ranges = perfetto_steps(out_dir / traces[0])
        except FormatError as exc:
            return None, f"{whole}: wall_clock has no timestamps, and the Perfetto trace cannot be read here ({exc})"
        measured = measured_kernels(*dispatches, step_windows(ranges))
        if measured is None:
            return None, f"{whole} (no roctx step ranges in {traces[0]}: the trainer marks steps on a GPU only)"
        return measured, (f"kernels of the {measured[1]} measured steps (roctx step ranges of {traces[0]}; "
                          "warm-up and start-up left out)")

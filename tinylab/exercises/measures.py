"""What a check reads: the measured values of a run (summary, config, kernel tables, timeline,
rocprof-compute, DeepSpeed, ranks), of a recorded output, and of the compiled kernels.

pandas (for kernel tables) is imported only when a check reads one.
"""

from __future__ import annotations

import dataclasses
import math
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from tinylab.exercises import checks
from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.runs.record import RunRecord
from tinylab.core.safeio import inside, read_json
from tinylab.exercises.model import Recorded, Step
from tinylab.exercises.names import (DEEPSPEED_NAMES, KERNEL_NAMES, PROFILE_NAMES, RANK_NAMES, START_NAMES,
                                     SUMMARY_NAMES, TIMELINE_NAMES, category_names)

#: The settings a check may read by name (the run's config, as it ran).
CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(RunConfig))


class Measured:
    """The values of one run that checks can read, gathered lazily (kernel tables need pandas)."""

    def __init__(self, run: RunRecord | None, role: str):
        self.run = run
        self.role = role  # "run" or "baseline run", for messages
        self.summary = run.summary if run else None
        self.start = run.start if run else None
        self.error = run.error if run else None
        self.profiles = run.profiles if run else ()
        # The start record has the config as it ran (e.g. v4's graph toggle resolved for the device).
        self.settings = (RunConfig.read(self.start.config) if self.start and self.start.config else None) or (
            run.settings if run else None)
        self._table: Any = None
        self._table_loaded = False
        self._table_problem: str | None = None  # why the kernel table could not be read
        self._counters: Any = None
        self._counters_loaded = False
        self._timeline: Any = None  # the PyTorch trace's step timeline, or why there is none (a str)
        self._timeline_loaded = False
        self._sol_tables: dict[Path, dict[str, dict[str, Any]]] = {}

    def _no_summary(self) -> str:
        if self.error:
            return f"the {self.role} failed: {self.error.type}: {self.error.message}"
        return f"the {self.role} has no summary yet (status: {self.run.status if self.run else 'not started'})"

    def value(self, name: str) -> Any:
        if name in SUMMARY_NAMES:
            if self.summary is None:
                raise checks.Missing(name, self._no_summary())
            value = self.summary.get(SUMMARY_NAMES[name][0])
            if value is None:
                raise checks.Missing(name, self._why_none(name))
            return value
        if name in START_NAMES:
            value = getattr(self.start, START_NAMES[name][0]) if self.start else None
            if value is None:
                raise checks.Missing(name, f"the {self.role} has no start record")
            return value
        if name in KERNEL_NAMES or name in category_names():
            return self._kernel_value(name)
        if name in DEEPSPEED_NAMES:
            return self._deepspeed_value(name)
        if name in TIMELINE_NAMES:
            return self._timeline_value(name)
        if name in PROFILE_NAMES:
            return self._profile_value(name)
        if name in RANK_NAMES:
            return self._rank_value(name)
        if name in CONFIG_FIELDS:
            value = getattr(self.settings, name) if self.settings else None
            if name == "fault":
                return value or ""
            if value is None:
                raise checks.Missing(name, f"the {self.role}'s config has no value for {name}")
            return value
        raise checks.Missing(name, f"the {self.role}'s config has no value for {name}")

    def _why_none(self, name: str) -> str:
        on_cpu = str(self.start.device if self.start else "").startswith("cpu")
        if name == "peak_mem_mb" and on_cpu:
            return "CPU runs track no device memory"
        if name in ("fwd_ms", "bwd_ms", "opt_ms") and self.settings and self.settings.cuda_graph:
            return "a whole-step graph replay cannot be split into phases (run with --no-cuda-graph)"
        if name == "mfu":
            return "no peak rate is known for this device and precision"
        return f"the {self.role} did not record it"

    def _rank_value(self, name: str) -> Any:
        ranks = self.run.ranks if self.run else ()
        if len(ranks) < 2:
            raise checks.Missing(name, f"the {self.role} is not a run of several ranks (--nproc-per-node 2)"
                                       if self.summary else self._no_summary())
        if name == "ranks_in_sync":
            return self.run.ranks_in_sync
        if name == "rank_step_spread":
            steps = [r.step_ms_median for r in ranks if r.step_ms_median]
            if not steps:
                raise checks.Missing(name, f"no rank of the {self.role} recorded a median step time")
            return max(steps) / min(steps)
        phase = "fwd_ms_median" if name.endswith("fwd_ms") else "bwd_ms_median"
        if any(getattr(r, "fwd_ms_median") is None or getattr(r, phase) is None for r in ranks):
            raise checks.Missing(name, "a whole-step graph replay cannot be split into phases (run with --no-cuda-graph)")
        slowest = self.summary.slowest_rank if self.summary else None
        rank = next((r for r in ranks if r.rank == slowest), None) if name.startswith("slowest") else \
            min(ranks, key=lambda r: r.fwd_ms_median)
        if rank is None:
            raise checks.Missing(name, f"the {self.role} named no slowest rank")
        return getattr(rank, phase)

    # -- step timeline (PyTorch trace)
    def _trace(self) -> Path | None:
        from tinylab.analysis.timeline import run_trace

        return run_trace(Path(self.run.dir), self.profiles)[0] if self.run else None

    def timeline(self, name: str) -> Any:
        """The step timeline of the PyTorch trace (tinylab.analysis.timeline.analyze), parsed once."""
        if not self._timeline_loaded:
            self._timeline_loaded = True
            from tinylab.analysis.timeline import analyze

            try:
                trace = self._trace()  # UnsafeFile: a trace recorded outside the run folder
                if trace is None:
                    self._timeline = f"the {self.role} has no PyTorch trace (profile it with --profile pytorch)"
                else:
                    self._timeline = analyze(trace)
            except UserError as exc:
                self._timeline = f"its trace cannot be read: {exc}"
        if isinstance(self._timeline, str):
            raise checks.Missing(name, self._timeline)
        return self._timeline

    def _timeline_value(self, name: str) -> float:
        from tinylab.analysis.timeline import idle_pct

        value = idle_pct(self.timeline(name))
        if value is None:
            raise checks.Missing(name, f"the {self.role}'s trace has no GPU events (a CPU run): no GPU to be idle")
        return value

    # -- kernel table
    def table(self):
        if not self._table_loaded:
            self._table_loaded = True
            from tinylab.analysis.hotspots import load_run_kernel_table

            try:
                loaded = load_run_kernel_table(self.run.dir) if self.run else None
            except UserError as exc:  # unreadable, or recorded outside the run folder
                loaded, self._table_problem = None, f"the {self.role}'s kernel table cannot be read: {exc}"
            self._table = loaded[0] if loaded else None
        if self._table is None:
            raise checks.Missing("kernel table", self._table_problem or self._why_no_table())
        return self._table

    def _why_no_table(self) -> str:
        notes = [p.note for p in self.profiles if p.note]
        if self.profiles:
            return f"the {self.role}'s profiler gave no kernel table" + (f" ({notes[-1]})" if notes else "")
        if self.summary is None:
            return self._no_summary()
        return f"the {self.role} was not profiled (add --profile pytorch)"

    def _timed_table(self, name: str):
        table = self.table()
        if not table["total_ns"].notna().any():
            raise checks.Missing(name, f"the {self.role}'s kernel table has no durations, only call counts")
        return table

    def _kernel_value(self, name: str) -> Any:
        table = self.table()
        if name == "kernel_count":
            return len(table)
        if name == "kernel_launches":
            return int(table["calls"].sum())
        if name.endswith("_calls"):
            return int(table.loc[table["category"] == name[: -len("_calls")], "calls"].sum())
        table = self._timed_table(name)
        if not len(table):
            raise checks.Missing(name, f"the {self.role}'s kernel table is empty")
        top = table.iloc[0]
        if name == "top_kernel_name":
            return str(top["name"])
        if name == "top_kernel_category":
            return str(top["category"])
        if name == "top_kernel_pct":
            return float(top["pct"])
        if name == "kernel_total_ms":
            return float(table["total_ns"].sum()) / 1e6
        category = name.rsplit("_", 1)[0]
        rows = table[table["category"] == category]
        if name.endswith("_ms"):
            return float(rows["total_ns"].sum()) / 1e6
        return float(rows["pct"].sum())

    def _profile_value(self, name: str) -> int:
        if name == "counter_passes":
            counted = [p.passes for p in self.profiles if p.passes]
            if not counted:
                raise checks.Missing(name, f"the {self.role} was not profiled by a tool that re-runs the program "
                                           "(rocprof-compute)" if self.summary else self._no_summary())
            return max(counted)
        tabled = [p for p in self.profiles if p.kernel_table]
        if not tabled:
            self.table()  # says why there is no table
        steps = tabled[-1].steps if tabled else None
        if steps is None:
            raise checks.Missing(name, f"the {self.role}'s profile does not say which steps its kernel table covers "
                                       "(rocprofv3 needs the trainer's roctx step ranges: a GPU run)")
        return steps

    # -- hardware counters (rocprof-compute)
    def counters(self, name: str):
        """Per-kernel counters and roofline of the rocprof-compute workload (tinylab.analysis.formats.rocprof_compute)."""
        if not self._counters_loaded:
            self._counters_loaded = True
            from tinylab.analysis.formats.rocprof_compute import kernel_roofline

            self._counters = kernel_roofline(self.workload) if self.workload else None
        if self._counters is None or not len(self._counters):
            raise checks.Missing(name, f"the {self.role} has no rocprof-compute counters (profile it with "
                                       "--profile rocprof-compute on an AMD GPU)")
        return self._counters

    def _profile_root(self) -> Path | None:
        """The rocprof-compute profile folder: its workload/ and analyze/."""
        return Path(self.run.dir) / "profiles" / "rocprof-compute" if self.run else None

    @cached_property
    def workload(self) -> Path | None:
        """The rocprof-compute workload folder (pmc_perf.csv, timestamps.csv) of the profile, found once."""
        from tinylab.analysis.formats.rocprof_compute import find_workload

        root = self._profile_root()
        return find_workload(root) if root else None

    @cached_property
    def sol_kernels(self) -> list[tuple[str, Path, float]]:
        """(kernel name, folder, the kernel's total dispatch time in the workload) of every kernel with a
        speed-of-light table; the profile is read once."""
        from tinylab.analysis.formats.rocprof_compute import analyzed_kernels, kernel_totals

        root = self._profile_root()
        found = analyzed_kernels(root / "analyze") if root else []
        totals = kernel_totals(self.workload) if found and self.workload else {}
        return [(name, folder, totals.get(name, 0.0)) for name, folder in found]

    def _sol_table(self, folder: Path) -> dict[str, dict[str, Any]]:
        if folder not in self._sol_tables:
            from tinylab.analysis.formats.rocprof_compute import read_speed_of_light

            self._sol_tables[folder] = read_speed_of_light(folder)
        return self._sol_tables[folder]

    def speed_of_light(self, fname: str, sel: str, metric: str) -> float:
        """sol_pct/sol_value: "Pct of Peak" or "Avg" of `metric` in the speed-of-light table of the
        analyzed kernel with the most time among those whose name contains `sel` or whose category is `sel`."""
        from tinylab.core.names import short_name

        call = f"{fname}({sel!r}, {metric!r})"
        found = self.sol_kernels
        if not found:
            raise checks.Missing(call, f"the {self.role} has no rocprof-compute speed-of-light tables (profile it "
                                       "with --profile rocprof-compute on an AMD GPU)")
        chosen = [kernel for kernel in found if _selects(sel, kernel[0])]
        if not chosen:
            analyzed = ", ".join(short_name(name) for name, _, _ in found)
            raise checks.Missing(call, f"no analyzed kernel of the {self.role} matches {sel!r} (analyzed: {analyzed})")
        name, folder, _ = max(chosen, key=lambda kernel: kernel[2])
        row = self._sol_table(folder).get(metric.strip().lower())
        if row is None:
            raise checks.Missing(call, f"{short_name(name)}: its speed-of-light table has no metric {metric!r}")
        value = row["pct" if fname == "sol_pct" else "value"]
        if value is None:
            raise checks.Missing(call, f"{short_name(name)}: rocprof-compute left {row['metric']!r} empty")
        return value

    def counter_function(self, fname: str, sel: str) -> Any:
        """top_bound/top_intensity/top_bw_pct/top_flops_pct of the kernel with the most time among those
        whose name contains `sel` or whose category is `sel`."""
        from tinylab.analysis.formats.rocprof_compute import roofline_disabled

        call = f"{fname}({sel!r})"
        table = self.counters(call)
        disabled = roofline_disabled(self.workload) if fname != "top_intensity" and self.workload else None
        if disabled:  # no ceilings for any kernel: nothing a run here could change
            raise checks.Unsupported(call, disabled)
        chosen = table[[_selects(sel, n) for n in table["name"]]]
        if not len(chosen):
            raise checks.Missing(call, f"no kernel of the {self.role}'s counters matches {sel!r}")
        top = chosen.iloc[0]  # sorted by time
        column = {"top_bound": "bound", "top_intensity": "intensity", "top_bw_pct": "bw_pct",
                  "top_flops_pct": "flops_pct"}[fname]
        value = top[column]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            if fname == "top_intensity":
                raise checks.Missing(call, f"{top['name'][:60]}: no FLOP or HBM counters for it")
            raise checks.Missing(call, f"{top['name'][:60]}: no measured ceilings: rocprof-compute ran without "
                                       "its roofline benchmark (--no-roof)")
        if fname in ("top_bw_pct", "top_flops_pct") and bool(top["above_peak"]):
            raise checks.Missing(call, f"{top['name'][:60]} measured above its peak ({value:.0f}%): past a "
                                       "physical limit, so its counters or timing are off; not shown")
        return str(value) if fname == "top_bound" else float(value)

    def files(self, part: str) -> int:
        return sum(part.lower() in name.lower() for p in self.profiles for name in p.artifacts)

    def _deepspeed_value(self, name: str) -> float:
        event = next((p for p in reversed(self.profiles) if p.tool == "deepspeed"), None)
        if event is None or self.run is None:
            raise checks.Missing(name, f"the {self.role} was not profiled with --profile deepspeed")
        relative = event.artifacts.get("flops.json")
        try:
            report = read_json(inside(Path(self.run.dir), relative))  # never a file outside the run
            value = report[DEEPSPEED_NAMES[name][0]]
        except (TypeError, OSError, ValueError, KeyError, UserError):
            raise checks.Missing(name, f"the {self.role}'s DeepSpeed profile has no flops.json value"
                                 + (f" ({event.note})" if event.note else "")) from None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise checks.Missing(name, f"the {self.role}'s DeepSpeed profile recorded {value!r}")
        return value * 1e3 if name == "deepspeed_fwd_ms" else value

    def region_share(self, kernel: str, region: str) -> float:
        """region_pct: the share (%) of the cycles proton's instrumentation measured in the regions of
        the kernel whose name contains `kernel` that were spent in `region`."""
        call = f"region_pct({kernel!r}, {region!r})"
        event = next((p for p in reversed(self.profiles) if p.tool == "proton"), None)
        if event is None or self.run is None:
            raise checks.Missing(call, f"the {self.role} was not profiled with --profile proton "
                                       "--proton-backend instrumentation" if self.summary else self._no_summary())
        from tinylab.analysis.formats.proton import load_hatchet
        from tinylab.core.profile_files import HATCHET

        relative = event.artifacts.get(HATCHET)
        if relative is None:
            raise checks.Missing(call, f"the {self.role}'s proton profile wrote no {HATCHET}"
                                 + (f" ({event.note})" if event.note else ""))
        try:
            regions = load_hatchet(Path(self.run.dir) / relative).regions
        except UserError as exc:
            raise checks.Missing(call, str(exc)) from None
        kernels = [name for name in regions if kernel.lower() in name.lower()]
        if not kernels:
            raise checks.Missing(call, f"no kernel of the {self.role} matching {kernel!r} has measured regions "
                                       "(was it profiled with --proton-backend instrumentation?)")
        cycles: dict[str, float] = {}
        for name in kernels:
            for part, value in regions[name].items():
                cycles[part] = cycles.get(part, 0.0) + value
        total = sum(cycles.values())
        if region not in cycles or total <= 0:
            raise checks.Missing(call, f"{kernels[0]} has no region {region!r} (its regions: {', '.join(sorted(cycles))})")
        return 100.0 * cycles[region] / total

    def kernel_function(self, fname: str, part: str, *more: str) -> Any:
        if fname == "region_pct":
            return self.region_share(part, *more)
        if fname.startswith("sol_"):
            return self.speed_of_light(fname, part, *more)
        if fname.startswith("top_"):
            return self.counter_function(fname, part)
        if fname == "profile_files":
            return self.files(part)
        table = self.table()
        rows = table[table["name"].str.lower().str.contains(part.lower(), regex=False)]
        if fname == "kernel_calls":
            return int(rows["calls"].sum())
        self._timed_table(f"{fname}({part!r})")
        if fname == "kernel_ms":
            return float(rows["total_ns"].sum()) / 1e6
        return float(rows["pct"].sum())


def _selects(sel: str, name: str) -> bool:
    """A run function's kernel selector: `sel` is part of the kernel's name (any case) or its category."""
    from tinylab.core.categories import categorize

    return sel.lower() in name.lower() or categorize(name) == sel


class RecordedOutput(Measured):
    """A step's recorded output, read as a run's profile: its kernel table and, for a rocprof-compute
    workload, its counters; it has no summary, config or start record."""

    def __init__(self, recorded: Recorded):
        super().__init__(None, "recorded output")
        self.recorded = recorded

    def value(self, name: str) -> Any:
        if name in KERNEL_NAMES or name in category_names():
            return self._kernel_value(name)
        if name in TIMELINE_NAMES:
            return self._timeline_value(name)
        raise checks.Missing(name, "a recorded output has only a kernel table")

    def _trace(self) -> Path | None:
        return self.recorded.path if self.recorded.path.is_file() else None

    def table(self):
        if not self._table_loaded:
            self._table_loaded = True
            from tinylab.analysis.hotspots import load_kernel_table

            try:
                self._table = load_kernel_table(self.recorded.path)[0]
            except UserError as exc:
                raise checks.Missing("kernel table", f"the recorded output cannot be read: {exc}") from None
        return self._table

    def _profile_root(self) -> Path | None:
        return self.recorded.path

    def files(self, part: str) -> int:
        return sum(part.lower() in p.name.lower() for p in self.recorded.path.rglob("*")) \
            if self.recorded.path.is_dir() else int(part.lower() in self.recorded.path.name.lower())


def _role(fname: str) -> str:
    """Whose kernels an anatomy function reads: the "baseline"'s (baseline.compiled_regs) or the "run"'s."""
    return "baseline" if fname.startswith(checks.BASELINE) else "run"


class Compiled:
    """The kernels a step's `on = "anatomy"` checks read (tinylab.anatomy), compiled on this
    machine for the targets they name, through the cache `tinylab kernels` fills. The checks'
    arguments are literals, so every compile the step needs runs at the first value asked for,
    in one pool; a kernel is the variant the role's step launches (Anatomy.launched_by)."""

    def __init__(self, step: Step, configs: dict[str, RunConfig], pool: Callable[[], Any] | None):
        self.configs = configs
        self.pool = pool
        self.calls = list(dict.fromkeys(
            (_role(fname), args) for spec in step.checks if spec.on == "anatomy"
            for fname, args in checks.anatomy_calls(checks.parse(spec.expr))
        ))
        self._found: dict[tuple, Any] | None = None

    def function(self, fname: str, *args: Any) -> Any:
        role = _role(fname)
        call = f"{fname}({', '.join(repr(a) if isinstance(a, str) else f'{a:g}' for a in args)})"
        if self._found is None:
            self._found = self._compile()
        found = self._found.get((role, args), f"the step's {role} has no compiled kernels")
        if isinstance(found, str):
            raise checks.Missing(call, found)
        if not found.ok:
            raise checks.Missing(call, f"it does not compile for {args[1]}: {found.error}")
        return _compiled_value(checks.base_name(fname), found)

    def _compile(self) -> dict[tuple, Any]:
        """(role, arguments) -> the KernelReport, or why there is none (one line)."""
        from tinylab.anatomy import Pool, analyze
        from tinylab.anatomy.launches import planned_config

        found: dict[tuple, Any] = {}
        shapes: dict[str, list[str]] = {}  # roles whose configs launch at the same sizes share a compile
        for role, cfg in self.configs.items():
            shapes.setdefault(planned_config(cfg).to_json(), []).append(role)
        with (self.pool or Pool)() as pool:
            for roles in shapes.values():
                calls = [(role, args) for role, args in self.calls if role in roles]
                if not calls:
                    continue
                try:
                    anatomy = analyze(self.configs[roles[0]], list(dict.fromkeys(a[1] for _, a in calls)),
                                      kernels=sorted({a[0] for _, a in calls}), pool=pool)
                except Exception as exc:  # a failed plan or worker is the checks' missing value, not a crash
                    found.update(dict.fromkeys(calls, str(exc) if isinstance(exc, UserError)
                                               else f"compiling failed: {type(exc).__name__}: {exc}"))
                    continue
                found.update(self._reports(anatomy, calls, pool))
        return found

    def _reports(self, anatomy: Any, calls: list[tuple], pool: Any) -> dict[tuple, Any]:
        from tinylab.anatomy import sweep

        found: dict[tuple, Any] = {}
        sweeps: dict[tuple, dict[int, list[tuple]]] = {}  # (variant, target, param) -> value -> calls
        for role, args in calls:
            kernel, target, *swept = args
            try:
                variant = anatomy.launched_by(kernel, self.configs[role])
            except UserError as exc:
                found[(role, args)] = str(exc)
                continue
            if not swept:
                found[(role, args)] = variant.reports[target]
            elif swept[1] != int(swept[1]):
                found[(role, args)] = f"{swept[0]} takes an integer, not {swept[1]:g}"
            else:
                sweeps.setdefault((variant.name, target, swept[0]), {}).setdefault(int(swept[1]), []).append((role, args))
        for (name, target, param), by_value in sweeps.items():
            try:
                points = sweep(anatomy, name, param, list(by_value), targets=[target], pool=pool)
            except UserError as exc:
                found.update(dict.fromkeys([c for group in by_value.values() for c in group], str(exc)))
                continue
            for point in points:
                found.update(dict.fromkeys(by_value[point.value], point.report))
        return found


def _compiled_value(fname: str, report: Any) -> Any:
    """What an anatomy function reads of a KernelReport (see the exercises README)."""
    r = report.registers
    if fname == "compiled_regs":  # what one lane (AMD: VGPRs and AGPRs) or thread holds
        return report.lane_registers
    if fname == "compiled_lds":
        return report.lds
    if fname == "compiled_spills":  # AMD: registers spilled; NVIDIA: bytes of spill stores
        return report.spills["VGPR"] + report.spills["SGPR"] if "VGPR" in r else report.spills["stores"]
    if fname == "compiled_occupancy":
        return report.occupancy.value
    return report.occupancy.limiter

"""The anatomy of a training step's Triton kernels: plan every launch of v3 and v4 for each target,
compile each distinct one, and gather registers, LDS, spills and occupancy per kernel and target.

The CLI (`tinylab kernels`) and the lab are two faces over `analyze`, `sweep`, `stage_text` and
`known_targets`; all work runs in a `pool.Pool` and is kept in a `cache.Cache`, so a repeated
call reads everything back without starting a process or importing torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Callable, Iterator

from tinylab.anatomy.cache import Cache
from tinylab.anatomy.compile import STAGES, KernelReport, compile_key, compile_launch, probe_target, sass
from tinylab.anatomy.launches import (
    FORMAT, OPTION_DEFAULTS, Launch, TensorArg, describe, plan_key, plan_scenario, scenario_of, scenarios,
)
from tinylab.anatomy.pool import Pool
from tinylab.anatomy.targets import TARGETS, Target, get_target
from tinylab.config import RunConfig
from tinylab.core.errors import UserError


@dataclass(frozen=True)
class Progress:
    """One finished job: ``done`` of ``total`` in ``phase`` ("planning", "compiling" or
    "probing"); ``what`` names the job (a target, or kernel @ target)."""

    phase: str
    done: int
    total: int
    what: str


ProgressFn = Callable[[Progress], None]


@dataclass
class Variant:
    """One kernel as one site of the step launches it, on every target.

    ``name`` is the kernel's short name, numbered (``rmsnorm_bwd.2``) when the step launches it
    in several distinct ways; ``scenarios`` are the planned steps that launch it (see
    launches.scenarios); ``summary`` says what sets it apart from the kernel's other variants
    (parameters equal on every target: dtypes, flags, strides); ``launches`` and ``reports``
    are per target.
    """

    name: str
    kernel: str
    scenarios: tuple[str, ...]
    summary: str
    launches: dict[str, Launch]
    reports: dict[str, KernelReport] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "kernel": self.kernel,
            "scenarios": list(self.scenarios),
            "summary": self.summary,
            "targets": {
                t: {"launch": self.launches[t].to_json(), "report": self.reports[t].to_json()} for t in self.launches
            },
        }


@dataclass
class Anatomy:
    """What `analyze` found: the config, the targets compiled for (and those skipped, with
    why), and every kernel variant with its launch and report per target."""

    config: RunConfig
    targets: list[Target]
    skipped: dict[str, str]
    variants: list[Variant]

    def variants_of(self, name: str) -> list[Variant]:
        """The variants of kernel ``name`` (attn_fwd, rmsnorm_bwd), or the variant called
        ``name`` (rmsnorm_bwd.2); UserError naming the kernels when there is none."""
        found = [v for v in self.variants if name in (v.name, v.name.rsplit(".", 1)[0])]
        if not found:
            kernels = sorted({v.name.rsplit(".", 1)[0] for v in self.variants})
            raise UserError(f"unknown kernel {name!r}: choose one of {', '.join(kernels)}")
        return found

    def profiled(self, name: str) -> list[Variant]:
        """The variants of the kernel a profiler lists as ``name``: Triton names a GPU kernel
        after its jit function (``_attn_fwd_kernel``); its short name (``attn_fwd``) works too."""
        return [v for v in self.variants if name in (v.kernel.split(":")[1], v.name.rsplit(".", 1)[0])]

    def launched_by(self, name: str, cfg: RunConfig) -> Variant:
        """The variant of kernel ``name`` that a training step of ``cfg`` launches (its version,
        toggles, fault and determinism pick the planned step: launches.scenario_of); UserError
        when no planned step is like ``cfg``'s or that step does not launch the kernel."""
        label = scenario_of(cfg)
        if label is None:
            raise UserError(f"no planned step launches what a {cfg.version} step with these toggles does")
        found = [v for v in self.variants_of(name) if label in v.scenarios]
        if not found:
            raise UserError(f"{label} does not launch {name}")
        if len(found) > 1:
            raise UserError(f"{label} launches {name} in {len(found)} ways: name one of {', '.join(v.name for v in found)}")
        return found[0]

    def variant(self, name: str) -> Variant:
        """The one variant ``name`` designates; UserError naming the choices otherwise."""
        found = self.variants_of(name)
        if len(found) > 1:
            raise UserError(f"kernel {name!r} is launched in {len(found)} ways: choose one of {', '.join(v.name for v in found)}")
        return found[0]

    def to_json(self) -> dict:
        from importlib.metadata import version

        return {
            "config": self.config.to_dict(),
            "triton": version("triton"),
            "targets": [dataclasses.asdict(t) | {"occupancy_unit": t.occupancy_unit} for t in self.targets],
            "skipped_targets": self.skipped,
            "kernels": [v.to_json() for v in self.variants],
        }


# ------------------------------------------------------------------------------------ jobs
def _plan_job(cfg_json: str, target_name: str) -> dict[str, list[dict]]:
    """Worker: every scenario's launches for one target, as JSON."""
    target = get_target(target_name)
    return {
        label: [launch.to_json() for launch in plan_scenario(cfg, target)]
        for label, cfg in scenarios(RunConfig.from_dict(json.loads(cfg_json))).items()
    }


@contextlib.contextmanager
def _pool(pool: Pool | None) -> Iterator[Pool]:
    """The caller's pool (kept open for its next call), or a new one closed on exit."""
    if pool is not None:
        yield pool
    else:
        with Pool() as own:
            yield own


def _resolve_targets(names: list[str] | None) -> list[Target]:
    if not names:
        return list(TARGETS.values())
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise UserError(f"unknown target {unknown[0]!r}: choose from {', '.join(TARGETS)}")
    return [TARGETS[n] for n in dict.fromkeys(names)]


def known_targets(targets: list[Target], cache: Cache, pool: Pool, progress: ProgressFn | None = None) -> dict[str, str]:
    """Which of ``targets`` the installed Triton cannot compile for: name -> why (one line).
    Learned by compiling a trivial kernel once per target and Triton version (cached)."""
    from importlib.metadata import version

    keys = {t.name: f"probe-{FORMAT}-{t.name}-{version('triton')}" for t in targets}
    answers = {t.name: cache.get_json(keys[t.name]) for t in targets}
    missing = [(t.name,) for t in targets if answers[t.name] is None]
    for done, total, (name,), why in pool.run(probe_target, missing, keys=[keys[name] for (name,) in missing]):
        answers[name] = {"error": why}
        cache.put_json(keys[name], answers[name])
        if progress:
            progress(Progress("probing", done, total, name))
    return {name: a["error"] for name, a in answers.items() if a["error"] is not None}


def _plans(cfg: RunConfig, targets: list[Target], cache: Cache, pool: Pool, progress: ProgressFn | None) -> dict[str, dict[str, list[Launch]]]:
    """target -> scenario -> launches in order (planned in workers, cached)."""
    keys = {t.name: plan_key(cfg, t) for t in targets}
    raw = {t.name: cache.get_json(keys[t.name]) for t in targets}
    jobs = [(cfg.to_json(), t.name) for t in targets if raw[t.name] is None]
    for done, total, (_, name), plan in pool.run(_plan_job, jobs, keys=[keys[name] for _, name in jobs]):
        raw[name] = plan
        cache.put_json(keys[name], plan)
        if progress:
            progress(Progress("planning", done, total, name))
    return {name: {label: [Launch.from_json(d) for d in seq] for label, seq in plan.items()} for name, plan in raw.items()}


def _variants(plans: dict[str, dict[str, list[Launch]]], targets: list[Target]) -> list[Variant]:
    """Group the launch sites of every scenario into variants (see Variant): two sites are the
    same variant when they launch the same thing on every target."""
    names = [t.name for t in targets]
    first = plans[names[0]]
    groups: dict[tuple[str, ...], list] = {}
    for label, launches in first.items():
        for i in range(len(launches)):
            per_target = [plans[t][label][i] for t in names]
            if len({(lc.kernel, len(plans[t][label])) for lc, t in zip(per_target, names)}) != 1:
                raise RuntimeError(f"scenario {label!r} launches different kernels on {', '.join(names)}")
            group = groups.setdefault(tuple(lc.key() for lc in per_target), [per_target, []])
            if label not in group[1]:
                group[1].append(label)
    by_kernel: dict[str, list] = {}
    for per_target, labels in groups.values():
        by_kernel.setdefault(per_target[0].kernel, []).append((per_target, labels))
    out = []
    for kernel, members in by_kernel.items():
        # parameters equal on every target, per variant; the ones that differ between variants
        fixed = []
        for per_target, _ in members:
            params = [dict(lc.params) for lc in per_target]
            fixed.append({k: v for k, v in params[0].items() if all(p.get(k) == v for p in params[1:])})
        telling = [k for k in fixed[0] if len({repr(f.get(k)) for f in fixed}) > 1]
        # flags and sizes first, then dtypes, then the specialized scalars (strides)
        constexprs = set(members[0][0][0].constexprs)
        rank = {k: 0 if k in constexprs else 1 if isinstance(fixed[0][k], TensorArg) else 2 for k in telling}
        telling.sort(key=lambda k: rank[k])
        for i, ((per_target, labels), params) in enumerate(zip(members, fixed), 1):
            short = per_target[0].name
            summary = " ".join(f"{k}={params[k] if k in constexprs else describe(params[k])}" for k in telling if k in params)
            out.append(Variant(
                f"{short}.{i}" if len(members) > 1 else short, kernel, tuple(labels), summary,
                dict(zip(names, per_target)),
            ))
    return out


def _compile_all(pairs: list[tuple[Launch, Target]], cache: Cache, pool: Pool, progress: ProgressFn | None, label: Callable[[Launch], str]) -> dict[str, KernelReport]:
    """compile_key -> report for every (launch, target), compiling only what the cache lacks."""
    reports: dict[str, KernelReport] = {}
    jobs: dict[str, tuple[Launch, str]] = {}
    for launch, target in pairs:
        key = compile_key(launch, target)
        if key in reports or key in jobs:
            continue
        cached = cache.get_report(key)
        if cached is not None:
            reports[key] = KernelReport.from_json(cached)
        else:
            jobs[key] = (launch, target.name)
    keys = {id(job): key for key, job in jobs.items()}
    for done, total, job, (report, stages) in pool.run(compile_launch, jobs.values(), keys=jobs.keys()):
        key = keys[id(job)]
        cache.put_kernel(key, report, stages)
        reports[key] = KernelReport.from_json(report)
        if progress:
            progress(Progress("compiling", done, total, f"{label(job[0])} @ {job[1]}"))
    return reports


# ------------------------------------------------------------------------------- public API
def analyze(
    cfg: RunConfig,
    targets: list[str] | None = None,
    *,
    kernels: list[str] | None = None,
    cache: Cache | None = None,
    pool: Pool | None = None,
    progress: ProgressFn | None = None,
) -> Anatomy:
    """Plan and compile every Triton kernel that v3 and v4 launch at ``cfg``'s model size and
    precision, for ``targets`` (default: all of TARGETS that the installed Triton knows).
    ``kernels`` (kernel or variant names) compiles only those kernels' variants. ``progress``
    is called as each job finishes. Raises UserError on an unknown target or kernel."""
    cache = cache or Cache()
    with _pool(pool) as pool:
        wanted = _resolve_targets(targets)
        skipped = known_targets(wanted, cache, pool, progress)
        if targets and skipped:
            name, why = next(iter(skipped.items()))
            raise UserError(f"target {name} is unknown to the installed Triton: {why}")
        usable = [t for t in wanted if t.name not in skipped]
        plans = _plans(cfg, usable, cache, pool, progress)
        anatomy = Anatomy(cfg, usable, skipped, _variants(plans, usable))
        if kernels is not None:
            anatomy.variants = list({id(v): v for k in kernels for v in anatomy.variants_of(k)}.values())
        names = {lc.key(): v.name for v in anatomy.variants for lc in v.launches.values()}
        pairs = [(lc, get_target(t)) for v in anatomy.variants for t, lc in v.launches.items()]
        reports = _compile_all(pairs, cache, pool, progress, lambda lc: names[lc.key()])
        for v in anatomy.variants:
            v.reports = {t: reports[compile_key(lc, get_target(t))] for t, lc in v.launches.items()}
    return anatomy


def tunable(launch: Launch, target: Target) -> list[str]:
    """The parameters a sweep may vary for a launch on a target: its integer constexprs, block
    sizes first (then sizes such as rows per program or the head dimension), and the launch
    options Triton's backend for the target takes."""
    ints = [k for k, v in launch.params if k in launch.constexprs and isinstance(v, int) and not isinstance(v, bool)]
    return sorted(ints, key=lambda k: not k.startswith("BLOCK")) + list(OPTION_DEFAULTS[target.vendor])


# What a sweep of a launch option tries when no values are given: the range its backend takes
# and a kernel of this size uses (Triton's HIPOptions and CUDAOptions; kpack 2 and 32x32
# matrix-core instructions are CDNA's alternatives to the defaults).
OPTION_SWEEPS = {
    "num_warps": (1, 2, 4, 8, 16),
    "num_stages": (1, 2, 3, 4),
    "waves_per_eu": (0, 1, 2, 3, 4),
    "kpack": (1, 2),
    "matrix_instr_nonkdim": (0, 16, 32),
}


def sweep_values(launch: Launch, target: Target, param: str) -> list[int]:
    """The values a sweep of ``param`` tries when none are given: a launch option's range
    (OPTION_SWEEPS); a power of two (a block size) from a quarter to four times the value the
    step launches; any other integer halved and doubled. UserError when ``param`` is not
    tunable (see `tunable`)."""
    allowed = tunable(launch, target)
    if param not in allowed:
        raise UserError(f"cannot sweep {param!r} on {target.name}: choose one of {', '.join(allowed)}")
    if param in OPTION_SWEEPS:
        return list(OPTION_SWEEPS[param])
    shipped = launch.option(param, target.vendor)
    if shipped > 0 and shipped & (shipped - 1) == 0:
        return [v for v in (shipped >> 2, shipped >> 1, shipped, shipped << 1, shipped << 2) if v >= 1]
    return list(dict.fromkeys([max(1, shipped // 2), shipped, shipped * 2]))


@dataclass(frozen=True)
class SweepPoint:
    """One value of a swept parameter on one target (``shipped``: the value the step uses)."""

    value: int
    target: str
    shipped: bool
    report: KernelReport


def sweep(
    anatomy: Anatomy,
    variant: str,
    param: str,
    values: list[int],
    *,
    targets: list[str] | None = None,
    cache: Cache | None = None,
    pool: Pool | None = None,
    progress: ProgressFn | None = None,
) -> list[SweepPoint]:
    """Recompile one variant of ``anatomy`` with ``param`` set to each of ``values`` on each of
    its targets (or of ``targets`` among them); UserError when ``param`` is not tunable there
    (see `tunable`)."""
    cache = cache or Cache()
    chosen = anatomy.variant(variant)
    swept = [t for t in anatomy.targets if targets is None or t.name in targets]
    if targets is not None and len(swept) != len(set(targets)):
        raise UserError(f"target {sorted(set(targets) - {t.name for t in swept})[0]!r} was not compiled: choose from "
                        f"{', '.join(t.name for t in anatomy.targets)}")
    for t in swept:
        allowed = tunable(chosen.launches[t.name], t)
        if param not in allowed:
            raise UserError(f"cannot sweep {param!r} of {chosen.name} on {t.name}: choose one of {', '.join(allowed)}")
    bad = [v for v in values if param == "num_warps" and not (v > 0 and v & (v - 1) == 0)]
    if bad:  # Triton's backends assert it before compiling, in the worker: a traceback, not a failed row
        raise UserError(f"num_warps={bad[0]}: num_warps must be a power of two (1, 2, 4, 8, 16, ...)")
    points = [(value, t, chosen.launches[t.name].replace(**{param: value})) for value in values for t in swept]
    with _pool(pool) as pool:
        reports = _compile_all([(lc, t) for _, t, lc in points], cache, pool, progress, lambda lc: f"{chosen.name} {param}={dict(lc.params)[param]}")
    shipped = {t: lc.option(param, get_target(t).vendor) for t, lc in chosen.launches.items()}
    return [SweepPoint(value, t.name, shipped[t.name] == value, reports[compile_key(lc, t)]) for value, t, lc in points]


def stage_text(anatomy: Anatomy, variant: str, target: str, stage: str, *, cache: Cache | None = None, pool: Pool | None = None) -> str:
    """The text of one compilation stage (ttir, ttgir, llir, amdgcn; ptx, sass on NVIDIA) of a
    variant on a target, compiling it first if the cache lacks it."""
    cache = cache or Cache()
    chosen = anatomy.variant(variant)
    if target not in chosen.launches:
        raise UserError(f"target {target!r} was not compiled: choose one of {', '.join(chosen.launches)}")
    t = get_target(target)
    if stage not in STAGES[t.vendor]:
        raise UserError(f"{target} has no stage {stage!r}: choose one of {', '.join(STAGES[t.vendor])}")
    launch = chosen.launches[target]
    key = compile_key(launch, t)
    kept = cache.get_report(key)
    if kept is None:
        with _pool(pool) as pool:
            _compile_all([(launch, t)], cache, pool, None, lambda lc: chosen.name)
    elif not kept.get("error") and cache.get_stage(key, "ttir") is None:
        # a report kept without its stages (as the tests seed their slowest compiles): compile
        # it again for them
        with _pool(pool) as pool:
            for *_, (_, stages) in pool.run(compile_launch, [(launch, t.name)], keys=[key]):
                for name, content in stages.items():
                    cache.add_stage(key, name, content)
    text = cache.get_stage(key, stage)
    if text is None and stage == "sass" and (cubin := cache.get_blob(key, "cubin")) is not None:
        text = sass(cubin)
        cache.add_stage(key, "sass", text)
    if text is None:
        raise UserError(f"{chosen.name} did not compile for {target}: {cache.get_report(key)['error']}")
    return text

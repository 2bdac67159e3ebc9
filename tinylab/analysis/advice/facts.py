"""Read what a run recorded into Facts, once, for every rule: its record and step events, the
anatomy of its profiled step (its PyTorch trace), its kernel table, its roofline when the card's
ceilings are known, and a compiled kernel anatomy when one is given.

A profile that cannot be read is a fact too (Facts.capture_problem, which the empty-capture rule
reports), never an exception: advice on the rest of the run still stands.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from tinylab.analysis.advice.model import Facts
from tinylab.core.errors import UserError
from tinylab.core.eventlog import EventLog
from tinylab.core.events import StepEvent

#: The anatomy's compile target of a card, by device-name substring (first match wins).
TARGET_BY_CARD = (("GH200", "sm_90"), ("H100", "sm_90"), ("H200", "sm_90"), ("A100", "sm_80"), ("MI300", "gfx942"),
                  ("MI325", "gfx942"), ("MI350", "gfx950"), ("MI355", "gfx950"), ("MI250", "gfx90a"),
                  ("MI210", "gfx90a"))


def target_of(device_name: str | None) -> str | None:
    """The kernel anatomy's target for a card (None: a CPU, or a card it does not compile for)."""
    lowered = (device_name or "").lower()
    return next((target for card, target in TARGET_BY_CARD if card.lower() in lowered), None)


def run_facts(run: Any, log: EventLog | None = None, *, ceilings: dict[str, Any] | None = None,
              anatomy: tuple[tuple[str, Any], ...] | None = None, anatomy_target: str | None = None) -> Facts:
    """Facts of a run of the store (tinylab.runs.store.Run). `ceilings`: the card's measured
    ceilings, for the roofline; `anatomy`: (variant, KernelReport) pairs on `anatomy_target`."""
    from tinylab.analysis.timeline import analyze, run_traces, trainer_timing

    log = run.events() if log is None else log
    record = run.record(log)
    problems: list[str] = []
    timeline, trace = None, None
    traced = run_traces(run.dir, record.profiles)
    if traced:
        rank = min(traced, key=lambda r: -1 if r is None else r)
        path, memory = traced[rank]
        trace = _relative(path, run.dir)
        try:
            analyzed = analyze(path, memory)
            ranks = tuple(sorted(r for r in traced if r is not None))
            analyzed = replace(analyzed, rank=rank, ranks=ranks,  # the run's step events are rank 0's
                               timed=None if rank else trainer_timing(log.of("step"), analyzed))
            timeline = analyzed.to_json()  # the rules read the `--json` form of each result
        except UserError as exc:
            problems.append(str(exc))
    kernels, kernel_source, kernel_steps = _kernels(run, record, problems)
    roofline = None
    if ceilings and record.summary and str(record.device or "").startswith("cuda"):
        from tinylab.analysis.roofline import for_run

        try:
            roofline = for_run(run, record, ceilings)[0].to_json()
        except (UserError, KeyError, TypeError, ValueError) as exc:
            problems.append(f"roofline: {exc}")
    profilers = record.settings.profilers if record.settings else []
    if profilers and record.status == "finished" and not record.profiles:
        problems.append(f"the run was profiled with {', '.join(profilers)} but no profile was recorded")
    return Facts(
        source=run.id, config=record.ran_config, status=record.status, device=record.device,
        device_name=record.device_name, device_memory_mb=record.start.device_memory_mb if record.start else None,
        summary=record.summary, steps=tuple(StepEvent.from_event(e) for e in log.of("step")), ranks=record.ranks,
        profiles=record.profiles, timeline=timeline, trace=trace, kernels=kernels, kernel_source=kernel_source,
        kernel_steps=kernel_steps, roofline=roofline, anatomy=anatomy, anatomy_target=anatomy_target,
        capture_problem=problems[0] if problems else None,
    )


def trace_facts(path: Path) -> Facts:
    """Facts of a PyTorch profiler trace file alone (no run around it): its step anatomy only."""
    from tinylab.core.profile_files import MEMORY_TIMELINE
    from tinylab.analysis.timeline import analyze

    path = Path(path)
    memory = path.parent / MEMORY_TIMELINE
    return Facts(source=str(path), timeline=analyze(path, memory if memory.is_file() else None).to_json(),
                 trace=path.name)


def _kernels(run: Any, record: Any, problems: list[str]) -> tuple[dict | None, str | None, int | None]:
    """The run's newest kernel table, summarized whole; its file; the steps it covers."""
    if not record.has_kernel_table:
        return None, None, None
    try:
        from tinylab.analysis.hotspots import load_run_kernel_table, summarize

        loaded = load_run_kernel_table(run.dir, record.profiles)
    except ImportError:  # pandas is optional for everything but kernel tables
        return None, None, None
    except (UserError, OSError, ValueError, KeyError) as exc:
        problems.append(f"kernel table: {exc}")
        return None, None, None
    if loaded is None:
        return None, None, None
    table, fmt = loaded
    from tinylab.analysis.roofline import steps_seen

    tool = table.attrs.get("tool")
    profile = next((p for p in reversed(record.profiles) if p.kernel_table and p.tool == tool), None)
    cfg = run.config()
    summary = record.summary
    steps = (profile.steps if profile and profile.steps else None) or steps_seen(tool, cfg, summary.steps if summary
                                                                                  else None)
    return summarize(table, None, None, fmt=fmt).to_json(), profile.kernel_table if profile else fmt, steps


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return Path(path).name


def launched_reports(anatomy: Any, cfg: Any, target: str) -> tuple[tuple[str, Any], ...]:
    """(variant, KernelReport on `target`) of every kernel a step of `cfg` launches, from a compiled
    tinylab.anatomy.Anatomy; () when no planned step is like cfg's."""
    from tinylab.anatomy.launches import scenario_of

    label = scenario_of(cfg)
    return tuple((v.name, v.reports[target]) for v in anatomy.variants
                 if label in v.scenarios and target in v.reports)

"""The advisor's use cases, for both faces through Lab: advise a run (or a trace file), launch an
advice item's action as run B against it (same sizes and seed), and check B against A's advice.

Run B carries a record of what it tries (TRIED_FILE: run A, the rule, the predicted bound), so the
verdict names the item even when its action changed more than one setting.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from tinylab.analysis.advice import Advice, Facts, advise, compare_advice, judge
from tinylab.analysis.advice.facts import launched_reports, run_facts, target_of, trace_facts
from tinylab.core.errors import UserError
from tinylab.core.versions import TABLE
from tinylab.runs.store import LIVE, TRIED_FILE, Run, RunStore, write_record

if TYPE_CHECKING:
    from tinylab.analysis.stats import Variation
    from tinylab.config import RunConfig
    from tinylab.runs.record import RunRecord


class Lab(Protocol):
    """What these use cases ask of tinylab.service.lab.Lab, which calls them with itself (named
    here, not imported: the Lab imports this module)."""

    store: RunStore

    def run(self, ref: str) -> Run: ...

    def masked(self, record: "RunRecord", progress: dict[str, Any] | None = None) -> "RunRecord": ...

    def launch(self, cfg: "RunConfig") -> Run: ...

    def kernel_study(self, cfg: "RunConfig", targets: list[str] | None = None, name: str | None = None,
                     **options: Any) -> Any: ...

    def record(self, ref: str) -> "RunRecord": ...

    def variation(self, like: "RunRecord", leave_out: Sequence[str]) -> Variation: ...

#: Files `tinylab advise PATH` reads as a PyTorch profiler trace.
TRACE_SUFFIXES = (".json", ".gz")


@dataclass(frozen=True)
class Advised:
    """A run's (or a trace's) advice: what it is about, the items, and what could not be read."""

    source: str  # the run's id or the trace's path
    title: str
    items: list[Advice]
    notes: list[str]
    facts: Facts

    def to_json(self) -> list[dict[str, Any]]:
        return [item.to_json() for item in self.items]


def advise_ref(lab: Lab, ref: str, kernels: str | bool = False) -> Advised:
    """The advice of a run (id, prefix, `last`, folder) or of a PyTorch trace file. `kernels`: also
    compile the run's Triton kernels for its card (True) or for a named target, for the rules on
    spills and occupancy."""
    path = Path(ref)
    if path.suffix in TRACE_SUFFIXES and path.is_file():
        if kernels:
            raise UserError("--kernels needs a run (its config says which kernels a step launches), not a trace file")
        facts = trace_facts(path)
        judged = judge(facts)
        return Advised(str(path), f"advice for the trace {path.name}", judged.items,
                       [*facts.timeline["notes"], *judged.notes], facts)
    try:
        run = lab.run(ref)
    except UserError as exc:  # `advise x.csv`: say what else it reads, not only what a run is
        raise UserError(f"{exc}; advise reads a run or a PyTorch profiler trace file (.json / .json.gz)") from None
    facts = run_facts_of(lab, run, kernels)
    title = (f"advice for run {facts.source} ({facts.version or '?'} {facts.config.get('precision', '?')} on "
             f"{facts.device_name or facts.device or '?'}, {facts.status})")
    judged = judge(facts)
    notes = [facts.capture_problem] if facts.capture_problem else []
    notes += judged.notes  # the rules that found something this run's contention does not let them judge
    if facts.status in LIVE:
        notes.append("the run is still running: its advice may change when it ends")
    return Advised(facts.source, title, judged.items, notes, facts)


def run_facts_of(lab: Lab, run: Run, kernels: str | bool = False) -> Facts:
    from tinylab.analysis.roofline import cached_ceilings

    log = run.events()
    record = run.record(log)
    ceilings = cached_ceilings(lab.store.root, record.device_name) if record.device_name else None
    anatomy, target = None, None
    if kernels:
        target = kernels if isinstance(kernels, str) else target_of(record.device_name)
        if target is None:
            raise UserError(f"--kernels: no compile target is known for {record.device_name or record.device}; "
                            "name one: --kernels sm_90 (or sm_80, gfx90a, gfx942, gfx950)")
        cfg = run.config()
        if not cfg.spec.triton:
            triton = " and ".join(name for name, v in TABLE.items() if v.triton)
            raise UserError(f"--kernels: run {run.id} is {cfg.version}, whose step launches no Triton kernel "
                            f"({triton} do)")
        ran = dataclasses.replace(cfg, **{k: v for k, v in record.ran_config.items()
                                           if k in ("qkv_fusion", "sdpa", "swiglu_fusion", "torch_compile",
                                                    "recompute_ffn")})
        anatomy = launched_reports(lab.kernel_study(ran, [target]).anatomy, ran, target)
    facts = run_facts(run, log, ceilings=ceilings, anatomy=anatomy, anatomy_target=target)
    # what an exercise step hides (its fault) stays hidden from the rules, so no action names it
    shown = lab.masked(record)
    return dataclasses.replace(facts, config=shown.ran_config) if shown.hidden else facts


def try_item(lab: Lab, ref: str, rule: str) -> tuple[Run, Advice]:
    """Launch run B: run A's config with the item's action applied (sizes, seed and profilers kept),
    labelled, and recording what it tries. UserError when A has no such item or it cannot be run."""
    run = lab.run(ref)
    advised = advise_ref(lab, str(run.dir))
    item = next((i for i in advised.items if i.rule == rule), None)
    if item is None:
        have = ", ".join(i.rule for i in advised.items) or "none"
        raise UserError(f"run {run.id} has no advice {rule!r} (its advice: {have})")
    if not item.action.changes:
        raise UserError(f"{rule}: its action is a change by hand, not a setting the lab can launch: {item.action.text}")
    if advised.facts.status in LIVE:
        raise UserError(f"run {run.id} is still running: try its advice once it has ended")
    cfg = dataclasses.replace(run.config(), **item.action.changes, label=f"try {rule} on {run.id}")
    b = lab.launch(cfg)
    write_record(b.dir, TRIED_FILE, {"a": run.id, "rule": rule, "bound": item.impact.bound,
                                     "metric": item.impact.metric, "predicted": item.impact.text})
    return b, item


def verdict(lab: Lab, a_ref: str, b_ref: str, variation: Variation | None = None) -> dict[str, Any]:
    """Run B against run A's advice (tinylab.analysis.advice.verdict), with both runs' ids; a timed
    gain judged as `compare` judges it, from `variation` (default: the machine's, Lab.variation)."""
    a, b = lab.run(a_ref), lab.run(b_ref)
    fa, fb = run_facts_of(lab, a), run_facts_of(lab, b)
    tried = b.tried or {}
    rule = tried.get("rule") if tried.get("a") == a.id and isinstance(tried.get("rule"), str) else None
    jb = judge(fb)
    if variation is None:
        variation = lab.variation(lab.record(a.id), (a.id, b.id))
    return {"a": a.id, "b": b.id, **compare_advice(advise(fa), jb.items, fa, fb, rule, jb.unjudged, variation)}

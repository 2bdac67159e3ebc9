"""`tinylab exercises list | show | check`: the guided scenarios from a terminal or a batch job.

`check` runs the step's preset (and its baseline first, when the step compares two runs)
through the real launcher into the run store, so the runs are also visible in `tinylab runs`
and the lab; the shared run flags override the preset. Exit status: 0 when every check that
could run passed (and at least one ran), 1 when one failed or none could run, 2 on user errors.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import textwrap
import time

from tinylab.commands._common import (
    add_runs_dir,
    print_json,
    require_device,
    store_from,
)
from tinylab.runflags import add_run_arguments

HELP = "guided debugging scenarios: list, show, check"
MARK = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the scenarios, with your progress", description="the scenarios, with your progress")
    ls.add_argument("--json", action="store_true", help="print a JSON list")
    show = sub.add_parser("show", help="a scenario, or one step of it", description="a scenario, or one step of it")
    show.add_argument("id", help="scenario id (see `tinylab exercises list`)")
    show.add_argument("--step", type=int, default=None, help="show this step (1-based)")
    show.add_argument("--hints", type=int, default=0, metavar="N", help="reveal the first N hints of the step")
    show.add_argument("--answers", action="store_true", help="reveal the answers to the step's questions")
    show.add_argument("--json", action="store_true", help="print the scenario or step as JSON")
    check = sub.add_parser(
        "check",
        help="run a step's preset and evaluate its checks",
        description="Run a step's preset (and its baseline run first, if it has one) and evaluate the step's "
        "checks on the results. Run flags given here override the preset (unset ones keep it; --profile "
        "adds a profiler); on a CPU the step's small CPU shapes apply automatically.",
    )
    check.add_argument("id", help="scenario id")
    check.add_argument("--step", type=int, required=True, help="step number (1-based)")
    check.add_argument("--verbose", "-v", action="store_true", help="stream the runs' output")
    check.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    add_runs_dir(check)
    add_run_arguments(check, with_version=False)
    # Every run flag defaults to None here, so that only the flags the learner typed override the
    # preset; the shared flags' "(default ...)" notes would then read "None", so they go.
    check.set_defaults(**{name: None for name in _override_names()}, use_amp=None, amp_dtype=None)
    for action in check._actions:
        if action.help:
            action.help = re.sub(r" \(default:? %\(default\)s\)", "", action.help)


def _override_names() -> list[str]:
    from tinylab.config import RunConfig

    return [f.name for f in dataclasses.fields(RunConfig) if f.name != "version"]


def run(args) -> int:
    return {"list": _list, "show": _show, "check": _check}[args.action](args)


# ----------------------------------------------------------------------------- list
def _list(args) -> int:
    from tinylab import exercises as ex

    progress = ex.load_progress()
    rows = [
        {
            "id": s.id,
            "title": s.title,
            "level": s.level,
            "minutes": s.minutes,
            "steps": len(s.steps),
            "steps_done": ex.steps_done(progress, s),
            "progress": f"{ex.steps_done(progress, s)}/{len(s.steps)}",
        }
        for s in ex.load_scenarios()
    ]
    if args.json:
        print_json(rows)
        return 0
    width = max((len(r["id"]) for r in rows), default=2)
    print(f"{'id':<{width}}  {'level':<12}  {'min':>3}  {'steps':>5}  {'done':>5}  title")
    for r in rows:
        print(f"{r['id']:<{width}}  {r['level']:<12}  {r['minutes']:>3}  {r['steps']:>5}  {r['progress']:>5}  {r['title']}")
    print(f"progress file: {ex.progress_path()}")
    return 0


# ----------------------------------------------------------------------------- show
def _show(args) -> int:
    from tinylab import exercises as ex

    scenario = ex.get_scenario(args.id)
    progress = ex.load_progress().get("scenarios", {}).get(scenario.id, {}).get("steps", {})
    if args.step is None:
        if args.json:
            print_json({**_scenario_json(scenario), "progress": progress})
            return 0
        print(f"{scenario.title}  [{scenario.id}]  {scenario.level}, about {scenario.minutes} min")
        print()
        print(textwrap.fill(scenario.summary, 100))
        print()
        for step in scenario.steps:
            state = progress.get(str(step.number)) or {}
            mark = "done" if state.get("passed_at") else ("tried" if state else "")
            gpu = sum(c.needs_gpu for c in step.checks)
            cpu = len(step.checks) - gpu
            print(f"  {step.number}. {step.title:<58} {cpu} CPU / {gpu} GPU checks  {mark}")
        print(f"\nnext: tinylab exercises show {scenario.id} --step 1")
        return 0
    step = ex.get_step(scenario, args.step)
    if args.json:
        print_json(_step_json(step, args.hints, args.answers))
        return 0
    print(f"{scenario.title}: step {step.number}/{len(scenario.steps)}: {step.title}\n")
    print(step.text.rstrip())
    print("\nRun:")
    print(f"  preset      {_settings(step.preset)}")
    if step.cpu_preset:
        print(f"  on a CPU    {_settings(step.cpu_preset)}")
    if step.baseline is not None:
        print(f"  baseline    {_settings(step.baseline)}  (run first, for comparison)")
    print("\nChecks:")
    for c in step.checks:
        print(f"  {c.name:<24} {c.expr}")
        print(f"  {'':<24} {c.description}" + ("  [GPU only]" if c.needs_gpu else ""))
    if step.hints:
        print(f"\nHints: {min(args.hints, len(step.hints))} of {len(step.hints)} shown (--hints N reveals more)")
        for i, hint in enumerate(step.hints[: args.hints], 1):
            print(textwrap.fill(hint, 100, initial_indent=f"  {i}. ", subsequent_indent="     "))
    if step.questions:
        print("\nQuestions:" + ("" if args.answers else " (--answers reveals the answers)"))
        for i, q in enumerate(step.questions, 1):
            print(textwrap.fill(q.prompt, 100, initial_indent=f"  {i}. ", subsequent_indent="     "))
            if args.answers:
                print(textwrap.fill(q.answer, 100, initial_indent="     -> ", subsequent_indent="        "))
                if q.explanation:
                    print(textwrap.fill(q.explanation, 100, initial_indent="        ", subsequent_indent="        "))
    print(f"\ncheck it: tinylab exercises check {scenario.id} --step {step.number}")
    return 0


def _settings(preset: dict) -> str:
    """The preset as key=value; a fault is the answer to the exercise, so its name stays hidden."""
    shown = {k: ("(hidden: the last hint names it)" if k == "fault" else v) for k, v in preset.items() if k != "label"}
    return " ".join(f"{k}={v}" for k, v in shown.items()) or "(defaults)"


def _scenario_json(scenario) -> dict:
    return {
        "id": scenario.id,
        "title": scenario.title,
        "level": scenario.level,
        "minutes": scenario.minutes,
        "summary": scenario.summary,
        "path": str(scenario.path),
        "steps": [{"number": s.number, "title": s.title} for s in scenario.steps],
    }


def _step_json(step, hints: int, answers: bool) -> dict:
    data = dataclasses.asdict(step)
    data["hints"] = step.hints[:hints]
    data["hints_total"] = len(step.hints)
    if not answers:
        data["questions"] = [{"prompt": q.prompt} for q in step.questions]
    return data


# ----------------------------------------------------------------------------- check
def _check(args) -> int:
    from tinylab import exercises as ex

    scenario = ex.get_scenario(args.id)
    step = ex.get_step(scenario, args.step)
    overrides = _overrides(args)
    device = ex.resolve_device(args.device or "auto")
    cfg = ex.step_config(step, device, overrides)
    base_cfg = ex.baseline_config(step, device, overrides)
    require_device(cfg)
    on_gpu = device.startswith("cuda")
    log = sys.stderr if args.json else sys.stdout
    print(f"{scenario.id} step {step.number}: {step.title}", file=log, flush=True)
    if not on_gpu and all(c.needs_gpu for c in step.checks):
        results = ex.evaluate_checks(step, _NoRun(), None, on_gpu=False)
        print("nothing to check on a CPU: every check of this step needs a GPU; no run was started.", file=log)
        return _report(args, scenario, step, results, [], log)
    store = store_from(args)
    runs = {}
    for role, config in (("baseline", base_cfg), ("run", cfg)):
        if config is None:
            continue
        run, status = _launch(store, config, role, args.verbose, log)
        runs[role] = run
        if status != "finished" and role == "baseline":
            print(f"the baseline run {status}; the step's checks need it", file=sys.stderr)
            break
    results = ex.evaluate_checks(step, runs.get("run", _NoRun()), runs.get("baseline"), on_gpu)
    run_ids = [r.id for r in runs.values()]
    ex.record_progress(scenario.id, step.number, results, run_ids)
    return _report(args, scenario, step, results, run_ids, log)


class _NoRun:
    """Stands in for a run that was never started, so every check reports why it has no value."""

    id = "-"
    dir = None
    config_dict: dict = {}

    def events(self):
        from tinylab.events import EventLog

        return EventLog()

    def status(self) -> str:
        return "not started"


def _overrides(args) -> dict:
    values = {name: getattr(args, name) for name in _override_names() if getattr(args, name, None) is not None}
    values.pop("device", None)
    if args.precision is None and args.use_amp:
        values["precision"] = args.amp_dtype or "bf16"
    if not values.get("profilers"):
        values.pop("profilers", None)
    return values


def _launch(store, cfg, role: str, verbose: bool, log):
    from tinylab.runs.follow import follow
    from tinylab.runs.launcher import cancel, launch

    run = launch(store, cfg)
    what = f"{cfg.version}" + (" with a fault" if cfg.fault else "") + (
        f" profile={','.join(cfg.profilers)}" if cfg.profilers else "")
    print(f"  {role:<8} {run.id}  {what}  b{cfg.batch_size} s{cfg.seq_len} h{cfg.hidden_dim} "
          f"l{cfg.num_layers} {cfg.num_steps} steps on {cfg.device} ...", file=log, flush=True)
    started = time.monotonic()
    try:
        status = follow(run, out=log if verbose else _Discard())
    except KeyboardInterrupt:
        print(f"\ncancelling run {run.id} ...", file=sys.stderr, flush=True)
        cancel(run)
        raise
    info = run.info()
    print(f"  {'':<8} {status} in {time.monotonic() - started:.1f} s", file=log, flush=True)
    if status != "finished" and info["error"]:
        print(f"  {'':<8} error: {info['error'].get('type')}: {info['error'].get('message')}", file=log)
    return run, status


class _Discard:
    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        pass


def _report(args, scenario, step, results, run_ids: list[str], log) -> int:
    from tinylab import exercises as ex

    passed = ex.step_passed(results)
    ran = [r for r in results if r.status != "skip"]
    if args.json:
        print_json({
            "scenario": scenario.id,
            "step": step.number,
            "passed": passed,
            "run_ids": run_ids,
            "checks": [dataclasses.asdict(r) for r in results],
        })
    else:
        print()
        for r in results:
            value = "" if r.value is None else ex.format_value(r.value)
            print(f"{MARK[r.status]}  {r.name:<24} {value:>12}  {r.expr}")
            print(f"      {r.description}")
            if r.detail:
                print(f"      {r.detail}")
    verdict = (
        "all checks passed" if passed
        else "no check could run here" if not ran
        else f"{sum(r.status == 'fail' for r in results)} of {len(ran)} checks failed"
    )
    print(f"\n{scenario.id} step {step.number}: {verdict}"
          + (f"  (runs: {', '.join(run_ids)})" if run_ids else ""), file=log)
    return 0 if passed else 1

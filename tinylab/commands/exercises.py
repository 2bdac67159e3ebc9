"""`tinylab exercises list | show | check | answer`: the guided scenarios from a terminal or a batch job.

`check` runs the step's preset (and its baseline first, when the step compares two runs)
through the real launcher into the run store, so the runs are also visible in `tinylab runs`
and the lab; the shared run flags override the preset. Exit status: 0 when every check that
could run passed (and at least one ran), 1 when one failed or none could run, 2 on user errors.
`answer` names the fault a step hides: 0 when right, 1 when wrong (saying what the step's run
shows against it), 2 on user errors.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time

from tinylab.commands._common import add_runs_dir, integer, lab_from, print_json, terminal_width
from tinylab.config import RunConfig
from tinylab.commands.runflags import add_run_arguments
from tinylab.runs.record import mask_config
from tinylab.service import exercise
from tinylab.core.text import wrap_words

MARK = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the scenarios, with your progress", description="the scenarios, with your progress")
    ls.add_argument("--json", action="store_true", help="print a JSON list")
    show = sub.add_parser("show", help="a scenario, or one step of it", description="a scenario, or one step of it")
    show.add_argument("id", help="scenario id (see `tinylab exercises list`)")
    show.add_argument("--step", type=integer(1), default=None, metavar="N", help="show this step (1-based: 1 or more)")
    show.add_argument("--hints", type=integer(0), default=0, metavar="N",
                      help="reveal the first N hints of the step (0 or more)")
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
    check.add_argument("--step", type=integer(1), required=True, metavar="N", help="step number (1-based: 1 or more)")
    check.add_argument("--verbose", "-v", action="store_true", help="stream the runs' output")
    check.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    add_runs_dir(check)
    add_run_arguments(check, with_version=False, with_preset=False)
    answer = sub.add_parser(
        "answer",
        help="name the fault a step hides",
        description="Name the fault a step's run was injected with, as in `tinylab exercises answer "
        "performance-debugging --step 1 FAULT` (`exercises show ID --step N` lists the faults to pick from). The right one is recorded, and shows from then on wherever the step's run is "
        "shown; a wrong one is weighed against the step's run, and the answer says what the run shows "
        "against it. Exit status: 0 right, 1 wrong, 2 on user errors.",
    )
    answer.add_argument("id", help="scenario id")
    answer.add_argument("--step", type=integer(1), required=True, metavar="N", help="step number (1-based: 1 or more)")
    answer.add_argument("fault", metavar="FAULT", help="the fault's name")
    answer.add_argument("--json", action="store_true", help="print the verdict as JSON")
    add_runs_dir(answer)
    # Every run flag defaults to None here, so that only the flags the learner typed override the
    # preset; the shared flags' "(default ...)" notes would then read "None", so they go.
    check.set_defaults(**{name: None for name in _override_names()}, use_amp=None, amp_dtype=None)
    for action in check._actions:
        if action.help:
            action.help = re.sub(r" \(default:? %\(default\)s\)|; default:? %\(default\)s", "", action.help)


def _override_names() -> list[str]:
    return [f.name for f in dataclasses.fields(RunConfig) if f.name != "version"]


def run(args) -> int:
    return {"list": _list, "show": _show, "check": _check, "answer": _answer}[args.action](args)


# ----------------------------------------------------------------------------- list
def _list(args) -> int:

    lab = lab_from(args)
    progress = lab.progress()
    rows = [
        {
            "id": s.id,
            "title": s.title,
            "level": s.level,
            "minutes": s.minutes,
            "steps": len(s.steps),
            "steps_done": exercise.steps_done(progress, s),
            "progress": f"{exercise.steps_done(progress, s)}/{len(s.steps)}",
        }
        for s in lab.scenarios()
    ]
    if args.json:
        print_json(rows)
        return 0
    width = max((len(r["id"]) for r in rows), default=2)
    print(f"{'id':<{width}}  {'level':<12}  {'min':>3}  {'steps':>5}  {'done':>5}  title")
    for r in rows:
        print(f"{r['id']:<{width}}  {r['level']:<12}  {r['minutes']:>3}  {r['steps']:>5}  {r['progress']:>5}  {r['title']}")
    print(f"progress file: {exercise.progress_path()}")
    return 0


# ----------------------------------------------------------------------------- show
def _show(args) -> int:
    lab = lab_from(args)
    scenario = lab.scenario(args.id)
    width = min(terminal_width(100), 100)  # prose reads best at most 100 wide
    progress = lab.progress().get("scenarios", {}).get(scenario.id, {}).get("steps", {})
    if args.step is None:
        if args.json:
            print_json({**_scenario_json(scenario), "progress": progress})
            return 0
        print(_fill(f"{scenario.title}  [{scenario.id}]  {scenario.level}, about {scenario.minutes} min", width))
        print()
        print(_fill(scenario.summary, width))
        print()
        # the title column as wide as the longest title, or as the terminal leaves ("  6. " and the checks)
        titles = min(max(len(st.title) for st in scenario.steps), max(20, width - 34))
        for step in scenario.steps:
            state = progress.get(str(step.number)) or {}
            mark = "done" if state.get("passed_at") else ("tried" if state else "")
            gpu = sum(c.needs_gpu for c in step.checks)
            cpu = len(step.checks) - gpu
            title = step.title if len(step.title) <= titles else step.title[: titles - 1] + "…"
            print(f"  {step.number}. {title:<{titles}}  {cpu} CPU / {gpu} GPU checks  {mark}".rstrip())
        todo = next((st.number for st in scenario.steps if not (progress.get(str(st.number)) or {}).get("passed_at")),
                    None)
        print(f"\nnext: tinylab exercises show {scenario.id} --step {todo}" if todo is not None
              else f"\nevery step is done; revisit one with: tinylab exercises show {scenario.id} --step N")
        return 0
    step = exercise.get_step(scenario, args.step)
    if args.answers:
        lab.reveal_answers(scenario.id, step.number)
    hidden = exercise.hidden_fields(lab.progress(), scenario, step.number)
    if args.json:
        print_json(_step_json(step, args.hints, args.answers, hidden))
        return 0
    print(_fill(f"{scenario.title}: step {step.number}/{len(scenario.steps)}: {step.title}", width) + "\n")
    print(_prose(step.text, width))
    compile_only = step.compile_only
    print("\nCompiled, no run (any machine: the kernels of this config):" if compile_only else "\nRun:")
    print(_fill(_settings(step.preset, hidden), width, "  preset      ", " " * 14))
    if step.cpu_preset and not compile_only:
        print(_fill(_settings(step.cpu_preset), width, "  on a CPU    ", " " * 14))
    if step.baseline is not None:
        print(_fill(f"{_settings(step.baseline)}  ({'compiled too' if compile_only else 'run first'}, for comparison)",
                    width, "  baseline    ", " " * 14))
    if step.tool:
        print(f"\nTool: {step.tool} (tinylab doctor says whether it works here)")
    if step.recorded:
        print(f"  recorded    {step.recorded.path}")
        print(_fill(f"{step.recorded.about}: what the step reads without the tool", width, " " * 14, " " * 14))
    if step.nvidia:
        print(_fill(step.nvidia, width, "  on NVIDIA   ", " " * 14))
    print("\nChecks:")
    for c in step.checks:
        print(_fill(c.expr, width, f"  {c.name:<24} ", " " * 27))
        tag = "  [GPU only]" if c.needs_gpu else {"recorded": "  [recorded output]", "anatomy": "  [compiled kernels]"}.get(c.on, "")
        print(_fill(c.description + tag, width, " " * 27, " " * 27))
    kept = exercise.kept_attempt(lab.progress(), scenario.id, step.number)
    if kept is not None and kept.run_ids:
        print("\n" + _fill(_kept_runs(step, kept), width, "", "  "))
    choices = exercise.suspects(step)
    if choices:
        print("\nDiagnosis:")
        if hidden:
            print(_fill(f"name the fault: {_how_to_answer(scenario, step)}", width, "  ", "  "))
        else:
            print(_fill(f"the fault is {exercise.hidden_fault(step)}", width, "  ", "  "))
    if step.hints:
        print(f"\nHints: {min(args.hints, len(step.hints))} of {len(step.hints)} shown (--hints N reveals more)")
        for i, hint in enumerate(step.hints[: args.hints], 1):
            print(_fill(hint, width, f"  {i}. ", "     "))
    if step.questions:
        print("\nQuestions:" + ("" if args.answers else " (--answers reveals the answers)"))
        for i, q in enumerate(step.questions, 1):
            print(_fill(q.prompt, width, f"  {i}. ", "     "))
            if args.answers:
                print(_fill(q.answer, width, "     -> ", "        "))
                if q.explanation:
                    print(_fill(q.explanation, width, "        ", "        "))
    print(f"\ncheck it: tinylab exercises check {scenario.id} --step {step.number}")
    return 0


def _settings(preset: dict, hidden: frozenset[str] = frozenset()) -> str:
    """The preset as key=value, what the step hides (the fault to find) masked until it is named or revealed."""
    shown = {k: v for k, v in mask_config(preset, hidden).items() if k != "label"}
    text = " ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in shown.items())
    return (text + ("  (hidden until you name it, or --answers)" if hidden else "")) if text else "(defaults)"


def _kept_runs(step, kept) -> str:
    """The runs a step keeps (the latest that passed it, else the latest tried), by role."""
    runs = ", ".join(f"{role} {run_id}" for role, run_id in kept.runs(step).items())
    when = time.strftime(" %Y-%m-%d %H:%M", time.localtime(kept.time)) if kept.time else ""
    return f"{'Passed' if kept.passed else 'Last tried'}{when} with {runs}"


#: A line that starts a list item of a step's markdown ("1. ", "- ").
_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*]|\d+\.)[ \t])")
_MARKER = re.compile(r"[ \t]*(?:[-*]|\d+\.)[ \t]+")


def _prose(markdown: str, width: int) -> str:
    """A step's markdown for the terminal: its paragraphs and list items re-filled to `width`
    (continuations under the item's text); headings, tables and indented code kept as written."""
    out = []
    for block in re.split(r"\n[ \t]*\n", markdown.strip()):
        for item in _ITEM.split(block):
            if item.startswith(("#", "|", "```", "    ", "\t")):
                out.append(item)
                continue
            marker = _MARKER.match(item)
            first = marker.group(0) if marker else ""
            out.append(_fill(" ".join(item[len(first):].split()), width, first, " " * len(first)))
        out.append("")
    return "\n".join(out).rstrip()


def _fill(text: str, width: int, first: str = "", rest: str = "") -> str:
    return "\n".join(wrap_words(text, width, first, rest))


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


def _step_json(step, hints: int, answers: bool, hidden: frozenset[str]) -> dict:
    data = dataclasses.asdict(step)
    data["preset"] = mask_config(step.preset, hidden)
    data["hints"] = step.hints[:hints]
    data["hints_total"] = len(step.hints)
    if not answers:
        data["questions"] = [{"prompt": q.prompt} for q in step.questions]
    return data


# ----------------------------------------------------------------------------- answer
def _answer(args) -> int:
    lab = lab_from(args)
    found = lab.diagnose(args.id, args.step, args.fault)
    if args.json:
        print_json({"scenario": args.id, "step": args.step, "fault": args.fault, "right": found.right,
                    "verdict": found.lines()})
    else:
        width = min(terminal_width(100), 100)
        for line in found.lines():
            print(_fill(line, width, "", "  "))
    return 0 if found.right else 1


# ----------------------------------------------------------------------------- check
def _check(args) -> int:
    lab = lab_from(args, launches=True)
    plan = lab.plan_step(args.id, args.step, args.device or "auto", _overrides(args))
    log = sys.stderr if args.json else sys.stdout
    print(f"{plan.scenario.id} step {plan.step.number}: {plan.step.title}", file=log, flush=True)
    if plan.compiled:
        print(f"  compiling the step's Triton kernels at {_describe_model(plan.compiled['run'])} (no GPU needed; "
              "the first time takes a minute or so, then they are cached) ...", file=log, flush=True)
    current: str | None = None
    try:
        for event in lab.run_step(plan, output=log if args.verbose else None):
            if isinstance(event, exercise.RunStarted):
                current = event.run_id
                print(f"  {event.role:<8} {event.run_id}  {_describe(event.config)} ...", file=log, flush=True)
            elif isinstance(event, exercise.RunEnded):
                current = None
                print(f"  {'':<8} {event.status} in {event.seconds:.1f} s", file=log, flush=True)
                if event.status != "finished" and event.error:
                    print(f"  {'':<8} error: {event.error.type}: {event.error.message}", file=log)
            elif isinstance(event, exercise.StepDone):
                if event.note:
                    print(event.note, file=sys.stderr if event.run_ids else log)
                return _report(args, plan, event, log, lab.progress())
    except KeyboardInterrupt:
        if current is not None:
            print(f"\ncancelling run {current} ...", file=sys.stderr, flush=True)
            lab.cancel(current)
        raise
    return 1


def _describe(cfg) -> str:
    what = f"{cfg.version}" + (" with a fault" if cfg.fault else "") + (
        f" profile={','.join(cfg.profilers)}" if cfg.profilers else "")
    return (f"{what}  b{cfg.batch_size} s{cfg.seq_len} h{cfg.hidden_dim} l{cfg.num_layers} "
            f"{cfg.num_steps} steps on {cfg.device}")


def _describe_model(cfg) -> str:
    return f"hidden {cfg.hidden_dim}, seq {cfg.seq_len}, batch {cfg.batch_size}, {cfg.precision}"


def _overrides(args) -> dict:
    values = {name: getattr(args, name) for name in _override_names() if getattr(args, name, None) is not None}
    values.pop("device", None)
    if args.precision is None and args.use_amp:
        values["precision"] = args.amp_dtype or "bf16"
    if not values.get("profilers"):
        values.pop("profilers", None)
    return values


def _report(args, plan, done, log, progress: dict) -> int:
    scenario, step, results = plan.scenario, plan.step, done.results
    if args.json:
        print_json({
            "scenario": scenario.id,
            "step": step.number,
            "passed": done.passed,
            "run_ids": done.run_ids,
            "checks": [dataclasses.asdict(r) for r in results],
        })
    else:
        print()
        for r in results:
            value = "" if r.value is None else exercise.format_value(r.value)
            print(f"{MARK[r.status]}  {r.name:<24} {value:>12}  {r.expr}")
            print(f"      {r.description}")
            if r.detail:
                print(f"      {r.detail}")
    print(f"\n{scenario.id} step {step.number}: {done.verdict}"
          + (f"  (runs: {', '.join(done.run_ids)})" if done.run_ids else ""), file=log)
    if done.run_ids and exercise.hidden_fields(progress, scenario, step.number) and exercise.suspects(step):
        # the checks confirm the symptom; what causes it is the learner's to name
        print(_fill(f"next: name the fault, {_how_to_answer(scenario, step)}", min(terminal_width(100), 100),
                    "", "  "), file=log)
    return 0 if done.passed else 1


def _how_to_answer(scenario, step) -> str:
    """The command that names the fault a step hides, and the faults to choose from."""
    return (f"tinylab exercises answer {scenario.id} --step {step.number} FAULT, where FAULT is one of "
            f"{', '.join(exercise.suspects(step))}")

"""Where a rule can judge a run, declared once beside the rule (`@scope(...)`), so that advise()
runs it only there and docs/advice.md lists it (`table`, kept in the page by a test).

A Scope has three parts, each read from the Facts:
- `gpu`: the rule looks for something a CPU run cannot have (work the host does not wait for,
  kernels and their launches, tensor cores, device memory); on a CPU it has nothing to read;
- `needs`: what the run must have recorded for the rule to read (NEEDS: a profiled step's trace,
  a kernel table, several ranks, ...);
- `timed`: the rule judges timings, and how its item's effect is read on a busy run (Summary.busy:
  other processes took CPU or GPU time while it trained). Contention lands on some parts of a
  step more than on others, so it moves shares and ratios as well as times: a busy run's timing
  item stands only when its effect is far outside the contention (`far`); "quiet": the rule
  judges quiet runs only.

Outside its device or its inputs a rule is silent (there is nothing it could say). A timing item
withheld on a busy run is not silent: the rule found something, and the learner is told why it is
not trusted (Judgement.notes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tinylab.analysis.advice.model import SURE, Advice, Facts, percent, ratio

#: What a rule may need -> (whether the Facts has it, how the docs and the notes name it).
NEEDS: dict[str, tuple[Callable[[Facts], bool], str]] = {
    "summary": (lambda f: f.summary is not None, "the run's summary"),
    "trace": (lambda f: f.timeline is not None, "a profiled step (a PyTorch trace)"),
    "trace or roofline": (lambda f: f.timeline is not None or f.roofline is not None,
                          "a profiled step, or a roofline of the kernel table"),
    "kernel table": (lambda f: f.kernels is not None, "a kernel table"),
    "anatomy": (lambda f: bool(f.anatomy), "a compiled kernel anatomy (`--kernels`)"),
    "ranks": (lambda f: len(f.ranks) >= 2, "several ranks"),
}
#: How a timing item's effect is read, as a factor (1: no effect) -> (its value, how the docs name it).
EFFECTS: dict[str, tuple[Callable[[Advice], float | None], str]] = {
    "bound": (lambda item: item.impact.bound, "its bound"),
    "ratio": (lambda item: item.measured.value, "its measured ratio"),
    "shortfall": (lambda item: 1 / item.measured.value if item.measured.value else None,
                  "the step over its measured share"),
    "quiet": (lambda item: None, "none: quiet runs only"),
}
#: A busy run's timing item stands when its effect is at least this factor: the largest distortion
#: the lab saw contention make of a within-run ratio was 1.56x (phase medians at 64 % of the step
#: median on a 2-core CPU with two busy loops: issue 37), and 2x stays clear of it ...
FAR_FACTOR = 2.0
#: ... and when its gain (effect - 1) is above this many times the run's own p10-p90 spread: what a
#: quiet run calls high confidence (model.SURE), since on a busy run that spread understates the noise.
FAR_SPREAD = SURE[0][0]

#: Every declared rule's Scope, by rule id (filled by @scope as the family modules are imported).
SCOPES: dict[str, Scope] = {}

Rule = TypeVar("Rule", bound=Callable[[Facts], "Advice | None"])


@dataclass(frozen=True)
class Scope:
    """Where one rule can judge a run (the module's docstring says what each part means); checked
    when declared, so a misspelt need or effect fails at import, not by silencing a rule."""

    why: str  # why the rule applies there, in a phrase (docs/advice.md's table shows it)
    gpu: bool = False
    needs: tuple[str, ...] = ()
    timed: str | None = None  # a key of EFFECTS; None: the rule judges no timing

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"unknown needs {unknown}: a scope needs some of {', '.join(NEEDS)}")
        if self.timed is not None and self.timed not in EFFECTS:
            raise ValueError(f"unknown timed={self.timed!r}: one of {', '.join(EFFECTS)}, or None")

    def missing(self, f: Facts) -> str | None:
        """Why the rule has nothing to read in this run (its device, or an input it lacks), or None."""
        if self.gpu and not f.on_gpu:
            return f"it applies to GPU runs only, and this one ran on {f.device or 'no GPU'}"
        lacking = [NEEDS[n][1] for n in self.needs if not NEEDS[n][0](f)]
        return f"it needs {' and '.join(lacking)}, which this run has not" if lacking else None

    def judge(self, f: Facts, item: Advice) -> tuple[Advice | None, str | None]:
        """(the item, None) when it stands, its evidence naming the busy machine it stood out of
        if there was one; (None, why) when it is a timing item of a busy run whose effect is not
        far outside the contention."""
        busy = f.busy
        if self.timed is None or busy is None:
            return item, None
        effect = EFFECTS[self.timed][0](item)
        if effect is None:
            return None, (f"the machine was busy during this run ({busy}), and this rule judges the timings of quiet "
                          "runs only")
        if not far(f, effect):
            return None, (f"the machine was busy during this run ({busy}), and its effect, {ratio(effect)}, is not far "
                          f"outside the contention ({bar(f)})")
        stood = f"machine busy ({busy}): the effect, {ratio(effect)}, is far outside the contention ({bar(f)})"
        return dataclasses.replace(item, evidence=(*item.evidence, stood)), None

    def cells(self) -> tuple[str, str, str, str]:
        """This scope as docs/advice.md's table reads it: device, needs, on a busy run, why."""
        busy = ("judged (no timing)" if self.timed is None else "not judged (a note says so)" if self.timed == "quiet"
                else f"judged when {EFFECTS[self.timed][1]} is far outside the contention, else a note")
        return ("GPU only" if self.gpu else "any", "; ".join(NEEDS[n][1] for n in self.needs) or "—", busy,
                self.why)


def far(f: Facts, effect: float | None) -> bool:
    """Whether an effect (a factor, 1: none) is far outside a busy run's contention: at least
    FAR_FACTOR, and a gain above FAR_SPREAD times the run's own spread (when it has one)."""
    spread, _ = f.spread()
    return effect is not None and effect >= FAR_FACTOR and (spread is None or effect - 1 > FAR_SPREAD * spread)


def bar(f: Facts) -> str:
    """What `far` asks of this run, in words."""
    spread, _ = f.spread()
    of = f", here {percent(spread)}" if spread is not None else ""
    return (f"a busy run needs at least {FAR_FACTOR:g}x, and a gain above {FAR_SPREAD:g}x the run's p10-p90 "
            f"spread{of}")


def rule_id(rule: Callable[..., object]) -> str:
    """A rule's id: its function's name with dashes."""
    return rule.__name__.replace("_", "-")


def scope(why: str, *, gpu: bool = False, needs: tuple[str, ...] = (),
          timed: str | None = None) -> Callable[[Rule], Rule]:
    """Declare where a rule can judge a run, and why there (Scope); the rule is returned unchanged."""
    declared = Scope(why, gpu, tuple(needs), timed)

    def declare(rule: Rule) -> Rule:
        if rule_id(rule) in SCOPES:
            raise ValueError(f"{rule_id(rule)} declares its scope twice")
        SCOPES[rule_id(rule)] = declared
        return rule

    return declare


def scope_of(rule: Callable[..., object]) -> Scope:
    """A rule's declared Scope; a rule without one is a mistake, said at once."""
    try:
        return SCOPES[rule_id(rule)]
    except KeyError:
        raise LookupError(f"rule {rule_id(rule)} declares no @scope (tinylab/analysis/advice/scope.py)") from None


#: The generated table's fences in docs/advice.md.
BEGIN = ("<!-- Made by table() in tinylab/analysis/advice/scope.py from the rules' @scope declarations: edit "
         "those, then regenerate (tests/analysis/advice/test_scope.py says how). -->")
END = "<!-- end of the generated table -->"


def table(rules: tuple[Callable[..., object], ...]) -> str:
    """docs/advice.md's table of where each rule applies, fences included."""
    lines = [BEGIN, "", "| rule | device | needs | on a busy run | why |", "|---|---|---|---|---|"]
    lines += ["| `{}` | {} | {} | {} | {} |".format(rule_id(r), *scope_of(r).cells()) for r in rules]
    return "\n".join([*lines, "", END])


def in_page(page: str, rules: tuple[Callable[..., object], ...]) -> str:
    """The page with its generated table made again from the declarations."""
    head, rest = page.split(BEGIN, 1)
    return head + table(rules) + rest.split(END, 1)[1]

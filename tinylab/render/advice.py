"""Advice as text: the `tinylab advise` listing, the rows of the report's and the lab's tables, one
item's detail, and the verdicts of a run B that tried an item of run A.

State is said in words and marks, never by colour alone: "✗ error", "! warning", "→ suggestion",
"✓ good"; a verdict reads "✓ held" or "✗ not held".
"""

from __future__ import annotations

from typing import Any

from tinylab.runs.record import printable
from tinylab.core.text import wrap_words

MARKS = {"error": "✗", "warning": "!", "suggestion": "→", "good": "✓"}
HEADER = ["severity", "rule", "measured", "at most"]


def mark(severity: str) -> str:
    return f"{MARKS.get(severity, '?')} {severity}"


def bound_text(item: Any) -> str:
    """The bound as a table cell: "8.10x step", "1.40x memory", or "-"."""
    impact = item.impact
    if impact.bound is None:
        return "-"
    what = "memory" if impact.metric == "peak_mem_mb" else "step"
    value = f"{impact.bound:.2f}x" if impact.bound < 10 else f"{impact.bound:.1f}x"
    return f"{value} {what}"


def rows(items: list[Any]) -> list[list[str]]:
    """A row an item: its severity (mark and word), rule, measured value and bound (the report's tables)."""
    return [[mark(i.severity), i.rule, printable(i.measured.text), bound_text(i)] for i in items]


def detail(item: Any, width: int = 80) -> list[str]:
    """One item in full: condition, measured against threshold, impact, action, lesson, evidence."""
    parts = [
        (f"{mark(item.severity)}  {item.rule}: ", item.condition),
        ("  measured: ", f"{item.measured.text} (threshold {item.threshold.text})"),
        ("  impact:   ", item.impact.text),
        ("  action:   ", item.action.text + ("" if item.action.changes else " (no setting: a change by hand)")),
        ("  lesson:   ", f"tinylab exercises show {item.lesson.replace(' step ', ' --step ')}" if item.lesson else "-"),
        ("  evidence: ", "; ".join(item.evidence)),
    ]
    lines: list[str] = []
    for head, text in parts:
        lines += wrap_words(printable(text), width, head, " " * min(len(head), 12))
    return lines


def text(source: str, title: str, items: list[Any], notes: list[str], width: int = 80) -> str:
    """`tinylab advise`: every item in full, most urgent first."""
    lines = wrap_words(printable(title), width)
    if not items:
        lines.append("no advice: no rule found anything to say about this run")
    counts = {s: sum(i.severity == s for i in items) for s in MARKS}
    if items:
        lines.append(", ".join(f"{n} {s}{'s' if n > 1 else ''}" for s, n in counts.items() if n))
    for item in items:
        lines += [""] + detail(item, width)
    for note in notes:
        lines += [""] + wrap_words(printable(f"note: {note}"), width, "", "  ")
    tryable = [i.rule for i in items if i.action.changes]
    if tryable:
        lines += [""] + wrap_words(f"try one as run B: tinylab advise {source} --try {tryable[0]} (then "
                                   f"`tinylab compare {source} B` says whether it held)", width, "", "  ")
    return "\n".join(lines)


def verdict_lines(result: dict[str, Any], width: int = 80) -> list[str]:
    """B against A's advice: each verdict (held or not, predicted and measured, why), then the rules
    B cleared and those new in B."""
    lines: list[str] = []
    for v in result["verdicts"]:
        held = {True: "✓ held", False: "✗ not held", None: "? unknown"}[v["held"]]
        lines += wrap_words(f"{held}  {v['rule']}: predicted {v['predicted']}; measured {v['measured']}", width,
                            "", "    ")
        lines += wrap_words(v["why"], width, "    ", "    ")
    if result["cleared"]:
        lines += wrap_words("A's advice that B no longer triggers: " + ", ".join(result["cleared"]), width, "", "  ")
    if result["new"]:
        lines += wrap_words("new in B: " + ", ".join(result["new"]), width, "", "  ")
    for note in result.get("notes", []):
        lines += wrap_words(f"note: {note}", width, "", "  ")
    if not lines:
        lines.append("no advice item of A applies to B, and both trigger the same rules")
    return [printable(line) for line in lines]

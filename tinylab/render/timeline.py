"""A step anatomy (tinylab.analysis.timeline's Timeline) for a terminal: a row per step, the
shown step's lanes, its phases, kernel categories, collectives and memory peak, in 80 columns
(down to 50: the gaps left out of the table and the lanes squeezed)."""

from __future__ import annotations

import textwrap

from tinylab.analysis.timeline import LANE_WIDTH, format_us
from tinylab.analysis.timeline_result import Timeline

#: Which lane character wins when cells are merged: the busiest.
LANE_ORDER = "#+-."


def squeeze(text: str, cells: int, order: str) -> str:
    """A lane in fewer cells: each keeps the first character in `order` among those it covers."""
    if cells >= len(text):
        return text
    out = []
    for i in range(cells):
        part = text[i * len(text) // cells: max(i * len(text) // cells + 1, (i + 1) * len(text) // cells)]
        out.append(min(part, key=lambda ch: order.index(ch) if ch in order else len(order)))
    return "".join(out)


def render(result: Timeline, title: str, width: int = 80) -> str:
    """The anatomy for a terminal of `width` columns (80 or more: every column; down to 50: the
    gaps left out of the table and the lanes squeezed): a row per step, the shown step's lanes,
    its phases, categories and memory peak."""
    shown = result.shown
    wide = width >= 72
    lines = [title[:width], f"{'step':>6} {'wall ms':>9} {'GPU busy':>9} {'idle':>5} "
                            + (f"{'gaps':>6} {'largest':>9} " if wide else "") + f"{'kernels':>8} {'median':>8}"]
    for a in result.steps:
        mark = "*" if a is shown else " "
        if a.gaps is None:
            device = f"{'-':>9} {'-':>5}" + (f" {'-':>6} {'-':>9}" if wide else "")
        else:
            device = f"{a.busy_ms:>9.2f} {_pct(a.idle_pct):>5}" + (
                f" {a.gaps.count:>6} {a.gaps.largest_ms:>6.2f} ms" if wide else "")
        lines.append(f"{mark}{_step_label(a.step):>5} {a.wall_ms:>9.2f} {device} {a.kernels:>8} "
                     f"{format_us(a.kernel_median_us):>8}")
    cells = min(LANE_WIDTH, width - 10)
    lines += textwrap.wrap(f"step {_step_label(shown.step)}: {shown.diagnosis}", width, subsequent_indent="  ")
    timed = result.timed
    if timed:
        lines += textwrap.wrap(f"trainer's clock: this step {timed.step_ms:.2f} ms, unprofiled {timed.unprofiled_ms:.2f} "
                               "ms (median)", width,
                               initial_indent="  ", subsequent_indent="    ")
    annotated = any(ch != "." for ch in shown.host_lane)
    if result.has_gpu_events:
        lines.append(f"  GPU |{squeeze(shown.lane, cells, LANE_ORDER)}|")
    if annotated:
        lines.append(f" host |{squeeze(shown.host_lane, cells, 'FBO.')}|")
    legend = [f"{shown.wall_ms:.2f} ms: # busy + half - little . idle"] if result.has_gpu_events else []
    legend += ["F fwd B bwd O opt (host)"] if annotated else []
    if legend:
        joined = "       " + "   ".join(legend)
        lines += [joined] if len(joined) <= width else ["       " + part for part in legend]
    if shown.phases:
        lines.append(f"  {'phase':<10} {'host ms':>9} {'kernels':>8} {'kernel ms':>10}")
        for p in shown.phases:
            lines.append(f"  {p.name:<10} {p.host_ms:>9.2f} {p.kernels:>8} {p.kernel_ms:>10.2f}")
    cats = shown.categories_ms
    total = sum(cats.values())
    if total > 0:
        shares = [f"{c} {100 * ms / total:.0f}%" for c, ms in cats.items() if ms / total >= 0.01]
        lines += textwrap.wrap("kernel time by category: " + " · ".join(shares), width, initial_indent="  ",
                               subsequent_indent="    ")
    comm = result.communication
    if comm:
        steps = f"mean of {comm.steps} steps" if comm.steps > 1 else "one window"
        hidden = f", {comm.hidden:.0%} hidden under compute" if comm.hidden is not None else ""
        lines += textwrap.wrap(f"collectives: {comm.ms:.2f} ms a step ({steps}){hidden}", width,
                               initial_indent="  ", subsequent_indent="    ")
    memory = result.memory
    if memory:
        where = f", in {memory.peak_phase}" if memory.peak_phase else ""
        top = sorted(memory.peak_by_category_mb.items(), key=lambda kv: -kv[1])[:3]
        lines += textwrap.wrap(f"memory peak {memory.peak_mb:,.1f} MB at {memory.peak_at_ms:.2f} ms{where}: "
                               + ", ".join(f"{c} {mb:,.1f} MB" for c, mb in top), width, initial_indent="  ",
                               subsequent_indent="    ")
    for note in result.notes:
        lines += textwrap.wrap(f"note: {note}", width, subsequent_indent="  ")
    return "\n".join(lines)


def _step_label(step: int | None) -> str:
    return "all" if step is None else str(step)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"

"""A roofline placement (tinylab.analysis.roofline.Placement) as text: the log-log chart
(plotext) and the table of points, with the points flagged above their roof and those not placed."""

from __future__ import annotations

import re
import textwrap

from tinylab.core.names import short_name
from tinylab.analysis.roofline import ROOF_TOLERANCE, Placement, roof


def render(result: Placement, title: str, width: int = 78, height: int = 20) -> str:
    """The log-log roofline as text (plotext), then the table of points."""
    import plotext as plt

    peak, bw = result.peak_tflops, result.bandwidth_gbps
    xs = [10 ** (e / 10) for e in range(-20, 41)]
    plt.clear_figure()
    plt.theme("clear")
    plt.plotsize(width, height)
    plt.xscale("log")
    plt.yscale("log")
    plt.plot(xs, [roof(x, peak, bw) for x in xs], label="roof", marker="braille")
    for i, p in enumerate(result.points):
        plt.scatter([p.intensity], [p.achieved_tflops], marker=str(i % 10), label=f"{i % 10} {short_name(p.name)[:24]}")
    plt.title(title)
    plt.xlabel("FLOP / byte")
    plt.ylabel("TFLOP/s")
    chart = re.sub(r"\x1b\[[0-9;]*m", "", plt.build())  # plotext resets colours even in the clear theme
    lines = [chart, "", f"ceilings: {peak:.1f} TFLOP/s, {bw:,.0f} GB/s; ridge at {result.ridge_intensity:.1f} FLOP/byte",
             f"{'#':>2} {'point':<42} {'FLOP/B':>8} {'TFLOP/s':>9} {'GB/s':>8} {'% roof':>7}  bound"]
    for i, p in enumerate(result.points):
        star = "*" if p.pct_of_roof > 100 else " "
        lines.append(f"{i % 10:>2} {short_name(p.name)[:42]:<42} {p.intensity:>8.2f} {p.achieved_tflops:>9.3f} "
                     f"{p.achieved_gbps:>8,.0f} {p.pct_of_roof:>6.1f}%{star} {p.bound}")
    own = [p for p in (*result.points, *result.flagged) if p.source]
    if own:
        off = [p for p in own if p.model_ratio and any(abs(r - 1) > 0.01 for r in p.model_ratio.values())]
        checked = sum(1 for p in own if p.model_ratio)
        line = (f"FLOPs and bytes of {len(own)} Triton kernel{'s' if len(own) > 1 else ''}: {own[0].source}'s own "
                f"counts (launch metadata); against the model at the run's shapes: {checked - len(off)} of {checked} agree")
        line += "" if not off else "; " + ", ".join(
            f"{short_name(p.name)} {p.model_ratio['flops']:.2f}x FLOPs {p.model_ratio['bytes']:.2f}x bytes" for p in off)
        lines += textwrap.wrap(line, width, subsequent_indent="  ")
    if any(p.pct_of_roof > 100 for p in result.points):
        lines += textwrap.wrap(f"* at the roof: above the measured ceiling by less than its noise ({ROOF_TOLERANCE:.0%}; "
                               "the ceiling's own kernel is not the fastest possible)", width, subsequent_indent="  ")
    if result.flagged:
        lines.append("above the roof, not plotted (nothing runs faster than its roof):")
        for p in result.flagged:
            lines += textwrap.wrap(f"{short_name(p.name)} at {p.pct_of_roof:,.0f}% of its roof ({p.achieved_gbps:,.0f} GB/s, "
                                   f"{p.achieved_tflops:.3f} TFLOP/s): {p.reason}", width,
                                   initial_indent="   ", subsequent_indent="     ")
    for p in result.skipped:
        lines += textwrap.wrap(f"not placed: {p.name}: {p.reason}", width, subsequent_indent="  ")
    if result.unplaced:
        shown = ", ".join(short_name(n) for n in result.unplaced[:6])
        more = f" and {len(result.unplaced) - 6} more" if len(result.unplaced) > 6 else ""
        lines += textwrap.wrap(f"not placed (no FLOP/byte model for these names): {shown}{more}", width,
                               subsequent_indent="  ")
    return "\n".join(lines)

"""`tinylab roofline`'s text (tinylab.render.roofline): a point above its roof is listed with the
reason, never plotted; a point within the ceilings' noise is plotted and marked as at the roof."""

from __future__ import annotations

from tinylab.analysis.roofline import Placement, RooflinePoint
from tinylab.render.roofline import render

NORM = RooflinePoint("_rmsnorm_fwd_kernel", 0.6, 0.5, 800.0, 2.46, 20.3, "memory")
L2 = "above the DRAM roof: each launch moves 25.0 MB, which fits the 50 MB L2 cache, faster than DRAM"


def placement(points, flagged=()) -> Placement:
    return Placement(tuple(points), tuple(flagged), (), (), 2, 50.0, 4101.0, 50 * 2**20, 12.19)


def table_rows(text: str) -> dict[str, str]:
    """The table under the chart: a row a plotted point, by name."""
    table = text.split("% roof  bound\n")[1].splitlines()
    return {line.split()[1]: line for line in table if line[:2].strip().isdigit()}


def test_a_point_above_its_roof_is_listed_with_its_reason_and_not_plotted():
    flagged = RooflinePoint("_swiglu_fwd_kernel", 0.42, 2.55, 6100.0, 1.72, 148.7, "memory", reason=L2)
    text = render(placement([NORM], [flagged]), "t")
    assert "above the roof, not plotted" in text and "_swiglu_fwd_kernel at 149% of its roof" in text
    assert "fits the 50 MB L2 cache" in " ".join(text.split())
    assert list(table_rows(text)) == ["_rmsnorm_fwd_kernel"]  # no row for the flagged point
    assert "* at the roof" not in text  # nothing plotted above 100% there


def test_a_point_within_the_noise_is_marked_at_the_roof():
    near = RooflinePoint("_swiglu_fwd_kernel", 0.42, 1.78, 4250.0, 1.72, 103.6, "memory")
    text = render(placement([near, NORM]), "t")
    rows = table_rows(text)
    assert list(rows) == ["_swiglu_fwd_kernel", "_rmsnorm_fwd_kernel"]
    assert "103.6%* memory" in rows["_swiglu_fwd_kernel"] and "%*" not in rows["_rmsnorm_fwd_kernel"]
    assert "* at the roof: above the measured ceiling by less than its noise (5%" in text
    assert "ceilings: 50.0 TFLOP/s, 4,101 GB/s; ridge at 12.2 FLOP/byte" in text and "\x1b[" not in text

"""`tinylab hotspots`'s text (tinylab.render.hotspots): human times, names aligned whatever the
category column holds, and the per-rank comparison of a run of several ranks."""

from __future__ import annotations

from support.tables import ranked_run, table_of

from tinylab.analysis.hotspots import load_run_kernel_tables, summarize
from tinylab.render.hotspots import format_ns, render_text


def test_format_ns():
    assert [format_ns(v) for v in (None, float("nan"), 950, 12_345, 4_560_000, 2.5e9)] == ["-", "-", "950 ns", "12.3 us", "4.56 ms", "2.5 s"]


def test_render_text_keeps_the_names_aligned_with_a_communication_kernel():
    t = table_of([("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 4, 800.0), ("ampere_sgemm_128x64_tn", 2, 200.0)])
    lines = render_text(summarize(t, None, None, fmt="x"), "src").splitlines()
    starts = {line.index(name) for line, name in zip(lines[1:3], ("name", "ncclDevKernel"))}
    starts.add(lines[3].index("ampere sgemm"))  # short names (analysis.names)
    assert len(starts) == 1, lines
    assert "communication" in lines[2] and lines[-1].startswith("by category: communication 80.0%")


def test_the_ranks_of_a_run_of_several_are_said_and_compared(tmp_path):
    tables = load_run_kernel_tables(ranked_run(tmp_path))
    text = render_text(tables.summarize(0), "RUN", width=80)
    assert "rank 0 of 2; --rank N for another, --rank all for one row per kernel and rank" in text
    assert "spread between ranks: kernel time +20.0% (rank 1 most, rank 0 least);\n  communication +100.0%" in text
    assert max(map(len, text.splitlines()[-6:])) <= 80
    one = render_text(summarize(tables.select(0)[0], None, None, fmt="x"), "RUN", width=80)  # no ranks given
    assert "rank 0 of" not in one and "per rank" not in one


def test_the_head_line_says_what_the_table_counts():
    """A CPU run's table lists PyTorch operators: "125 kernels" sat next to "no device kernels"."""
    from support.paths import FIX

    from tinylab.analysis.hotspots import load_kernel_tables

    for trace, rows in (("tinylab_cpu_v1_memory/trace.json.gz", "operators"),
                        ("cuda_h100/torchprof_trace.json.gz", "kernels")):
        tables = load_kernel_tables(FIX / "pytorch-profiler" / trace)
        table, _ = tables.select()
        head = render_text(summarize(table, 5, None, fmt=tables.fmt), "t").splitlines()[0]
        assert head.startswith(f"t  [{tables.fmt}]  {len(table)} {rows}, ")
        # a CPU run's operators take CPU time: "500 ms of kernel time" sat beside "no device kernels"
        assert head.endswith("total CPU time" if rows == "operators" else "total kernel time")

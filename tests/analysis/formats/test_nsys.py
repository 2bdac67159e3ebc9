"""Nsight Systems' cuda_gpu_trace report read by pandas (a million rows) or row by row (a table
pandas cannot take as plain numbers): the same table either way.
"""

from __future__ import annotations

from support import samples
from support.formats import DISPATCHES, EXPECTED, assert_matches, write

from tinylab.analysis.formats import nsys
from tinylab.analysis.hotspots import load_kernel_table


def test_the_table_ends_at_a_blank_line_as_nsys_prints_reports_one_after_another(tmp_path, monkeypatch):
    """`nsys stats` without --output prints its reports in turn, a blank line between them: the
    next one, narrower or wider, is no rows of this one (and pandas reads this one)."""
    by_rows = []
    rows_reader = nsys._gpu_trace_rows
    monkeypatch.setattr(nsys, "_gpu_trace_rows", lambda path, head: by_rows.append(path.name) or rows_reader(path, head))
    report = "Processing [report.sqlite] with [cuda_gpu_trace.py]...\n\n" + samples.nsys_gpu_trace(DISPATCHES) + "\n"
    summary = samples.nsys_kern_sum(DISPATCHES).split("\n\n", 1)[1]
    for name, after in (("narrower.txt", summary), ("wider.txt", summary.replace(",", ",x,x,"))):
        table, fmt = load_kernel_table(write(tmp_path, name, report + after))
        assert fmt == "nsys-gpu-trace"
        assert_matches(table, EXPECTED)
    assert by_rows == []


def test_numbers_pandas_cannot_take_are_read_row_by_row(tmp_path, monkeypatch):
    """Thousands separators ("1,088", quoted) go to the rows' reader; a last row cut short does
    not (pandas' table less that row, with a note); both give the table."""
    by_rows = []
    rows_reader = nsys._gpu_trace_rows
    monkeypatch.setattr(nsys, "_gpu_trace_rows", lambda path, head: by_rows.append(path.name) or rows_reader(path, head))
    header, *rows = samples.nsys_gpu_trace(DISPATCHES).splitlines()
    separated = [f'{r.split(",")[0]},"{int(r.split(",")[1]):,}",' + r.split(",", 2)[2] for r in rows]
    assert any("," in r.split('"')[1] for r in separated)
    table, _ = load_kernel_table(write(tmp_path, "separated.csv", "\n".join([header, *separated]) + "\n"))
    assert_matches(table, EXPECTED)
    table, _ = load_kernel_table(write(tmp_path, "cut.csv", "\n".join([header, *rows, rows[0][:20]])))
    assert_matches(table, EXPECTED)
    assert "truncated" in table.attrs["note"]
    assert by_rows == ["separated.csv"]

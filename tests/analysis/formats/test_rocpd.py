"""rocpd: the SQLite database and `rocpd summary` output.

Expected numbers come from the fixtures themselves, read with plain csv/json code in the test
(or written out by hand from the file), never from tinylab's parsers.
"""

from __future__ import annotations

import pytest
from support import samples
from support.formats import (
    DISPATCHES,
    EXPECTED,
    assert_matches,
    write,
)
from support.rocpd_db import KERNELS_VIEW_COLUMNS, write_rocpd

from tinylab.analysis.hotspots import load_kernel_table
from tinylab.core.errors import UserError


def test_rocpd_summary_by_rank_merges_processes(tmp_path):
    text = samples.rocpd_summary_csv(DISPATCHES, by_rank=True)
    two_ranks = text + "\n".join(text.splitlines()[1:]).replace("714789", "715613") + "\n"
    table, _ = load_kernel_table(write(tmp_path, "kernels_summary.csv", two_ranks))
    doubled = {k: (2 * c, 2 * t, lo, hi) for k, (c, t, lo, hi) in EXPECTED.items()}
    assert_matches(table, doubled)


@pytest.mark.parametrize("views,kernels_view", [(True, "working"), (True, "empty"), (True, "none"), (False, "none")])
def test_rocpd_database(tmp_path, views, kernels_view):
    """rocpd's own tables are read, whatever views the file defines (their SQL is the file's)."""
    db = tmp_path / "host" / "4242_results.db"
    db.parent.mkdir()
    write_rocpd(db, DISPATCHES, views=views, kernels_view=kernels_view)
    table, fmt = load_kernel_table(db)
    assert fmt == "rocpd"
    assert_matches(table, EXPECTED)
    assert table.attrs["note"] is None


def test_rocpd_builder_has_the_documented_kernels_view(tmp_path):
    import sqlite3

    db = tmp_path / "x.db"
    write_rocpd(db, DISPATCHES)
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(kernels)")]
    con.close()
    assert cols == [c.strip() for c in KERNELS_VIEW_COLUMNS.split(",")]


def test_rocpd_without_dispatches_or_tables(tmp_path):
    import sqlite3

    empty = tmp_path / "empty.db"
    write_rocpd(empty, [])
    with pytest.raises(UserError, match=r"empty.db: rocpd database has no kernel dispatches"):
        load_kernel_table(empty)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (a)").connection.commit()
    with pytest.raises(UserError, match=r"other.db: SQLite database without rocpd kernel data"):
        load_kernel_table(other)


def test_rocpd_kernels_are_summed_by_kernel_id_in_sql_then_by_name(tmp_path):
    """Two symbols of one name (one kernel loaded by two code objects) give one row; a dispatch of
    a kernel with no symbol is no row (the kernels view's join drops it too)."""
    import sqlite3

    db = tmp_path / "x.db"
    write_rocpd(db, DISPATCHES)
    con = sqlite3.connect(db)
    table = "rocpd_kernel_dispatch_" + next(r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_kernel_dispatch_%'"))[len("rocpd_kernel_dispatch_"):]
    symbols = table.replace("rocpd_kernel_dispatch_", "rocpd_info_kernel_symbol_")
    first = con.execute(f'SELECT id, kernel_name, display_name FROM "{symbols}" ORDER BY id LIMIT 1').fetchone()
    con.execute(f'INSERT INTO "{symbols}" ("id", "guid", "nid", "pid", "kernel_name", "display_name") '
                "VALUES (99, 'g', 1, 4242, ?, ?)", first[1:])
    con.execute(f'UPDATE "{table}" SET kernel_id = 99 WHERE id = (SELECT MIN(id) FROM "{table}" WHERE kernel_id = ?)',
                (first[0],))
    con.execute(f'INSERT INTO "{table}" ("id", "kernel_id", "start", "end") VALUES (1000, 555, 0, 10)')
    con.commit()
    con.close()
    got, _ = load_kernel_table(db)
    assert_matches(got, EXPECTED)

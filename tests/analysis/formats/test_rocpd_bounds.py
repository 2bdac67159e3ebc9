"""A crafted rocpd database held the reader 60-65 s (issue 40, item 4): a view that cross-joins a
1,000-row table, also when the file merely sits in a scanned folder. rocpd's own tables are read
whatever views the file defines, and what must go through a view is bounded by SQLite steps and
time, well under 10 s."""

from __future__ import annotations

import sqlite3
import time

import pytest
from support import samples
from support.rocpd_db import UUID, write_rocpd

from tinylab.analysis import formats
from tinylab.core.errors import UserError

CROSS = "FROM rocpd_crossed a, rocpd_crossed b, rocpd_crossed c, rocpd_crossed d"  # 10^12 rows


def _thousand_rows(con: sqlite3.Connection) -> None:
    """A table of rocpd's name prefix (the authorizer lets a view read it) with 1,000 rows."""
    con.execute("CREATE TABLE rocpd_crossed (id INTEGER)")
    con.executemany("INSERT INTO rocpd_crossed VALUES (?)", [(i,) for i in range(1000)])


def test_a_crafted_view_over_rocpd_tables_is_not_run(tmp_path):
    """The file's `rocpd_kernel_dispatch` view repeats every dispatch 10^9 times (the reader used to
    aggregate it until its 60 s limit); the process's dispatch table is read instead."""
    db = tmp_path / "4242_results.db"
    write_rocpd(db, samples.rocm7_dispatches())
    con = sqlite3.connect(db)
    _thousand_rows(con)
    con.executescript(f"""
        DROP VIEW rocpd_kernel_dispatch;
        CREATE VIEW rocpd_kernel_dispatch AS SELECT K.* FROM "rocpd_kernel_dispatch_{UUID}" K,
            rocpd_crossed a, rocpd_crossed b, rocpd_crossed c;
    """)
    con.commit()
    con.close()
    started = time.monotonic()
    table = formats.load(db).table
    assert time.monotonic() - started < 5
    assert table["calls"].sum() == len(samples.rocm7_dispatches())
    started = time.monotonic()
    assert formats.load(tmp_path).table["calls"].sum() == len(samples.rocm7_dispatches())  # in a folder too
    assert time.monotonic() - started < 5


def test_a_crafted_kernels_view_is_stopped_within_its_budget(tmp_path):
    """No dispatch table, so the `kernels` view is read: its cross join is stopped by the step budget."""
    db = tmp_path / "crafted_results.db"
    con = sqlite3.connect(db)
    _thousand_rows(con)
    con.execute(f"CREATE VIEW kernels AS SELECT 'k' AS name, a.id AS duration {CROSS}")
    con.commit()
    con.close()
    started = time.monotonic()
    with pytest.raises(UserError, match=r"crafted_results.db: reading it took over [\d,]+ SQLite steps|"
                                        r"crafted_results.db: reading it took over \d+ s"):
        formats.load(db)
    assert time.monotonic() - started < 10

"""rocpd databases made from rocprofiler-sdk's own schema files (tests/support/rocpd_schema): the
kernel table from its tables, the step cut from its ROCTx-named regions (ROCm 10.1+), HIP events
(schema 3.0.4) and graph launches (3.0.2) counted where present, a newer schema read by the tables
it has."""

from __future__ import annotations

import sqlite3

from support import samples
from support.rocpd_db import GUID, write_sdk_rocpd

from tinylab.analysis import formats
from tinylab.profilers.rocm import rocpd_measured

SFX = "_" + GUID.replace("-", "_")
DISPATCHES = samples.rocm7_dispatches()


def test_the_sdk_schema_is_read_and_cut_by_its_roctx_regions(tmp_path):
    db = tmp_path / "rocpd.db"
    starts = sorted(start for _, start, _ in DISPATCHES)
    first, last, middle = starts[0], max(end for _, _, end in DISPATCHES), starts[len(starts) // 2]
    write_sdk_rocpd(db, DISPATCHES, [("tinylab warm-up step 0", first - 1, middle - 1), ("tinylab step 1", middle - 1, last + 1),
                                     ("hipLaunchKernel", first, first + 5)])
    parsed = formats.load(db)
    assert parsed.format == "rocpd" and parsed.table["calls"].sum() == len(DISPATCHES) and parsed.note is None
    (table, steps), scope = rocpd_measured(db)
    later = sum(1 for _, start, _ in DISPATCHES if start >= middle - 1)
    assert steps == 1 and table["calls"].sum() == later and "kernels of the 1 measured steps" in scope


def test_without_roctx_named_regions_the_whole_run_and_why(tmp_path):
    db = tmp_path / "rocpd.db"
    write_sdk_rocpd(db, DISPATCHES)
    measured, scope = rocpd_measured(db)
    assert measured is None and "names marker regions after their message from ROCm 10.1" in scope


def test_hip_events_and_graph_launches_are_counted(tmp_path):
    db = tmp_path / "rocpd.db"
    write_sdk_rocpd(db, DISPATCHES)
    con = sqlite3.connect(db)
    con.execute(f'CREATE TABLE "rocpd_hip_event{SFX}" (id INTEGER PRIMARY KEY, guid TEXT)')
    con.execute(f'CREATE TABLE "rocpd_graph_launch{SFX}" (id INTEGER PRIMARY KEY, guid TEXT)')
    con.executemany(f'INSERT INTO "rocpd_hip_event{SFX}" (guid) VALUES (?)', [(GUID,)] * 3)
    con.execute(f'INSERT INTO "rocpd_graph_launch{SFX}" (guid) VALUES (?)', (GUID,))
    con.commit()
    con.close()
    assert formats.load(db).note == "also recorded: 3 HIP events (hipEventRecord, hipStreamWaitEvent), 1 HIP graph launches"


def test_a_newer_schema_is_read_by_the_tables_it_has(tmp_path):
    db = tmp_path / "rocpd.db"
    write_sdk_rocpd(db, DISPATCHES)
    con = sqlite3.connect(db)
    con.execute(f"UPDATE \"rocpd_metadata{SFX}\" SET value = '4.1.0' WHERE tag = 'schema_version'")
    con.execute("DROP VIEW regions")
    con.execute("DROP VIEW rocpd_region")
    con.execute(f'DROP TABLE "rocpd_region{SFX}"')
    con.commit()
    con.close()
    parsed = formats.load(db)
    assert parsed.table["calls"].sum() == len(DISPATCHES)
    assert parsed.note == "rocpd schema 4.1.0, newer than the 3.0.x read here: read by the tables it has (it has no rocpd_region)"

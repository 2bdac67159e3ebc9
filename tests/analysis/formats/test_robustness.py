"""Bad input gives a one-line UserError naming the file (exit 2 from the CLI), never a traceback.

Property-based tests fuzz every reader: arbitrary bytes, real files cut at any byte, real files
with bytes overwritten, columns shuffled (which must not change the table at all), and random
JSON traces and rocpd databases.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import samples
from support.paths import FIX
from support.rocpd_db import write_rocpd

from tinylab.analysis import formats
from tinylab.core.categories import CATEGORIES
from tinylab.analysis.formats import detect
from tinylab.analysis.hotspots import load_kernel_table
from tinylab.cli import main
from tinylab.core.errors import UserError

DISPATCHES = samples.rocm7_dispatches()
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: One real (or documented-format) file per reader.
TEXT_SAMPLES: dict[str, bytes] = {
    "rocprofv3-kernel-trace": (FIX / "rocprofv3/rocm7-docs-data/kernel_trace.csv").read_bytes(),
    "rocprofv3-kernel-stats": (FIX / "rocprofv3/hpctraining-pytorch-resnet/pid_kernels_kernel_stats.mpi_rank.csv").read_bytes(),
    "rocprofv3-counter-collection": (FIX / "rocprofv3/rocm7-docs-data/counter_collection.csv").read_bytes(),
    "rocprofv3-summary": (FIX / "rocprofv3/rocm7-docs-data/summary.txt").read_bytes(),
    "rocprof-v1-stats": (FIX / "rocprof-v1/results.stats.batched_gemm.csv").read_bytes(),
    "rocpd-csv": samples.rocpd_convert_csv(DISPATCHES).encode(),
    "rocpd-summary": samples.rocpd_summary_csv(DISPATCHES).encode(),
    "rocpd-summary-console": (FIX / "rocpd/hpctraining-rocm7.1.1/rocpd_summary_by_rank_console.txt").read_bytes(),
    "rocprof-compute": (FIX / "rocprof-compute/vcopy_MI200/timestamps.csv").read_bytes(),
    "rocprof-compute-top": samples.rocprof_compute_top(DISPATCHES).encode(),
    "rocprof-sys-wall-clock": (FIX / "rocprof-sys/docs/wall_clock.example.txt").read_bytes(),
    "rocprof-sys-json": samples.wall_clock_json(DISPATCHES).encode(),
    "ncu": (FIX / "ncu/h100_ncu2025.3/ncu_raw.csv").read_bytes(),
    "ncu-details": (FIX / "ncu/h100_ncu2025.3/ncu_details_metrics.csv").read_bytes(),
    "nsys-kern-sum": samples.nsys_kern_sum(DISPATCHES).encode(),
    "nsys-gpu-trace": samples.nsys_gpu_trace(DISPATCHES).encode(),
    "pytorch-trace": gzip.decompress((FIX / "pytorch-profiler/cuda_h100/torchprof_trace.json.gz").read_bytes()),
    "pytorch-operators": (FIX / "pytorch-profiler/cuda_h100/torchprof_key_averages.csv").read_bytes(),
}


def load_bytes(data: bytes, suffix: str = ".out"):
    """Parse bytes written to a temporary file: a Parsed, or the UserError it raised."""
    fd, name = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            return formats.load(Path(name))
        except UserError as exc:
            message = str(exc)
            assert message.startswith(name + ": "), message
            assert "\n" not in message
            return exc
    finally:
        os.unlink(name)


def check_table(result) -> None:
    if isinstance(result, UserError):
        return
    table = result.table
    assert not table.empty
    assert (table["calls"] >= 0).all()
    assert table["category"].isin(CATEGORIES).all()


# ----------------------------------------------------------------------------- fixed bad inputs
@pytest.mark.parametrize("content,message", [
    (b"", "file is empty"),
    (b"  \n\n\t ", "file is empty"),
    (b"\x00\x01\x02garbage\xff\xfe" * 50, "binary data"),
    (b"a,b,c\n1,2,3\n", "no kernel-table header found (expected rocprofv3 kernel_stats/kernel_trace"),
    (b'"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n', "holds no kernel rows"),
    (b'"Kind","Agent_Id","Kernel_Name","Start_Timestamp","End_Timestamp"\n', "kernel_trace.csv holds no kernel rows"),
    (b'{"traceEvents": [{"ph": "X", "cat": "kern', "not valid JSON (truncated?)"),
    (b'{"traceEvents": []}', "trace has no kernel or cpu_op events"),
    (b"SQLite format 3\x00" + b"\x13" * 200, "SQLite database"),
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\xae", "corrupt or truncated gzip data"),
    (b'"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n"k",lots,3,3,1,1,1,0\n"j",2,3,3,1,1,1,0\n',
     "line 2: Calls is not a number: 'lots'"),
])
def test_bad_files_give_one_line_errors(content, message):
    result = load_bytes(content)
    assert isinstance(result, UserError)
    assert message in str(result)


def test_cli_exit_code_and_message(tmp_path, capsys):
    bad = tmp_path / "out.csv"
    bad.write_text("x,y\n1,2\n")
    assert main(["hotspots", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tinylab: error: {bad}: no kernel-table header found") and err.count("\n") == 1


def test_truncated_last_row_is_skipped_with_a_note(tmp_path):
    text = (FIX / "rocprofv3/rocm7-docs-data/kernel_trace.csv").read_text()
    cut = text[: text.rindex(",1550151853148397") + 8]  # inside the last row's Start_Timestamp
    path = tmp_path / "cut.csv"
    path.write_text(cut)
    table, _ = load_kernel_table(path)
    assert int(table["calls"].sum()) == 8 and "truncated" in table.attrs["note"]


def test_corrupt_rocpd_database_from_a_real_one(tmp_path):
    db = tmp_path / "good.db"
    write_rocpd(db, DISPATCHES)
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xa5" * (4096 - 100)  # smash the schema page, keep the magic header
    result = load_bytes(bytes(data))
    assert isinstance(result, UserError) and "SQLite database" in str(result)


# ----------------------------------------------------------------------------- fuzzing
@FUZZ
@given(st.binary(max_size=3000))
def test_arbitrary_bytes(data):
    check_table(load_bytes(data))


@FUZZ
@given(st.sampled_from(sorted(TEXT_SAMPLES)), st.floats(0, 1))
def test_real_files_cut_anywhere(fmt, fraction):
    data = TEXT_SAMPLES[fmt]
    check_table(load_bytes(data[: int(len(data) * fraction)]))


@FUZZ
@given(st.sampled_from(sorted(TEXT_SAMPLES)), st.data())
def test_real_files_with_bytes_overwritten(fmt, data):
    blob = bytearray(TEXT_SAMPLES[fmt])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(blob) - 1))
        patch = data.draw(st.binary(min_size=1, max_size=12))
        blob[at : at + len(patch)] = patch
    check_table(load_bytes(bytes(blob)))


#: CSV formats whose header is one line: shuffling columns must not change the table.
SHUFFLABLE = ["rocprofv3-kernel-trace", "rocprofv3-kernel-stats", "rocprof-v1-stats", "rocpd-csv", "rocpd-summary",
              "rocprof-compute", "rocprof-compute-top", "nsys-gpu-trace", "pytorch-operators", "ncu-details"]


@FUZZ
@given(st.sampled_from(SHUFFLABLE), st.randoms(use_true_random=False))
def test_shuffled_columns_give_the_same_table(fmt, rng):
    text = TEXT_SAMPLES[fmt].decode()
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if detect.classify_line(line))
    preamble, body = lines[:start], [r for r in csv.reader(lines[start:]) if r]
    order = list(range(len(body[0])))
    rng.shuffle(order)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([[r[i] for i in order] for r in body])
    original = load_bytes(text.encode())
    shuffled = load_bytes(("\n".join(preamble + [""]) if preamble else "").encode() + out.getvalue().encode())
    assert not isinstance(original, UserError)
    assert not isinstance(shuffled, UserError), shuffled
    assert original.format == shuffled.format
    assert original.table.equals(shuffled.table)


TEXT_TABLES = {"rocprofv3-summary", "rocpd-summary-console", "rocprof-sys-wall-clock"}
CSV_FORMATS = [f for f in sorted(TEXT_SAMPLES) if f not in TEXT_TABLES | {"pytorch-trace", "rocprof-sys-json"}]
cells = st.text(alphabet="0123456789.,-eE+ ()<>:_|\"xKn/a", max_size=12) | st.sampled_from(["", "n/a", "nan", "1e400", "-5"])


@FUZZ
@given(st.sampled_from(CSV_FORMATS), st.lists(st.lists(cells, max_size=30), max_size=8), st.randoms(use_true_random=False))
def test_ragged_random_rows_under_every_csv_header(fmt, body, rng):
    """Each reader's real header, its columns in any order, over rows of any length and content."""
    lines = TEXT_SAMPLES[fmt].decode().split("\n")
    start = next(i for i, line in enumerate(lines) if detect.classify_line(line))
    header = next(csv.reader([lines[start]]))
    rng.shuffle(header)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *body])
    check_table(load_bytes(("\n".join(lines[:start]) + "\n" + out.getvalue()).encode()))


TABLE_HEADS = {
    "rocprofv3-summary": "ROCPROFV3 KERNEL_DISPATCH SUMMARY:\n\n| NAME | DOMAIN | CALLS | DURATION (nsec) | AVERAGE (nsec) "
                         "| PERCENT (INC) | MIN (nsec) | MAX (nsec) | STDDEV |\n|----|----|----|----|----|----|----|----|----|",
    "rocprof-sys-wall-clock": "| LABEL | COUNT | DEPTH | METRIC | UNITS | SUM | MEAN | MIN | MAX | VAR | STDDEV | % SELF |",
    "rocpd-summary-console": "KERNELS_SUMMARY:\n Name  Calls  DURATION (nsec)  AVERAGE (nsec)  PERCENT (INC)  MIN (nsec)  MAX (nsec)  STD_DEV",
}


@FUZZ
@given(st.sampled_from(sorted(TABLE_HEADS)), st.lists(st.lists(cells, max_size=16), max_size=8))
def test_random_rows_in_text_tables(fmt, body):
    if fmt == "rocpd-summary-console":
        rows = [" ".join(row) for row in body]
    else:
        rows = ["| " + " | ".join(row) + " |" for row in body]
    check_table(load_bytes(("\n".join([TABLE_HEADS[fmt], *rows]) + "\n").encode()))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)
events = st.lists(
    st.fixed_dictionaries(
        {"ph": st.sampled_from(["X", "i", "B", None]), "cat": st.sampled_from(["kernel", "cpu_op", "Kernel", "x"]) | json_values},
        optional={"name": st.text(max_size=10) | json_values, "ts": json_values | st.floats(0, 1e6),
                  "dur": json_values | st.floats(-5, 1e4), "pid": json_values, "tid": json_values},
    ) | json_values,
    max_size=30,
)


@FUZZ
@given(events)
def test_random_trace_events(evts):
    check_table(load_bytes(json.dumps({"traceEvents": evts}).encode(), ".json"))


@FUZZ
@given(json_values)
def test_random_timemory_json(value):
    check_table(load_bytes(json.dumps({"timemory": {"wall_clock": value}}).encode(), ".json"))


sql_values = st.none() | st.integers(-(2**62), 2**62) | st.floats(allow_nan=False) | st.text(max_size=6) | st.binary(max_size=4)


@FUZZ
@given(st.lists(st.tuples(st.text(max_size=6), sql_values, sql_values), max_size=12), st.sampled_from(["working", "empty", "none"]))
def test_random_rocpd_rows(rows, kernels_view):
    """Kernel names are text; start/end may be anything SQLite stores (NULL, text, blobs, floats)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "x.db"
        write_rocpd(db, rows, kernels_view=kernels_view)
        try:
            check_table(formats.load(db))
        except UserError as exc:
            assert str(exc).startswith(str(db))


def test_sqlite_file_that_is_not_rocpd_but_valid(tmp_path):
    db = tmp_path / "kernels.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE kernels (name TEXT, duration TEXT)")
    con.execute("INSERT INTO kernels VALUES ('k', 'fast')")
    con.commit()
    con.close()
    check_table(load_bytes(db.read_bytes()))


# ----------------------------------------------------------------------------- bounds: nothing hangs
RECURSIVE = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)"


def _crafted(path: Path, script: str) -> Path:
    con = sqlite3.connect(path)
    con.executescript(script)
    con.close()
    return path


def _slow_db(path: Path) -> Path:
    """No recursion and only rocpd's names, but a `kernels` view (read where there are no dispatch
    tables) whose cross join would run for hours."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE rocpd_string (id INTEGER);
        CREATE VIEW kernels AS SELECT 'k' AS name, a.id AS duration
            FROM rocpd_string a, rocpd_string b, rocpd_string c, rocpd_string d;
    """)
    con.executemany("INSERT INTO rocpd_string VALUES (?)", [(i,) for i in range(3000)])
    con.commit()
    con.close()
    return path


def test_a_recursive_view_is_refused_at_once(tmp_path):
    """A `kernels` view that recurses forever, and dispatch data behind one: never run."""
    db = _crafted(tmp_path / "crafted.db", f"""
        CREATE VIEW kernels AS {RECURSIVE} SELECT 'k' AS name, x AS duration FROM n;
        CREATE TABLE rocpd_info_kernel_symbol (id INTEGER, kernel_name TEXT);
        CREATE VIEW rocpd_kernel_dispatch AS {RECURSIVE} SELECT 1 AS kernel_id, x AS start, x + 1 AS "end" FROM n;
    """)
    with pytest.raises(UserError, match=r"crafted.db: its kernels view goes through what tinylab does not run "
                                        r"\(a recursive query \(n\)\): not read"):
        formats.load(db)
    with pytest.raises(UserError, match="no supported profiler output"):  # also when it merely sits in a folder
        formats.load(tmp_path)


def test_a_view_reading_a_recursive_view_is_refused(tmp_path):
    """The recursion hidden one view deeper (`kernels` reads `evil`, which recurses) ran until the
    60 s limit; a folder of two such files took two minutes."""
    db = _crafted(tmp_path / "results.db", f"""
        CREATE VIEW evil AS {RECURSIVE} SELECT 'k' AS name, x AS duration FROM n;
        CREATE VIEW kernels AS SELECT name, duration FROM evil;
    """)
    with pytest.raises(UserError) as caught:
        formats.load(db)
    assert str(caught.value) == (f"{db}: its kernels view goes through what tinylab does not run "
                                 "(reads 'evil' through view 'kernels', which is not rocpd's): not read")
    _crafted(tmp_path / "again.db", "CREATE VIEW rocpd_x AS SELECT * FROM evil_two;"
                                    f"CREATE VIEW evil_two AS {RECURSIVE} SELECT x FROM n;"
                                    "CREATE VIEW kernels AS SELECT 'k' AS name, x AS duration FROM rocpd_x;")
    with pytest.raises(UserError, match=r"again.db: .*\(reads 'evil_two' through view 'rocpd_x'"):
        formats.load(tmp_path / "again.db")


def test_the_real_tables_are_read_when_the_kernels_view_is_refused(tmp_path):
    db = tmp_path / "4242_results.db"
    write_rocpd(db, samples.rocm7_dispatches())
    _crafted(db, f"""
        DROP VIEW kernels;
        CREATE VIEW evil AS {RECURSIVE} SELECT 'k' AS name, x AS duration FROM n;
        CREATE VIEW kernels AS SELECT name, duration FROM evil;
    """)
    table, fmt = load_kernel_table(db)  # rocpd's own tables: the file's views are never run
    assert fmt == "rocpd" and table["calls"].sum() == len(samples.rocm7_dispatches())
    assert table.attrs["note"] is None


@pytest.mark.parametrize("call, why", [
    ("zeroblob(1000000000)", "calls zeroblob() in view 'kernels'"),
    ("printf('%.*c', 1000000000, 'x')", "calls printf() in view 'kernels'"),
])
def test_functions_that_make_huge_values_are_refused(tmp_path, call, why):
    db = _crafted(tmp_path / "big.db", f"CREATE VIEW kernels AS SELECT {call} AS name, 1 AS duration;")
    with pytest.raises(UserError, match=re.escape(why)):
        formats.load(db)


def test_a_value_too_large_to_read_is_refused(tmp_path, monkeypatch):
    from tinylab.analysis.formats import rocpd

    monkeypatch.setattr(rocpd, "VALUE_LIMIT", 1 << 20)
    db = tmp_path / "huge.db"
    write_rocpd(db, [("k" * (2 << 20), 1, 5)])
    with pytest.raises(UserError, match=r"huge.db: a value larger than 1 MiB: not read"):
        formats.load(db)


def test_a_slow_query_is_stopped(tmp_path, monkeypatch):
    from tinylab.analysis.formats import rocpd

    monkeypatch.setattr(rocpd, "QUERY_SECONDS", 0.5)
    with pytest.raises(UserError, match=r"slow.db: reading it took over 0 s and was stopped"):
        formats.load(_slow_db(tmp_path / "slow.db"))


def test_one_time_budget_covers_a_whole_folder(tmp_path, monkeypatch):
    """Each crafted database in a scanned folder had its own 60 s: N files cost N minutes."""
    monkeypatch.setattr(formats, "LOAD_SECONDS", 1.0)
    for name in ("a_results.db", "b_results.db", "c_results.db"):
        _slow_db(tmp_path / name)
    with pytest.raises(UserError) as caught:
        formats.load(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path}: reading its profiler files took over 1 s; stopped before b_results.db "
                              f"({tmp_path / 'a_results.db'}: reading it took over 1 s and was stopped"), message


def test_a_folder_reads_on_past_a_refused_database_and_says_so(tmp_path):
    _crafted(tmp_path / "crafted_results.db", f"CREATE VIEW kernels AS {RECURSIVE} SELECT 'k' AS name, x AS duration FROM n;")
    (tmp_path / "run_kernel_trace.csv").write_text(samples.rocprofv3_trace_6x(samples.rocm7_dispatches()))
    table, fmt = load_kernel_table(tmp_path)
    assert fmt == "rocprofv3-kernel-trace" and table["calls"].sum() == len(samples.rocm7_dispatches())
    assert table.attrs["note"] == (f"read run_kernel_trace.csv; skipped {tmp_path / 'crafted_results.db'}: its kernels "
                                   "view goes through what tinylab does not run (a recursive query (n)): not read")


def test_a_folder_scan_stays_inside_and_survives_a_link_loop(tmp_path):
    inside = tmp_path / "profile"
    (inside / "host").mkdir(parents=True)
    (inside / "host" / "loop").symlink_to(inside, target_is_directory=True)
    (inside / "out").symlink_to(FIX, target_is_directory=True)  # real outputs, but outside the folder
    with pytest.raises(UserError, match="no supported profiler output found in this folder"):
        formats.load(inside)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "kernel_stats.csv"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="is a FIFO, not a regular file"):
        formats.load(fifo)
    with pytest.raises(UserError, match="no supported profiler output"):  # and skipped in a scan
        formats.load(tmp_path)


def test_a_huge_folder_scan_stops_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(formats, "SCAN_FILES", 20)
    for i in range(30):
        (tmp_path / f"notes{i}.txt").write_text("nothing here\n")
    with pytest.raises(UserError, match="stopped looking after 20 files"):
        formats.load(tmp_path)


@pytest.mark.parametrize("where", ["/proc/1", "/proc/1/root", "/root/.ssh/none"])
def test_system_folders_are_one_line_errors(where):
    with pytest.raises(UserError):
        formats.load(Path(where))

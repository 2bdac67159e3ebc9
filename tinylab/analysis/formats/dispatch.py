"""Per-dispatch CSV tables (one row a kernel launch): rocprofv3 kernel_trace and counter_collection,
`rocpd convert` CSV, rocprof-compute timestamps.csv / pmc_perf.csv. Millions of rows: pandas' C
parser reads only the columns needed.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from tinylab.analysis.formats._base import Columns, FormatError, Head, Parsed, join
from tinylab.analysis.formats.detect import header_offset
from tinylab.core.safeio import open_regular
from tinylab.core.kernel_table import counts_table, table_from_durations

_SCI = re.compile(r"^\s*-?\d+(?:\.\d+)?[eE][+-]?\d+\s*$")


def parse_dispatch_trace(path: Path, head: Head, fmt: str) -> Parsed:
    """rocprofv3 kernel_trace, rocpd convert CSV, rocprof-compute timestamps/pmc_perf, counters.

    These can be millions of rows: pandas' C parser reads only the needed columns.
    """
    offset, header, sample = header_offset(path, head)
    columns = Columns(header)
    i_name = columns.find("Kernel_Name")
    i_start = columns.find("Start_Timestamp", required=False)
    i_end = columns.find("End_Timestamp", required=False)
    i_dispatch = columns.find("Dispatch_Id", "Correlation_Id", required=False)
    wanted = sorted({i for i in (i_name, i_start, i_end, i_dispatch) if i is not None})
    df, last_complete = read_columns(path, offset, header, wanted, i_name)
    note = None
    if not last_complete and len(df):
        df = df.iloc[:-1]
        note = "the last row was incomplete (truncated file?) and was skipped"
    name_col = f"c{i_name}"
    df = df[df[name_col].notna()]
    if fmt == "rocprofv3-counter-collection" and i_dispatch is not None:
        # one row per (dispatch, counter): keep one row per dispatch
        df = df.drop_duplicates(subset=[f"c{i_dispatch}"])
    if i_start is None or i_end is None:
        return Parsed(counts_table(df[name_col]), fmt, join(note, "no timestamps in this file: call counts only"))
    start = _as_int_or_float(df[f"c{i_start}"])
    end = _as_int_or_float(df[f"c{i_end}"])
    duration = (end - start).astype(float)
    valid = duration.notna() & (duration >= 0)
    skipped = int((~valid).sum())
    rounded = _rounded(sample, columns, i_start, i_end)
    if rounded or (valid.any() and not (duration[valid] > 0).any()):
        why = "timestamps are rounded (e.g. 8.1097E+14)" if rounded else "all durations are zero"
        return Parsed(counts_table(df[name_col]), fmt, join(note, f"{why}: no kernel durations, call counts only"))
    if skipped:
        note = join(note, f"{skipped} rows without a valid End_Timestamp - Start_Timestamp were skipped")
    return Parsed(table_from_durations(df.loc[valid, name_col], duration[valid]), fmt, note)


def read_columns(path: Path, offset: int, header: list[str], wanted: list[int], names: int,
                 blank_lines: bool = False) -> tuple[pd.DataFrame, bool]:
    """The columns `wanted` (positions) of the CSV table whose header line starts at byte `offset`,
    named c<position>, with column `names` as a categorical (a million rows repeat a few hundred
    names: each is hashed once, never a string made a row); and whether the file's last line has
    all the header's fields (else it was cut off). `blank_lines`: a blank line is a row of NaN
    (where a table ends), else it is skipped."""
    with open_regular(path, follow_links=True) as fh:
        fh.seek(offset)
        try:
            df = pd.read_csv(fh, header=0, names=[f"c{i}" for i in range(len(header))], usecols=wanted, engine="c",
                             encoding_errors="replace", dtype={f"c{names}": "category"},
                             skip_blank_lines=not blank_lines)
        except pd.errors.EmptyDataError:
            raise FormatError("header but no rows") from None
        last_complete = _last_line_complete(fh, len(header))
    if len(df.columns) != len(wanted):
        raise FormatError("the header does not match the columns of the rows")
    return df, last_complete


def _last_line_complete(fh: io.BufferedReader, width: int) -> bool:
    """Whether the file's last non-empty line has all the header's fields (else it was cut off)."""
    fh.seek(0, io.SEEK_END)
    size = fh.tell()
    fh.seek(max(0, size - 65536))
    tail = fh.read().decode("utf-8", errors="replace").rstrip("\r\n")
    last = tail.rsplit("\n", 1)[-1]
    try:
        fields = next(csv.reader([last.rstrip("\r")]), [])
    except csv.Error:
        return False
    return len(fields) >= width


def _as_int_or_float(series: pd.Series) -> pd.Series:
    """Exact int64 when the column is all integers (ns epochs overflow float precision)."""
    if pd.api.types.is_integer_dtype(series):
        return series.astype("int64")
    return pd.to_numeric(series, errors="coerce")


def _rounded(sample: list[str], columns: Columns, i_start: int, i_end: int) -> bool:
    for fields in csv.reader([s for s in sample if s.strip()]):
        for i in (i_start, i_end):
            if i < len(fields) and _SCI.match(fields[i]):
                return True
    return False

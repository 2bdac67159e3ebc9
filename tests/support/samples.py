"""Sample outputs for formats with no real file in tests/fixtures, written from the documented
headers (docs/formats.md) and filled with the dispatches of a real fixture, so every format can be
checked against the same expected table. Stdlib only: the stand-in executables import it too.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROCM7_TRACE = FIXTURES / "rocprofv3/rocm7-docs-data/kernel_trace.csv"


def rocm7_dispatches(path: Path = ROCM7_TRACE) -> list[tuple[str, int, int]]:
    """(kernel name, start, end) of a real ROCm 7 docs kernel trace (default: 9 dispatches, 4 kernels)."""
    with open(path, newline="") as fh:
        return [(r["Kernel_Name"], int(r["Start_Timestamp"]), int(r["End_Timestamp"])) for r in csv.DictReader(fh)]


def expected_from_dispatches(dispatches: list[tuple[str, int, int]]) -> dict[str, tuple[int, int, int, int]]:
    """name -> (calls, total, min, max): computed here, independently of tinylab's code."""
    out: dict[str, list[int]] = {}
    for name, start, end in dispatches:
        d = end - start
        calls, total, lo, hi = out.get(name, [0, 0, d, d])
        out[name] = [calls + 1, total + d, min(lo, d), max(hi, d)]
    return {k: tuple(v) for k, v in out.items()}  # type: ignore[misc]


def _csv(rows: list[list[object]], quote_all: bool = True) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC if quote_all else csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerows(rows)
    return buf.getvalue()


def rocprofv3_trace_6x(dispatches: list[tuple[str, int, int]]) -> str:
    """ROCm 6.2-6.4.1 kernel_trace.csv header (no Stream_Id; integer Agent_Id)."""
    header = ["Kind", "Agent_Id", "Queue_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id",
              "Start_Timestamp", "End_Timestamp", "Private_Segment_Size", "Group_Segment_Size", "Workgroup_Size_X",
              "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
    rows = [["KERNEL_DISPATCH", 4, 1, 40021, i, 11, name, i, start, end, 0, 0, 1024, 1, 1, 1048576, 1, 1]
            for i, (name, start, end) in enumerate(dispatches, 1)]
    return _csv([header, *rows])


def rocprofv3_stats(dispatches: list[tuple[str, int, int]]) -> str:
    """*_kernel_stats.csv as rocprofv3 writes it (sorted by TotalDurationNs; numbers bare)."""
    expected = expected_from_dispatches(dispatches)
    grand = sum(v[1] for v in expected.values())
    lines = ['"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"']
    for name, (calls, total, lo, hi) in sorted(expected.items(), key=lambda kv: -kv[1][1]):
        lines.append(f'"{name}",{calls},{total},{total / calls:.6f},{100 * total / grand:.2f},{lo},{hi},0.00000000e+00')
    return "\n".join(lines) + "\n"


def rocpd_convert_csv(dispatches: list[tuple[str, int, int]]) -> str:
    """`rocpd convert -f csv` kernel trace, real ROCm 7.1.1 capitalization (leading Guid, Lds_Block_Size)."""
    header = ["Guid", "Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id",
              "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp", "Lds_Block_Size", "Scratch_Size",
              "Vgpr_Count", "Accum_Vgpr_Count", "Sgpr_Count", "Workgroup_Size_X", "Workgroup_Size_Y",
              "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
    rows = [["00004a6b-5e3c-7cd1-a4e4-6ad5ea5d8bb2", "KERNEL_DISPATCH", "Agent 4", 1, 0, 714789, i, 7, name, i,
             start, end, 0, 0, 8, 0, 16, 64, 1, 1, 1024, 1024, 1] for i, (name, start, end) in enumerate(dispatches, 1)]
    return _csv([header, *rows])


def nsys_kern_sum(dispatches: list[tuple[str, int, int]], style: str = "2023") -> str:
    """nsys stats cuda_gpu_kern_sum (2023+), gpukernsum (2022, GridXYZ/BlockXYZ) or pre-2021 headers."""
    expected = expected_from_dispatches(dispatches)
    grand = sum(v[1] for v in expected.values())
    if style == "2023":
        header = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Name"]
    elif style == "2022":
        header = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)",
                  "GridXYZ", "BlockXYZ", "Name"]
    else:
        header = ["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "Name"]
    rows = []
    for name, (calls, total, lo, hi) in sorted(expected.items(), key=lambda kv: -kv[1][1]):
        pct, avg = round(100 * total / grand, 1), round(total / calls, 1)
        if style == "2023":
            rows.append([pct, total, calls, avg, avg, lo, hi, 0.0, name])
        elif style == "2022":
            rows.append([pct, total, calls, avg, avg, lo, hi, 0.0, "1024    1    1", "64    1    1", name])
        else:
            rows.append([pct, total, calls, avg, lo, hi, name])
    preamble = "Generating SQLite file report.sqlite from report.nsys-rep\nProcessing [report.sqlite] with [cuda_gpu_kern_sum.py]... \n\n"
    return preamble + _csv([header, *rows], quote_all=False)


def nsys_gpu_trace(dispatches: list[tuple[str, int, int]]) -> str:
    header = ["Start (ns)", "Duration (ns)", "CorrId", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Reg/Trd",
              "StcSMem (MB)", "DymSMem (MB)", "Bytes (MB)", "Throughput (MBps)", "SrcMemKd", "DstMemKd", "Device",
              "Ctx", "Strm", "Name"]
    rows = [[start, end - start, i, 1024, 1, 1, 64, 1, 1, 16, 0, 0, "", "", "", "", "NVIDIA H100 80GB HBM3 (0)", 1, 7, name]
            for i, (name, start, end) in enumerate(dispatches, 1)]
    return _csv([header, *rows], quote_all=False)


def nsys_pushpop_trace(ranges: list[tuple[str, int, int]]) -> str:
    """nsys stats --report nvtx_pushpop_trace: the report script's columns ("Start:ts_ns" -> "Start (ns)")
    and Name "<domain>:<message>", as real output shows (":copy_in" for the default domain); ranges are
    (message, start, end), flat (no nesting: Lvl 0, no parent)."""
    header = ["Start (ns)", "End (ns)", "Duration (ns)", "DurChild (ns)", "DurNonChild (ns)", "Name", "PID", "TID",
              "Lvl", "NumChild", "RangeId", "ParentId", "RangeStack", "NameTree"]
    rows = [[start, end, end - start, 0, end - start, f":{name}", 4242, 4242, 0, 0, i, "", f":{i}", f":{name}"]
            for i, (name, start, end) in enumerate(ranges, 1)]
    return _csv([header, *rows], quote_all=False)


def rocprof_compute_top(dispatches: list[tuple[str, int, int]], unit: str = "ns") -> str:
    """pmc_kernel_top.csv written by `rocprof-compute analyze` (unit from --time-unit)."""
    scale = {"ns": 1, "us": 1e3, "ms": 1e6}[unit]
    expected = expected_from_dispatches(dispatches)
    grand = sum(v[1] for v in expected.values())
    rows = [["Kernel_Name", "Count", f"Sum({unit})", f"Mean({unit})", f"Median({unit})", "Pct"]]
    for name, (calls, total, _, _) in sorted(expected.items(), key=lambda kv: -kv[1][1]):
        rows.append([name, calls, total / scale, total / calls / scale, total / calls / scale, 100 * total / grand])
    return _csv(rows, quote_all=False)


def rocpd_summary_csv(dispatches: list[tuple[str, int, int]], by_rank: bool = False) -> str:
    """`rocpd summary --format csv` kernels_summary.csv (a pandas to_csv)."""
    expected = expected_from_dispatches(dispatches)
    grand = sum(v[1] for v in expected.values())
    head = ["Name", "Calls", "DURATION (nsec)", "AVERAGE (nsec)", "PERCENT (INC)", "MIN (nsec)", "MAX (nsec)", "STD_DEV"]
    rows = [(["ProcessID", "Hostname"] if by_rank else []) + head]
    for name, (calls, total, lo, hi) in sorted(expected.items(), key=lambda kv: -kv[1][1]):
        rows.append(([714789, "ppac-pl1-s24-26"] if by_rank else []) + [name, calls, total, total / calls, 100 * total / grand, lo, hi, 0.0])
    return _csv(rows, quote_all=False)


def ncu_details_sections(dispatches: list[tuple[str, int, int]]) -> str:
    """ncu --csv --section SpeedOfLight: 20 columns, Duration in usecond, rule rows with no metric."""
    header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
              "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name",
              "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"]
    rows = []
    for i, (name, start, end) in enumerate(dispatches):
        base = [str(i), "618", "python3.12", "127.0.0.1", name, "1", "7", "(256, 1, 1)", "(4096, 1, 1)", "0", "9.0",
                "GPU Speed Of Light Throughput"]
        rows.append(base + ["DRAM Frequency", "hz", "2,619,000,000", "", "", "", "", ""])
        rows.append(base + ["Duration", "usecond", f"{(end - start) / 1000:,.2f}", "", "", "", "", ""])
        rows.append(base + ["", "", "", "SOLBottleneck", "OPT", "This kernel grid is too small, see a, b", "global", "3.45"])
    text = "==WARNING== Note: Running with unmodified GPU clocks.\n==PROF== Connected to process 618 (/usr/bin/python3.12)\n"
    text += "step 1/3 | loss 6.2\n==PROF== Disconnected from process 618\n"
    return text + _csv([header, *rows])


def wall_clock_json(dispatches: list[tuple[str, int, int]], ranges: tuple[str, ...] = ()) -> str:
    """rocprof-sys wall_clock-<pid>.json (timemory flat layout, documented in rocprof-sys docs):
    host regions plus one entry per kernel dispatch, in seconds; `ranges`: roctx range names, which
    rocprof-sys records as host regions too (a GPU run's "tinylab step 3", "forward", ...)."""
    graph = [
        {"prefix": "|0>>> main", "depth": 0, "laps": 1, "sum": 2.5, "min": 2.5, "max": 2.5},
        {"prefix": "|0>>> |_hipLaunchKernel", "depth": 1, "laps": len(dispatches), "sum": 0.001, "min": 1e-5, "max": 1e-4},
    ]
    graph += [{"prefix": f"|0>>> |_{name}", "depth": 1, "laps": 1, "sum": 0.01, "min": 0.01, "max": 0.01} for name in ranges]
    expected = expected_from_dispatches(dispatches)
    for name, (calls, total, lo, hi) in expected.items():
        graph.append({"prefix": f"|1>>> {name}", "depth": 0, "laps": calls, "sum": total / 1e9, "min": lo / 1e9, "max": hi / 1e9})
    nodes = [{
        "hash": 1000 + i, "prefix": g["prefix"], "depth": g["depth"],
        "entry": {"cereal_class_version": 0, "laps": g["laps"], "value": int(g["sum"] * 1e9),
                  "accum": int(g["sum"] * 1e9), "repr_data": g["sum"], "repr_display": g["sum"]},
        "stats": {"cereal_class_version": 0, "sum": g["sum"], "count": g["laps"], "min": g["min"], "max": g["max"],
                  "sqr": g["sum"] ** 2, "mean": g["sum"] / g["laps"], "stddev": 0.0},
        "rolling_hash": 1000 + i,
    } for i, g in enumerate(graph)]
    doc = {"timemory": {"wall_clock": {
        "properties": {"cereal_class_version": 0, "value": 78, "enum": "WALL_CLOCK", "id": "wall_clock"},
        "type": "wall_clock", "description": "Real-clock timer (i.e. wall-clock timer)", "unit_value": 1000000000,
        "unit_repr": "sec", "thread_scope_only": False, "thread_count": 2, "mpi_size": 1, "upcxx_size": 1,
        "process_count": 1, "num_ranks": 1, "concurrency": 2,
        "ranks": [{"rank": 0, "graph_size": len(nodes), "graph": nodes}],
    }}}
    return json.dumps(doc, indent=3)


def rounded_compute_timestamps() -> str:
    """rocprof-compute timestamps.csv as in the upstream MI300X_A1 test workload, where the
    timestamps were saved as 8.1097E+14 (precision lost): durations are unknowable."""
    src = (FIXTURES / "rocprof-compute/vcopy_MI200/timestamps.csv").read_text()
    rows = list(csv.reader(io.StringIO(src)))
    header = rows[0]
    i_start, i_end = header.index("Start_Timestamp"), header.index("End_Timestamp")
    for row in rows[1:]:
        row[i_start] = row[i_end] = "8.1097E+14"
    return _csv(rows, quote_all=False)

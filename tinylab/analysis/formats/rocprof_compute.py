"""rocprof-compute (formerly Omniperf): its workload folder (where it is, its dispatches and the ones
worth a speed-of-light table, its release and GPU, the roofline ceilings), `analyze`'s
pmc_kernel_top.csv and the speed-of-light tables analyze writes, in either of its layouts: per-table
CSVs (`--save-dfs`, or `--output-format csv` to 3.6) or one CSV per analysis view (3.7+). The
workload's per-dispatch files (timestamps.csv, pmc_perf.csv) are read as kernel tables by dispatch.py.
"""

from __future__ import annotations

import csv
import io
import math
from contextlib import closing
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from tinylab.analysis.formats._base import (
    Head,
    Parsed,
    complete_rows,
    number,
    unit_factor,
)
from tinylab.analysis.formats.detect import csv_table
from tinylab.core.kernel_table import build_table
from tinylab.core import rocm_releases as rr
from tinylab.core.safeio import open_regular


#: A workload's per-dispatch files, best first: the timing pass, else pmc_perf.csv (the join of every
#: pass; 7.0's rocprofv3 backend runs no timing pass). formats.load reads the first there is as the
#: workload's kernel table, dispatch_times its dispatches.
WORKLOAD_TABLES = ("timestamps.csv", "pmc_perf.csv")


def _csv_rows(path: Path) -> Iterator[dict[str, str]]:
    """The rows of a CSV file rocprof-compute wrote, as dicts by header (bad UTF-8 replaced)."""
    with open_regular(path) as raw, io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="") as fh:
        yield from csv.DictReader(fh)


def parse_top(path: Path, head: Head) -> Parsed:
    columns, rows = csv_table(path, head)
    i_name = columns.find("Kernel_Name")
    i_count = columns.find("Count")
    i_sum, unit = columns.match(r"sum\((\w+)\)")
    factor = unit_factor(unit, "Sum(...)")
    rows, note = complete_rows(rows, 1 + max(i_name, i_count, i_sum))
    records = {
        "name": [f[i_name] for _, f in rows],
        "calls": [number(f[i_count], "Count", n) for n, f in rows],
        "total_ns": [number(f[i_sum], "Sum", n) * factor for n, f in rows],
    }
    return Parsed(build_table(pd.DataFrame(records)), "rocprof-compute-top", note)


#: What marks a workload folder: its kernel tables, analyze's top list, (3.6+, before analyze has
#: merged them into pmc_perf.csv) one results_<pass>.csv a counter pass, or (3.6+ --roof-only, which
#: writes nothing else) roofline.csv.
_WORKLOAD_MARKERS = ("timestamps.csv", "pmc_perf.csv", "pmc_kernel_top.csv")
_PASS_RESULTS = "results_*.csv"


def has_counters(folder: Path) -> bool:
    """The folder holds a workload's kernel tables or its per-pass results (something to analyze)."""
    return any((folder / m).is_file() for m in _WORKLOAD_MARKERS) or any(folder.glob(_PASS_RESULTS))


def _is_workload(folder: Path) -> bool:
    return has_counters(folder) or (folder / "roofline.csv").is_file()


def find_workload(root: Path) -> Path | None:
    """The folder holding pmc_perf.csv/timestamps.csv (or 3.6+'s per-pass results_*.csv): root itself
    or a child (<gpu_model>, a rank's folder)."""
    if not root.is_dir():
        return None
    if _is_workload(root):
        return root
    for child in sorted(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()):
        if _is_workload(child):
            return child
    return None


def dispatch_times(workload: Path) -> list[tuple[int, str, float]]:
    """(Dispatch_ID, Kernel_Name, duration ns) of every dispatch: from timestamps.csv, or from
    pmc_perf.csv where there is no timestamps pass (7.0's rocprofv3 backend)."""
    path = next((workload / name for name in WORKLOAD_TABLES if (workload / name).is_file()), None)
    if path is None:
        return []
    rows = []
    for row in _csv_rows(path):
        lowered = {(k or "").strip().lower(): v for k, v in row.items()}
        try:
            dispatch = int(float(lowered["dispatch_id"]))
            duration = float(lowered["end_timestamp"]) - float(lowered["start_timestamp"])
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(duration):
            rows.append((dispatch, str(lowered.get("kernel_name") or ""), duration))
    return rows


def _by_kernel(dispatches: list[tuple[int, str, float]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for _, name, duration in dispatches:
        totals[name] = totals.get(name, 0.0) + duration
    return totals


def kernel_totals(workload: Path) -> dict[str, float]:
    """Each kernel's time over all its dispatches (ns, dispatch_times), by name in the order of
    their first dispatch; {} when the workload has no per-dispatch file."""
    return _by_kernel(dispatch_times(workload))


#: Most dispatches `analyze` is run for (each one a pass over the whole workload).
MAX_ANALYZED = 4


def analysis_targets(workload: Path, kernels: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """The dispatches worth a speed-of-light table, (Dispatch_ID, kernel name), each the longest
    dispatch of its kernel: the kernel with the most time among those each of `kernels` (the
    profile's kernel filter) names, then the top GEMM, then the kernel with the most time; at most
    MAX_ANALYZED, none twice."""
    from tinylab.core.categories import categorize

    dispatches = dispatch_times(workload)
    totals = _by_kernel(dispatches)
    longest: dict[str, tuple[float, int]] = {}
    for dispatch, name, duration in dispatches:
        if name not in longest or duration > longest[name][0]:
            longest[name] = (duration, dispatch)
    ranked = sorted(totals, key=lambda n: -totals[n])
    wanted = [next((n for n in ranked if k.lower() in n.lower()), None) for k in kernels]
    wanted += [next((n for n in ranked if categorize(n) == "gemm"), None), ranked[0] if ranked else None]
    chosen = list(dict.fromkeys(n for n in wanted if n is not None))[:MAX_ANALYZED]
    return [(longest[n][1], n) for n in chosen]


#: The speed-of-light table of the per-table layout (panel 200, table 201: "<id>_<title>.csv"), which
#: --save-dfs (to 3.2) and --output-format csv (3.3-3.6, utils/tty.py format_table_output) write.
SOL_TABLE = "2.1_Speed-of-Light.csv"
DISPATCH_LIST = "0.2_Dispatch_List.csv"
#: The per-view layout (3.7+: --output-format csv "produces one CSV per analysis view", RS@002a2c74
#: analysis_db.py run_analysis -> Database.write_csv_dir): kernel.csv (kernel_name, dispatch_count, ...)
#: and kernel_metric.csv, one row a (kernel, metric, value_name): metric_name, metric_id ("2.1.3"),
#: table_name, sub_table_name ("Speed-of-Light"), unit, value_name (Avg, Peak, Percent of Peak), value.
KERNEL_VIEW, METRIC_VIEW = "kernel.csv", "kernel_metric.csv"
SOL_TABLE_ID = "2.1."
#: The columns (or value_names) of a metric's value, peak and share of peak, in every spelling read:
#: Avg/Pct of Peak (analysis_configs 0200_system-speed-of-light.yaml to 3.7), Percent of Peak (3.8:
#: "Renamed the Pct of Peak / PoP analysis column to Percent of Peak"), Value/PoP (Omniperf 1.x docs).
_SOL_VALUE = ("avg", "value")
_SOL_PEAK = ("peak", "peak (empirical)")
_SOL_PCT = ("pct of peak", "percent of peak", "pop")


def sol_file(folder: Path) -> Path | None:
    """The file holding an analyzed dispatch's speed-of-light table, in either layout, or None."""
    for name in (SOL_TABLE, METRIC_VIEW):
        if (folder / name).is_file():
            return folder / name
    return None


def _number(text: str | None) -> float | None:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def read_speed_of_light(folder: Path) -> dict[str, dict[str, Any]]:
    """The speed-of-light table of one analyzed dispatch (the folder analyze wrote), in either layout:
    metric (lower case) -> {"metric", "value", "unit", "peak", "pct"}; numbers are None where the tool
    left the cell empty."""
    def cell(lowered: dict[str, str], names: tuple[str, ...]) -> float | None:
        """The first of the row's cells (in column order) under one of `names`, as a number."""
        return next((_number(text) for key, text in lowered.items() if key in names), None)

    table: dict[str, dict[str, Any]] = {}
    if not (folder / SOL_TABLE).is_file() and (folder / METRIC_VIEW).is_file():
        kernel = None
        for row in _csv_rows(folder / METRIC_VIEW):
            if not (row.get("metric_id") or "").startswith(SOL_TABLE_ID):
                continue
            kernel = kernel or row.get("kernel_name")
            metric = (row.get("metric_name") or "").strip()
            if not metric or row.get("kernel_name") != kernel:
                continue
            entry = table.setdefault(metric.lower(), {"metric": metric, "value": None, "unit": row.get("unit"),
                                                      "peak": None, "pct": None})
            name = (row.get("value_name") or "").strip().lower()
            slot = "value" if name in _SOL_VALUE else "peak" if name in _SOL_PEAK else "pct" if name in _SOL_PCT else None
            if slot and entry[slot] is None:
                entry[slot] = _number(row.get("value"))
        return table
    for row in _csv_rows(folder / SOL_TABLE):
        lowered = {(k or "").strip().lower(): v for k, v in row.items()}
        metric = (lowered.get("metric") or "").strip()
        if metric:
            table[metric.lower()] = {"metric": metric, "value": cell(lowered, _SOL_VALUE), "unit": lowered.get("unit"),
                                     "peak": cell(lowered, _SOL_PEAK), "pct": cell(lowered, _SOL_PCT)}
    return table


def analyzed_kernels(analyze_dir: Path) -> list[tuple[str, Path]]:
    """(kernel name, folder) of every analyzed dispatch with a speed-of-light table: the kernel its own
    0.2_Dispatch_List.csv names (per-table layout) or its kernel.csv (per-view layout)."""
    found = []
    for folder in sorted(analyze_dir.glob("dispatch_*")):
        if (folder / SOL_TABLE).is_file() and (folder / DISPATCH_LIST).is_file():
            names = [row.get("Kernel_Name") or "" for row in _csv_rows(folder / DISPATCH_LIST)]
        elif (folder / METRIC_VIEW).is_file() and (folder / KERNEL_VIEW).is_file():
            names = [row.get("kernel_name") or "" for row in _csv_rows(folder / KERNEL_VIEW)]
        else:
            continue
        if names and names[0]:
            found.append((names[0], folder))
    return found


def sysinfo(workload: Path) -> dict[str, str]:
    """The first row of the workload's sysinfo.csv ({} when it has none)."""
    path = workload / "sysinfo.csv"
    if not path.is_file():
        return {}
    with closing(_csv_rows(path)) as rows:
        return next(rows, None) or {}


def roofline_disabled(workload: Path) -> str | None:
    """Why the workload's release ran no roofline on its GPU (MI300 on ROCm 6.2/6.3, rocm_releases.py),
    from its sysinfo.csv; None when its release has one there (or the workload does not say)."""
    info = sysinfo(workload)
    version, arch = info.get("rocm_version") or "", (info.get("gpu_arch") or "").split(":")[0]
    key = rr.release_key(version)
    if key and arch in rr.ROCPROF_COMPUTE[key].no_roofline:
        return (f"rocprof-compute of ROCm {version.split('-')[0]} runs no roofline on MI300 ({arch}): "
                "'Roofline temporarily disabled in MI300'; ROCm 6.4 brings it back")
    return None


def read_roofline(workload: Path) -> dict[str, Any] | None:
    """Empirical ceilings from roofline.csv (mean over its device rows), or None.

    Bandwidths are GB/s and FLOP rates GFLOP/s, as rocprof-compute's microbenchmarks report them.
    """
    path = workload / "roofline.csv"
    if not path.is_file():
        return None
    rows = list(_csv_rows(path))
    peaks: dict[str, float] = {}
    for column in rows[0].keys() if rows else ():
        if not column or column.lower() == "device" or column.lower().endswith(("low", "high")):
            continue
        values = []
        for row in rows:
            try:
                values.append(float(row[column]))
            except (TypeError, ValueError):
                pass
        if values:
            peaks[column] = sum(values) / len(values)
    return {"source": str(path), "devices": len(rows), "peaks": peaks} if peaks else None


# ----------------------------------------------------------------------------- counters -> roofline
#: FLOPs a counter stands for, with rocprof-compute's own arithmetic (CMP@rocm-6.3.0
#: src/utils/roofline_calc.py:220-297): 64 lanes a VALU instruction (an FMA counts twice), 512 FLOPs
#: an MFMA "MOPS" unit. Each class is set against the ceiling rocprof-compute plots it under.
_FLOPS = {
    "valu": (64, [(f"SQ_INSTS_VALU_{op}_{dt}", 2 if op == "FMA" else 1)
                  for dt in ("F16", "F32", "F64") for op in ("ADD", "MUL", "FMA", "TRANS")], "FP32Flops"),
    "mfma_f16": (512, [("SQ_INSTS_VALU_MFMA_MOPS_F16", 1)], "MFMAF16Flops"),
    "mfma_bf16": (512, [("SQ_INSTS_VALU_MFMA_MOPS_BF16", 1)], "MFMABF16Flops"),
    "mfma_f32": (512, [("SQ_INSTS_VALU_MFMA_MOPS_F32", 1)], "MFMAF32Flops"),
    "mfma_f64": (512, [("SQ_INSTS_VALU_MFMA_MOPS_F64", 1)], "MFMAF64Flops"),
}
#: HBM bytes (roofline_calc.py:341-346): 32- and 64-byte read requests, 64- and 32-byte writes; MI300's
#: roofline config names the same counters TCC_EA0_* (profile_configs/gfx940/roofline/pmc_roof_perf.txt).
_HBM = (("RDREQ_32B_sum", 32), ("RDREQ_sum", 64), ("RDREQ_32B_sum", -64), ("WRREQ_64B_sum", 64),
        ("WRREQ_sum", 32), ("WRREQ_64B_sum", -32))


def kernel_roofline(workload: Path) -> pd.DataFrame | None:
    """Per kernel of a workload's pmc_perf.csv: calls, time, FLOPs and HBM bytes from the counters,
    arithmetic intensity, and against the measured ceilings of roofline.csv (when it was run):
    achieved share of peak bandwidth and FLOP rate, the ridge point and whether it is memory- or
    compute-bound. None when the workload has no pmc_perf.csv or no FLOP/HBM counters.

    Durations are pmc_perf's own (serialized dispatches under counter collection), as rocprof-compute's
    roofline uses. A share above 100% is past a physical limit: it is kept and flagged (`above_peak`).
    """
    path = workload / "pmc_perf.csv"
    if not path.is_file():
        return None
    df = pd.read_csv(path)
    prefix = next((p for p in ("TCC_EA_", "TCC_EA0_") if f"{p}RDREQ_sum" in df.columns), None)
    if prefix is None or not any(c in df.columns for _, terms, _ in _FLOPS.values() for c, _ in terms):
        return None
    per = pd.DataFrame({"name": df["Kernel_Name"].astype(str),
                        "ns": pd.to_numeric(df["End_Timestamp"], errors="coerce") - pd.to_numeric(df["Start_Timestamp"], errors="coerce")})
    for cls, (lanes, terms, _) in _FLOPS.items():
        per[cls] = sum(lanes * weight * pd.to_numeric(df[c], errors="coerce").fillna(0) for c, weight in terms if c in df.columns)
    per["hbm_bytes"] = sum(size * pd.to_numeric(df[prefix + name], errors="coerce").fillna(0) for name, size in _HBM)
    grouped = per.groupby("name", sort=False)
    out = grouped[["ns", "hbm_bytes", *_FLOPS]].sum()
    out.insert(0, "calls", grouped.size())
    out["flops"] = out[list(_FLOPS)].sum(axis=1)
    out["intensity"] = out["flops"] / out["hbm_bytes"].where(out["hbm_bytes"] > 0)
    out["gflops_per_s"] = out["flops"] / out["ns"]  # FLOP/ns = GFLOP/s
    out["gb_per_s"] = out["hbm_bytes"] / out["ns"]
    out["ceiling"] = out[list(_FLOPS)].idxmax(axis=1).map(lambda cls: _FLOPS[cls][2])
    roofline = read_roofline(workload)
    peaks = roofline["peaks"] if roofline else {}
    out["peak_gflops_per_s"] = out["ceiling"].map(lambda c: peaks.get(c, math.nan))
    out["peak_gb_per_s"] = peaks.get("HBMBw", math.nan)
    out["ridge"] = out["peak_gflops_per_s"] / out["peak_gb_per_s"]
    out["bound"] = [("memory" if ai < ridge else "compute") if pd.notna(ai) and pd.notna(ridge) else None
                    for ai, ridge in zip(out["intensity"], out["ridge"])]
    out["flops_pct"] = 100 * out["gflops_per_s"] / out["peak_gflops_per_s"]
    out["bw_pct"] = 100 * out["gb_per_s"] / out["peak_gb_per_s"]
    out["above_peak"] = (out["flops_pct"] > 100) | (out["bw_pct"] > 100)
    return out.reset_index().sort_values("ns", ascending=False, kind="stable").reset_index(drop=True)

"""How fast large profiler outputs become a kernel table (issue 5: 1,000,000 rows in under 5 s).

Writes synthetic files in the real formats (rocprofv3 7.x kernel_trace CSV, rocpd SQLite,
PyTorch Chrome trace) into a temporary folder and times `load_kernel_table` on each. Run:

    python tests/profilers/bench_parsers.py [--rows 1000000]

This is a benchmark, not a test: CI machines vary too much for a timed assertion.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tinylab.analysis.hotspots import load_kernel_table  # noqa: E402

TRACE_HEADER = (
    '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count",'
    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)
NAMES = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
    "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
    "Cijk_Ailk_Bljk_SB_MT64x64x16_MI16x16x4x1_SN_1LDSB0_AMAS3_BL1_BS1",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4>)",
    "_rmsnorm_fwd_kernel",
    "_attn_fwd_kernel",
    "__amd_rocclr_copyBuffer",
]


def write_kernel_trace(path: Path, rows: int) -> None:
    rng = random.Random(0)
    t = 1_550_151_853_029_637
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(TRACE_HEADER + "\n")
        for i in range(rows):
            name = NAMES[i % len(NAMES)]
            dur = rng.randrange(1_000, 100_000)
            fh.write(
                f'"KERNEL_DISPATCH","Agent 4",1,1,834304,{i + 1},{10 + i % 6},"{name}",{i + 1},'
                f"{t},{t + dur},0,0,8,0,16,64,1,1,1024,1024,1\n"
            )
            t += dur + 100


def write_rocpd(path: Path, rows: int) -> None:
    rng = random.Random(0)
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE rocpd_kernel_dispatch_x (id INTEGER, kernel_id INTEGER, start INTEGER, "end" INTEGER)')
    con.execute("CREATE TABLE rocpd_info_kernel_symbol_x (id INTEGER, kernel_name TEXT, display_name TEXT)")
    con.executemany("INSERT INTO rocpd_info_kernel_symbol_x VALUES (?, ?, ?)", [(i, n, n) for i, n in enumerate(NAMES)])
    t = 1_000_000
    batch = []
    for i in range(rows):
        dur = rng.randrange(1_000, 100_000)
        batch.append((i, i % len(NAMES), t, t + dur))
        t += dur + 100
    con.executemany("INSERT INTO rocpd_kernel_dispatch_x VALUES (?, ?, ?, ?)", batch)
    con.execute("CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch_x")
    con.execute("CREATE VIEW rocpd_info_kernel_symbol AS SELECT * FROM rocpd_info_kernel_symbol_x")
    con.execute(
        'CREATE VIEW kernels AS SELECT d.id, s.display_name AS name, d.start, d."end", d."end" - d.start AS duration '
        "FROM rocpd_kernel_dispatch d JOIN rocpd_info_kernel_symbol s ON d.kernel_id = s.id"
    )
    con.commit()
    con.close()


def write_torch_trace(path: Path, rows: int) -> None:
    rng = random.Random(0)
    events = []
    ts = 4801854475797.616
    for i in range(rows):
        dur = round(rng.uniform(1.0, 100.0), 3)
        events.append({"ph": "X", "cat": "kernel", "name": NAMES[i % len(NAMES)], "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                       "args": {"correlation": i, "stream": 7}})
        ts = round(ts + dur + 0.5, 3)
    path.write_bytes(gzip.compress(json.dumps({"schemaVersion": 1, "traceEvents": events}).encode(), compresslevel=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    cases = [
        ("rocprofv3 kernel_trace.csv", "kernel_trace.csv", write_kernel_trace),
        ("rocpd SQLite (.db)", "results.db", write_rocpd),
        ("PyTorch trace.json.gz", "trace.json.gz", write_torch_trace),
    ]
    print(f"{'format':<28} {'rows':>10} {'file MB':>8} {'write s':>8} {'parse s':>8} {'kernels':>8}  detected")
    with tempfile.TemporaryDirectory() as tmp:
        for label, filename, writer in cases:
            path = Path(tmp) / filename
            t0 = time.perf_counter()
            writer(path, args.rows)
            t1 = time.perf_counter()
            table, fmt = load_kernel_table(path)
            t2 = time.perf_counter()
            assert int(table["calls"].sum()) == args.rows, (label, int(table["calls"].sum()))
            size = path.stat().st_size / 2**20
            print(f"{label:<28} {args.rows:>10,} {size:>8.1f} {t1 - t0:>8.2f} {t2 - t1:>8.2f} {len(table):>8}  {fmt}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

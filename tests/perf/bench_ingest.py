"""Real-size profiler outputs through tinylab's readers: wall time and peak memory (issue 30).

Generates, under --dir (default /tmp/tinylab-ingest, never inside the repository), from real files
shipped in tests/fixtures:
- a PyTorch profiler trace of about --events events: the H100 v1 trace (4,488 events, one
  training step) repeated with its timestamps shifted one step on and its correlation and flow
  ids renumbered, a ProfilerStep#N range around every --step-copies copies (a tinylab run's trace
  has them; 0: none, the trace as the H100 profiler wrote it, one window for the timeline);
- the same of the CPU v1 run's trace (11,473 events, two steps): CPU operators by self time;
- a rocpd database (ROCm 7 schema: per-process tables and the views over them, a `kernels` view
  joining agent, event, string, symbol, queue, stream, process and thread) of --events dispatches,
  the H100 trace's kernels in turn;
- a rocprofv3 kernel_trace.csv and an nsys cuda_gpu_trace CSV of --events dispatches;
- two gzip bombs of valid trace JSON that inflate to about 400 MB: tiny events (1.4 MB of gzip) and
  white space (400 KB of gzip).
Then runs every reader as a user does, one fresh process each (`tinylab hotspots FILE --top 3`,
`tinylab timeline FILE`), --repeat times, and prints the median wall time and CPU time (user +
system, both threads: the trace reader inflates in one while it decodes in the other), the peak
memory (the child's VmHWM) and the machine's load average before the run; with --hta PYTHON, also Holistic
Trace Analysis (`traceinsight`: load + kernel breakdown) on the same trace, in that interpreter.

Targets (issue 30, a 2-core CPU machine): hotspots of the 1M-event trace under 3 s and 500 MB, its
timeline under 5 s, hotspots of the 1M-dispatch rocpd database under 3 s, the gzip bomb a one-line
error under 500 MB. A row past its target is marked "over" and the exit code is 1. This is a
benchmark, not a test: timings on a shared machine move with its load.

    python tests/perf/bench_ingest.py [--events 1000000] [--repeat 3] [--only trace] [--hta PYTHON]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
H100_TRACE = FIX / "pytorch-profiler" / "cuda_h100" / "torchprof_trace.json.gz"
CPU_TRACE = FIX / "pytorch-profiler" / "tinylab_cpu_v1_memory" / "trace.json.gz"
sys.path.insert(0, str(ROOT / "tests"))

from support import samples  # noqa: E402

#: The peak memory of the process running it, printed last on stderr: VmHWM (ru_maxrss of a child
#: started by fork counts its parent's pages from before the exec).
PEAK = ("def _peak():\n    import resource\n    try:\n"
        "        with open('/proc/self/status') as fh:\n"
        "            return next(int(l.split()[1]) for l in fh if l.startswith('VmHWM:'))\n"
        "    except (OSError, StopIteration):\n"
        "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n")
#: The child: tinylab's CLI, then its peak memory.
WRAPPER = PEAK + ("import sys\nfrom tinylab.cli import main\ncode = main(sys.argv[1:])\nsys.stdout.flush()\n"
                  "print(f'peak_kb={_peak()}', file=sys.stderr)\nsys.exit(code)")
#: HTA in its own interpreter: load the trace, then the kernel breakdown (the same question as hotspots).
HTA = PEAK + ("import shutil, sys, tempfile\nfrom pathlib import Path\n"
              "from hta.trace_analysis import TraceAnalysis\n"
              "d = tempfile.mkdtemp()\nshutil.copy(sys.argv[1], Path(d) / 'rank0.trace.json.gz')\n"
              "t = TraceAnalysis(trace_dir=d)\nt.get_gpu_kernel_breakdown(visualize=False)\n"
              "print(f'peak_kb={_peak()}', file=sys.stderr)")


# ----------------------------------------------------------------------------- generated files
def repeat_trace(source: Path, out: Path, events: int, step_copies: int) -> int:
    """`source` repeated until it holds `events` events; returns how many it holds."""
    import msgspec

    doc = json.loads(gzip.decompress(source.read_bytes()))
    base = doc["traceEvents"]
    timed = [e for e in base if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + (e.get("dur") or 0) for e in timed) - t0 + 100.0
    ids = 1 + max([e["args"]["correlation"] for e in base if isinstance(e.get("args"), dict)
                   and isinstance(e["args"].get("correlation"), int)]
                  + [e["id"] for e in base if isinstance(e.get("id"), int)])
    steps = sorted({int(e["name"].split("#")[1]) for e in base if str(e.get("name", "")).startswith("ProfilerStep#")})
    copies = math.ceil(events / len(base))
    host = next(e for e in base if e.get("cat") in ("user_annotation", "cpu_op"))
    head = {k: v for k, v in doc.items() if k != "traceEvents"}
    count = 0
    with gzip.open(out, "wb", compresslevel=6) as fh:
        fh.write(json.dumps(head)[:-1].encode() + b', "traceEvents": [\n')
        for k in range(copies):
            shifted = []
            for e in msgspec.json.decode(msgspec.json.encode(base)):  # a deep copy
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] = round(e["ts"] + k * span, 3)
                if isinstance(e.get("id"), int):
                    e["id"] += k * ids
                if isinstance(e.get("args"), dict) and isinstance(e["args"].get("correlation"), int):
                    e["args"]["correlation"] += k * ids
                if steps and str(e.get("name", "")).startswith("ProfilerStep#"):
                    e["name"] = f"ProfilerStep#{int(e['name'].split('#')[1]) + k * len(steps)}"
                shifted.append(e)
            if step_copies and not steps and k % step_copies == 0:  # a step range around the next copies
                length = min(step_copies, copies - k) * span - 100.0
                shifted.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k // step_copies}",
                                "pid": host["pid"], "tid": host["tid"], "ts": round(t0 + k * span, 3),
                                "dur": round(length, 3), "args": {}})
            count += len(shifted)
            fh.write((b"" if k == 0 else b",\n") + msgspec.json.encode(shifted)[1:-1])
        fh.write(b"\n]}\n")
    return count


def trace_kernels() -> list[tuple[str, float]]:
    """(name, µs) of the H100 trace's kernels, in order."""
    doc = json.loads(gzip.decompress(H100_TRACE.read_bytes()))
    return [(e["name"], e["dur"]) for e in doc["traceEvents"] if e.get("cat") == "kernel"]


def dispatches(n: int) -> list[tuple[str, int, int]]:
    """n (name, start ns, end ns), the H100 trace's kernels in turn, back to back."""
    kernels = trace_kernels()
    out, t = [], 1_700_000_000_000_000_000
    for i in range(n):
        name, us = kernels[i % len(kernels)]
        d = max(1, round(us * 1000))
        out.append((name, t, t + d))
        t += d + 500
    return out


ROCPD_TABLES = {
    "string": '"id" INTEGER PRIMARY KEY, "guid" TEXT, "string" TEXT',
    "info_process": '"id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER',
    "info_thread": '"id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER, "tid" INTEGER',
    "info_agent": ('"id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER, "type" TEXT, '
                   '"absolute_index" INTEGER, "logical_index" INTEGER, "type_index" INTEGER'),
    "info_queue": '"id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER, "name" TEXT',
    "info_stream": '"id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER, "name" TEXT',
    "info_kernel_symbol": ('"id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER, '
                           '"code_object_id" INTEGER, "kernel_name" TEXT, "display_name" TEXT'),
    "event": ('"id" INTEGER PRIMARY KEY, "guid" TEXT, "category_id" INTEGER, "stack_id" INTEGER, '
              '"parent_stack_id" INTEGER, "correlation_id" INTEGER'),
    "kernel_dispatch": ('"id" INTEGER PRIMARY KEY, "guid" TEXT, "nid" INTEGER, "pid" INTEGER, "tid" INTEGER, '
                        '"agent_id" INTEGER, "kernel_id" INTEGER, "dispatch_id" INTEGER, "queue_id" INTEGER, '
                        '"stream_id" INTEGER, "start" INTEGER, "end" INTEGER, "region_name_id" INTEGER, '
                        '"event_id" INTEGER'),
}


def write_rocpd(path: Path, n: int) -> None:
    """A rocpd database as ROCm 7 writes one (the tables rocpd's kernels view reads, docs/formats.md 1.5)."""
    uuid, guid = "_0000ddb5_8903_7903_b269_cd8d3745bb8a", "0000ddb5-8903-7903-b269-cd8d3745bb8a"
    con = sqlite3.connect(path)
    for name, columns in ROCPD_TABLES.items():
        con.execute(f'CREATE TABLE "rocpd_{name}{uuid}" ({columns})')
        con.execute(f'CREATE VIEW "rocpd_{name}" AS SELECT * FROM "rocpd_{name}{uuid}"')
    names = sorted({name for name, _ in trace_kernels()})
    symbol = {name: i + 1 for i, name in enumerate(names)}
    con.executemany(f'INSERT INTO "rocpd_string{uuid}" VALUES (?, ?, ?)',
                    [(1, guid, "KERNEL_DISPATCH"), (2, guid, "train_step")])
    con.execute(f'INSERT INTO "rocpd_info_process{uuid}" VALUES (1, ?, 1, 4242)', (guid,))
    con.execute(f'INSERT INTO "rocpd_info_thread{uuid}" VALUES (1, ?, 1, 1, 4242)', (guid,))
    con.execute(f"INSERT INTO \"rocpd_info_agent{uuid}\" VALUES (1, ?, 1, 1, 'GPU', 2, 0, 0)", (guid,))
    con.execute(f"INSERT INTO \"rocpd_info_queue{uuid}\" VALUES (1, ?, 1, 1, 'queue 0')", (guid,))
    con.execute(f"INSERT INTO \"rocpd_info_stream{uuid}\" VALUES (1, ?, 1, 1, 'stream 0')", (guid,))
    con.executemany(f'INSERT INTO "rocpd_info_kernel_symbol{uuid}" VALUES (?, ?, 1, 1, 1, ?, ?)',
                    [(i, guid, "_Z" + name.split("(")[0].replace(" ", "_"), name) for name, i in symbol.items()])
    rows = dispatches(n)
    con.executemany(f'INSERT INTO "rocpd_event{uuid}" VALUES (?, ?, 1, ?, 0, ?)',
                    ((i, guid, i, i) for i in range(1, n + 1)))
    con.executemany(f'INSERT INTO "rocpd_kernel_dispatch{uuid}" VALUES (?, ?, 1, 1, 1, 1, ?, ?, 1, 1, ?, ?, 2, ?)',
                    ((i, guid, symbol[name], i, start, end, i) for i, (name, start, end) in enumerate(rows, 1)))
    # the columns rocpd's `kernels` view has (docs/formats.md 1.5), over the same joins
    con.execute(
        "CREATE VIEW kernels AS SELECT K.id, K.guid, T.tid, C.string AS category, R.string AS region, "
        "S.display_name AS name, K.nid, P.pid, A.absolute_index AS agent_abs_index, "
        "A.logical_index AS agent_log_index, A.type_index AS agent_type_index, A.type AS agent_type, "
        "S.code_object_id, K.kernel_id, K.dispatch_id, K.stream_id, K.queue_id, Q.name AS queue, ST.name AS stream, "
        'K.start, K."end", (K."end" - K.start) AS duration, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id '
        "FROM rocpd_kernel_dispatch K "
        "JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid "
        "JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid "
        "JOIN rocpd_string C ON C.id = E.category_id AND C.guid = E.guid "
        "JOIN rocpd_string R ON R.id = K.region_name_id AND R.guid = K.guid "
        "JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid "
        "LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid "
        "LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid "
        "JOIN rocpd_info_process P ON P.id = Q.pid AND P.guid = Q.guid "
        "JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid")
    con.commit()
    con.close()


def write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def write_bomb(path: Path, unit: bytes, inflated: int = 400 << 20) -> None:
    """A gzip file of valid trace JSON that inflates to about `inflated` bytes: `unit` repeated
    inside the traceEvents array (a tiny event: deflate packs about 300:1; white space: 1000:1)."""
    import zlib

    block = unit * ((1 << 20) // len(unit))
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        fh.write(z.compress(b'{"traceEvents": [\n'))
        for _ in range(inflated // len(block)):
            fh.write(z.compress(block))
        fh.write(z.compress(b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0, "dur": 1.0}\n]}\n'))
        fh.write(z.flush())


#: The unit of each bomb.
EVENT = b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 1.0},\n'
SPACE = b" " * 1024


# ----------------------------------------------------------------------------- measuring
@dataclass
class Result:
    label: str
    size_mb: float
    items: str
    seconds: list[float]
    cpu_s: float
    peak_mb: float
    load: float
    outcome: str
    target_s: float | None = None
    target_mb: float | None = None

    @property
    def over(self) -> bool:
        median = statistics.median(self.seconds)
        return ((self.target_s is not None and median > self.target_s)
                or (self.target_mb is not None and self.peak_mb > self.target_mb))


def run(argv: list[str], python: str = sys.executable, script: str = WRAPPER, tree: Path = ROOT,
        prefix: list[str] | tuple[str, ...] = ()) -> tuple[float, float, float, int, str, str]:
    """(wall s, CPU s, peak MB, exit code, stdout, stderr less the peak line) of one child that
    imports tinylab from `tree` (`prefix`: a command it runs under, e.g. taskset)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "160"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([*prefix, python, "-c", script, *argv], capture_output=True, text=True, env=env, cwd="/tmp")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stderr.splitlines()
    peak = next((int(line.split("=")[1]) for line in reversed(lines) if line.startswith("peak_kb=")), 0)
    err = "\n".join(line for line in lines if not line.startswith("peak_kb="))
    return wall, cpu, peak / 1024, proc.returncode, proc.stdout, err


def measure(label: str, path: Path, items: str, argv: list[str], repeat: int, *, expect_error: bool = False,
            target_s: float | None = None, target_mb: float | None = None, python: str = sys.executable,
            script: str = WRAPPER, tree: Path = ROOT) -> Result:
    times, cpus, peaks, load = [], [], [], os.getloadavg()[0]
    outcome = ""
    for _ in range(repeat):
        wall, cpu, peak, code, out, err = run(argv, python, script, tree)
        times.append(wall)
        cpus.append(cpu)
        peaks.append(peak)
        if expect_error:
            ok = code == 2 and err.count("\n") == 0 and err.startswith("tinylab: error:")
            outcome = ("one-line error: " if ok else f"UNEXPECTED (exit {code}): ") + err.strip()[-110:]
        elif code != 0:
            outcome = f"FAILED (exit {code}): {err.strip()[-120:]}"
        else:
            outcome = out.strip().splitlines()[0][:110] if out.strip() else "ok"
    return Result(label, path.stat().st_size / 2**20, items, times, statistics.median(cpus), max(peaks), load, outcome,
                  target_s, target_mb)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events (dispatches) a file (default 1,000,000)")
    parser.add_argument("--step-copies", type=int, default=22,
                        help="copies of the H100 step in one ProfilerStep range (0: none; default 22, 10 steps of 1M)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each reader (default 3; the median is shown)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/tinylab-ingest"), help="where the files are made")
    parser.add_argument("--only", default=None, help="only the rows whose label contains this")
    parser.add_argument("--before", type=Path, default=None, metavar="TREE",
                        help="another tinylab source tree (e.g. `git archive` of an older commit) to time too")
    parser.add_argument("--hta", default=None, metavar="PYTHON",
                        help="an interpreter with Holistic Trace Analysis (pip install traceinsight) to time too")
    args = parser.parse_args()
    if ROOT in args.dir.resolve().parents:
        parser.error("--dir must be outside the repository: the files are hundreds of MB")
    args.dir.mkdir(parents=True, exist_ok=True)
    n = args.events
    files = {
        "trace": (args.dir / f"h100_v1_{n}_s{args.step_copies}.json.gz",
                  lambda p: repeat_trace(H100_TRACE, p, n, args.step_copies)),
        "cpu": (args.dir / f"cpu_v1_{n}.json.gz", lambda p: repeat_trace(CPU_TRACE, p, n, 0)),
        "rocpd": (args.dir / f"rocpd_{n}.db", lambda p: write_rocpd(p, n)),
        "kernel_trace": (args.dir / f"rocprofv3_{n}_kernel_trace.csv",
                         lambda p: write_text(p, samples.rocprofv3_trace_6x(dispatches(n)))),
        "nsys": (args.dir / f"nsys_{n}_cuda_gpu_trace.csv", lambda p: write_text(p, samples.nsys_gpu_trace(dispatches(n)))),
        "event bomb": (args.dir / "event_bomb.json.gz", lambda p: write_bomb(p, EVENT)),
        "space bomb": (args.dir / "space_bomb.json.gz", lambda p: write_bomb(p, SPACE)),
    }
    for key, (path, make) in files.items():
        if not path.exists():
            print(f"making {path} ...", flush=True)
            t0 = time.perf_counter()
            tmp = path.with_name(path.name + ".part")
            make(tmp)
            tmp.rename(path)
            print(f"  {path.stat().st_size / 2**20:.1f} MB in {time.perf_counter() - t0:.0f} s", flush=True)
    trace, cpu = files["trace"][0], files["cpu"][0]
    rows = [
        ("hotspots: PyTorch trace (H100 v1)", trace, f"{n:,} events", ["hotspots", str(trace), "--top", "3"],
         {"target_s": 3.0, "target_mb": 500.0}),
        ("timeline: PyTorch trace (H100 v1)", trace, f"{n:,} events", ["timeline", str(trace)], {"target_s": 5.0}),
        ("hotspots: PyTorch trace (CPU v1 run)", cpu, f"{n:,} events", ["hotspots", str(cpu), "--top", "3"], {}),
        ("timeline: PyTorch trace (CPU v1 run)", cpu, f"{n:,} events", ["timeline", str(cpu)], {}),
        ("hotspots: rocpd database", files["rocpd"][0], f"{n:,} dispatches",
         ["hotspots", str(files["rocpd"][0]), "--top", "3"], {"target_s": 3.0}),
        ("hotspots: rocprofv3 kernel_trace.csv", files["kernel_trace"][0], f"{n:,} dispatches",
         ["hotspots", str(files["kernel_trace"][0]), "--top", "3"], {}),
        ("hotspots: nsys cuda_gpu_trace.csv", files["nsys"][0], f"{n:,} dispatches",
         ["hotspots", str(files["nsys"][0]), "--top", "3"], {}),
        ("hotspots: gzip bomb, 400 MB of events", files["event bomb"][0], "valid JSON",
         ["hotspots", str(files["event bomb"][0])], {"target_mb": 500.0, "expect_error": True}),
        ("hotspots: gzip bomb, 400 MB of spaces", files["space bomb"][0], "valid JSON",
         ["hotspots", str(files["space bomb"][0])], {"target_mb": 500.0, "expect_error": True}),
    ]
    results = []
    for label, path, items, argv, extra in rows:
        if args.only is not None and args.only not in label:
            continue
        results.append(measure(label, path, items, argv, args.repeat, **extra))
        if args.before and not extra.get("expect_error"):  # a bomb read whole takes gigabytes
            results.append(measure(f"  before: {label.split(': ')[0]}", path, items, argv, args.repeat,
                                   tree=args.before))
    if args.hta and (args.only is None or "HTA" in args.only):
        results.append(measure("HTA 0.6: load + kernel breakdown", trace, f"{n:,} events", [str(trace)], 1,
                               python=args.hta, script=HTA))
    print(f"\n{os.cpu_count()} CPUs | Python {sys.version.split()[0]} | median of {args.repeat} | "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'reader':<40} {'file MB':>8} {'items':>19} {'wall s':>7} {'CPU s':>6} {'peak MB':>8} {'load':>5}  result")
    for r in results:
        mark = "  over" if r.over else ""
        print(f"{r.label:<40} {r.size_mb:>8.1f} {r.items:>19} {statistics.median(r.seconds):>7.2f} {r.cpu_s:>6.2f} "
              f"{r.peak_mb:>8.0f} {r.load:>5.1f}  {r.outcome}{mark}")
    return 1 if any(r.over or r.outcome.startswith(("FAILED", "UNEXPECTED")) for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark versions on this device: one process, cases interleaved and repeated.

Each case is a full training run through the same Trainer the lab uses (so the bench measures
what users run, every parameter training), repeated `repeats` times, the rounds interleaved
ABBA (`schedule`): forward on even rounds, backward on odd ones, so that a load that comes and
goes, or clock and thermal drift, lands on every case alike, and a steady drift cancels over
each pair of rounds. A case's timed figures (samples/s, step time, joules a sample) are the
geometric mean over its repeats of each run's post-warm-up figure, with the 95 % interval
across the repeats (tinylab.analysis.stats.mean_interval), and its speedups are B/A ratio
intervals (ratio_interval): run-to-run variation is the noise that matters here, not a run's
own step spread (docs/statistics.md). After the repeats each case on a GPU runs once more
with the PyTorch profiler on one step past its warm-up (and graph capture), for the kernels a
step launches (`kernels_per_step`): no timed step is ever profiled. Each repeat records whether
the load sampler saw the machine busy (Summary.busy); a case busy in every repeat measured
contention, and the regression guard leaves it out. Memory is each run's own peak: cases run
one at a time and free their memory before the next.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import statistics
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tinylab.analysis.stats import ASSUMED, BUSY_SIGMA, RunValue, Variation, mean_interval, ratio_interval
from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.core.events import Summary
from tinylab.core.versions import TABLE, baseline, first
from tinylab.runs.record import printable

#: The fastest step PyTorch alone makes: the peer version with its fusions, compiled and graphed.
PEER = f"{first(peer=True).name}+compile+graph"
#: The cases a bench times unless told: every version, the peer right after its version.
DEFAULT_CASES = tuple(case for v in TABLE.values() for case in ((v.name, PEER) if v.peer else (v.name,)))


@dataclass
class Case:
    name: str
    config: RunConfig

    @property
    def group(self) -> tuple[str, int]:
        """Cases compared with each other (speedup vs v1) share precision and sequence length."""
        return (self.config.precision, self.config.seq_len)


#: A case's timed figures: (its row's key, the summary's).
TIMED = (("samples_per_s", "samples_per_s"), ("step_ms", "step_ms_median"),
         ("energy_j_per_sample", "energy_j_per_sample"))
#: The prior of a case's interval when the load sampler saw any of its repeats busy: contention's
#: spread, as ratio_interval assumes for a busy run.
BUSY_PRIOR = Variation(BUSY_SIGMA, 0, "assumed for a busy machine")


@dataclass
class CaseResult:
    name: str
    precision: str
    seq_len: int
    batch_size: int
    runs: list[dict] = field(default_factory=list)  # each repeat's summary record
    error: str | None = None
    kernels_per_step: int | None = None  # device kernels of one profiled step (None: a CPU, or not profiled)

    def median(self, key: str) -> float | None:
        vals = [r[key] for r in self.runs if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def repeat(self, summary: dict) -> dict[str, Any]:
        """One repeat as the row lists it: its timed figures, the sampling error of its median
        from its own steps (`within`, RunValue.of) and why the machine was busy (None: quiet)."""
        s = Summary.from_event(summary)
        value = RunValue.from_summary("", s, "samples_per_s", False)
        return {**{key: s.get(source) for key, source in TIMED}, "within": value.within if value else None,
                "busy": s.busy()}

    def row(self) -> dict[str, Any]:
        last = self.runs[-1] if self.runs else {}
        repeats = [self.repeat(r) for r in self.runs]
        prior = BUSY_PRIOR if any(r["busy"] for r in repeats) else ASSUMED
        figures: dict[str, Any] = {}
        for key, _ in TIMED:
            interval = mean_interval([r[key] for r in repeats if r[key] is not None], prior)
            figures[key], figures[f"{key}_interval"] = (interval[0], list(interval[1:])) if interval else (None, None)
        return {
            "case": self.name,
            "precision": self.precision,
            "seq_len": self.seq_len,
            "batch_size": self.batch_size,
            **figures,
            "runs": repeats,
            "busy": repeats[0]["busy"] if repeats and all(r["busy"] for r in repeats) else None,
            "peak_mem_mb": self.median("peak_mem_mb"),
            "mfu": self.median("mfu"),
            "params_trained": last.get("params_trained"),
            "params_total": last.get("params_total"),
            "final_loss": last.get("final_loss"),
            "kernels_per_step": self.kernels_per_step,
            "error": self.error,
        }


#: "+token" suffixes of a case name and the toggles they set.
CASE_TOKENS = {
    "sdpa": {"sdpa": True},
    "nosdpa": {"sdpa": False},
    "compile": {"torch_compile": True},
    "graph": {"cuda_graph": True},
    "nograph": {"cuda_graph": False},
    "recompute": {"recompute_ffn": True},
    "unfused": {"qkv_fusion": False, "sdpa": False, "swiglu_fusion": False},
}


def make_case(name: str, precision: str, seq_len: int, base: RunConfig) -> Case:
    """A case is a version plus toggle tokens, e.g. v4, v4+sdpa, v2+compile+graph (the peer)."""
    version, *tokens = name.split("+")
    if version not in TABLE:
        names = list(TABLE)
        raise UserError(f"unknown bench case {name!r}: a version ({names[0]}..{names[-1]}) optionally "
                        f"followed by +{'/+'.join(CASE_TOKENS)}, e.g. {PEER}")
    overrides: dict[str, Any] = {"version": version, "precision": precision, "seq_len": seq_len}
    for token in tokens:
        if token not in CASE_TOKENS:
            raise UserError(f"unknown token {token!r} in bench case {name!r}: choose from {', '.join(CASE_TOKENS)}")
        overrides.update(CASE_TOKENS[token])
    overrides["telemetry"] = True  # the load sampler's busy mark and the power samples' energy
    cfg = dataclasses.replace(base, **overrides)
    cfg.validate()
    return Case(name, cfg)


def build_matrix(cases: list[str], precisions: list[str], seq_lens: list[int], base: RunConfig) -> list[Case]:
    return [make_case(v, p, s, base) for s in seq_lens for p in precisions for v in cases]


def schedule(cases: int, repeats: int) -> list[tuple[int, int]]:
    """(round, case) in the order they run: every case once a round, forward on even rounds and
    backward on odd ones (A B B A A B ...), so no case always runs first, after the same case, or
    in the same part of a load that comes and goes."""
    return [(r, i) for r in range(repeats) for i in (range(cases) if r % 2 == 0 else reversed(range(cases)))]


def run_cases(cases: list[Case], repeats: int, log: Callable[[str], None] = print) -> list[CaseResult]:
    from tinylab.training.trainer import run_training

    results = {c.name + str(c.group): CaseResult(c.name, c.config.precision, c.config.seq_len, c.config.batch_size) for c in cases}
    with tempfile.TemporaryDirectory(prefix="tinylab-bench-") as tmp:
        for rep, i in schedule(len(cases), repeats):
            case = cases[i]
            res = results[case.name + str(case.group)]
            if res.error:
                continue
            run_dir = Path(tmp) / f"r{rep}-c{i}"
            t0 = time.perf_counter()
            try:
                summary = run_training(dataclasses.replace(case.config), run_dir, out=io.StringIO())
            except Exception as exc:  # one failing case must not lose the others' numbers
                res.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                traceback.print_exc()
                log(f"[{rep + 1}/{repeats}] {case.name:<18} {case.config.precision} s{case.config.seq_len}: FAILED {res.error}")
                continue
            finally:
                _free_device_memory()
            res.runs.append(summary)
            busy = res.repeat(summary)["busy"]
            log(
                f"[{rep + 1}/{repeats}] {case.name:<18} {case.config.precision} s{case.config.seq_len}: "
                f"{summary['samples_per_s']:9.1f} samples/s  {summary['step_ms_median']:8.2f} ms  "
                f"({time.perf_counter() - t0:.0f}s)" + (f"  busy: {busy}" if busy else "")
            )
        for i, case in enumerate(cases):
            res = results[case.name + str(case.group)]
            if res.runs and not res.error and case.config.device != "cpu":
                res.kernels_per_step = profile_kernels(case, Path(tmp) / f"kernels-c{i}", log)
    return list(results.values())


def profile_kernels(case: Case, run_dir: Path, log: Callable[[str], None] = print) -> int | None:
    """The device kernels one step of the case launches: a run of the case with the PyTorch
    profiler on one step past its warm-up, counted from the kernel table it writes (Kineto's
    kernel events: copies and fills done by the copy engines are not kernels). A CUDA graph's
    replay counts each kernel it runs. None, said in the log, when the profile fails: the timed
    figures stand without it."""
    from tinylab.profilers.base import KERNELS_FILE, profile_dir
    from tinylab.training.trainer import run_training

    cfg = dataclasses.replace(case.config, profilers=["pytorch"], profile_steps=1, telemetry=False)
    try:
        run_training(cfg, run_dir, out=io.StringIO())
        with open(profile_dir(run_dir, "pytorch") / KERNELS_FILE, newline="", encoding="utf-8") as fh:
            count = sum(int(row["calls"]) for row in csv.DictReader(fh))
    except Exception as exc:  # a profiler that cannot start must not lose the bench
        log(f"[kernels] {case.name} {case.config.precision} s{case.config.seq_len}: not counted: "
            f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
        return None
    finally:
        _free_device_memory()
    log(f"[kernels] {case.name:<18} {case.config.precision} s{case.config.seq_len}: {count} kernels a step")
    return count


def _free_device_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def run_values(row: dict) -> list[RunValue]:
    """A row's repeats as the samples/s figures ratio_interval pools."""
    values = (RunValue(f"{row['case']} #{n + 1}", r["samples_per_s"], r["within"], bool(r["busy"]))
              for n, r in enumerate(row["runs"]) if r["samples_per_s"])
    return list(values)


def add_speedups(rows: list[dict]) -> None:
    """Speedup (samples/s over the reference's, with its ratio interval across both cases' repeats)
    and memory ratio vs the baseline, v1 (and vs the compiled+graphed v2 peer) within a group; a
    reference against itself is 1 exactly."""
    base = baseline().name
    for row in rows:
        group = [r for r in rows if r["precision"] == row["precision"] and r["seq_len"] == row["seq_len"]]
        for ref_name, key in ((base, "speedup_vs_v1"), (PEER, "speedup_vs_peer")):
            ref = next((r for r in group if r["case"] == ref_name and r["samples_per_s"]), None)
            interval = None if ref is None or ref is row else ratio_interval(run_values(ref), run_values(row), +1)
            row[key] = 1.0 if ref is row else interval.ratio if interval else None
            row[f"{key}_interval"] = interval.to_json() if interval else None
        ref = next((r for r in group if r["case"] == base and r["peak_mem_mb"]), None)
        row["mem_vs_v1"] = row["peak_mem_mb"] / ref["peak_mem_mb"] if ref and row["peak_mem_mb"] else None


#: A step may come out this much under its floor and still count as at it: run-to-run noise of
#: the step medians and of the floor's replays (each a few %).
FLOOR_NOISE = 0.05


def add_gemm_floor(rows: list[dict], floors: dict[tuple[str, int], dict]) -> None:
    """Each case against the GEMM floor of its (precision, seq_len) group, measured in the same
    process (tinylab.analysis.ceilings.measure_gemm_floor): of_gemm_floor = floor / step time,
    at most 1 (+ FLOOR_NOISE) when the floor is one; groups without a floor get None."""
    for row in rows:
        floor = floors.get((row["precision"], row["seq_len"])) or {}
        floor_ms = floor.get("floor_ms")
        row["gemm_floor_ms"] = floor_ms
        row["gemm_floor_method"] = floor.get("method") if floor_ms else None
        row["of_gemm_floor"] = floor_ms / row["step_ms"] if floor_ms and row["step_ms"] else None


def measure_gemm_floors(rows: list[dict], base: RunConfig) -> dict[tuple[str, int], dict]:
    """The GEMM floor of every (precision, seq_len) group of the rows (GPU only)."""
    from tinylab.analysis.ceilings import measure_gemm_floor

    groups = sorted({(r["precision"], r["seq_len"]) for r in rows})
    return {g: measure_gemm_floor(dataclasses.replace(base, precision=g[0], seq_len=g[1])) for g in groups}


def floor_cell(row: dict) -> str:
    """floor% of a row; '!' marks a step under its floor beyond the noise: not a floor."""
    share = row.get("of_gemm_floor")
    if share is None:
        return "-"
    return f"{100 * share:.0f}" + ("!" if share > 1 + FLOOR_NOISE else "")


def figure(value: float | None, interval: list[float] | None = None) -> str:
    """A figure as the table shows it, whole units from 100 up and three digits below, with its
    interval when it has one: `663 [610–720]`, `0.0123 [0.0118–0.0129]`; "-" when not measured."""
    def num(v: float) -> str:
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"

    if value is None:
        return "-"
    return num(value) + (f" [{num(interval[0])}–{num(interval[1])}]" if interval else "")


def ratio_cell(row: dict, key: str) -> str:
    """A speedup with its ratio interval (`4.34x [3.90–4.83]`), a reference's own 1.00x, or "-"."""
    interval = row.get(f"{key}_interval")
    if interval:
        return f"{row[key]:.2f}x [{interval['low']:.2f}–{interval['high']:.2f}]"
    return "-" if row.get(key) is None else f"{row[key]:.2f}x"


def format_table(rows: list[dict]) -> str:
    """The rows, timed figures with their intervals across the repeats, then a note for each case
    the load sampler saw busy."""
    floor = any(r.get("of_gemm_floor") is not None for r in rows)
    peer = any(r.get("speedup_vs_peer_interval") for r in rows)
    head = ["case", "prec", "seq", "samples/s", "step ms", "kernels", "J/sample", "peak MB", "vs v1", "mem/v1",
            *(["vs peer"] if peer else []), "MFU", "trained", *(["floor%"] if floor else [])]
    table, failed, notes = [head], {}, []
    if any(r.get("kernels_per_step") is None and not r["error"] for r in rows):
        notes.append("kernels: device kernels a step launches, from one profiled step; '-' where none were "
                     "counted (a CPU runs no device kernels; a failed profile says why in the log)")
    for r in rows:
        where = f"{r['case']} {r['precision']} seq {r['seq_len']}"
        if r["error"]:
            failed[len(table)] = f"FAILED: {r['error']}"
            table.append([r["case"], r["precision"], str(r["seq_len"])])
            continue
        table.append([
            r["case"], r["precision"], str(r["seq_len"]), figure(r["samples_per_s"], r["samples_per_s_interval"]),
            figure(r["step_ms"]), "-" if r.get("kernels_per_step") is None else str(r["kernels_per_step"]),
            figure(r["energy_j_per_sample"], r["energy_j_per_sample_interval"]),
            "-" if r["peak_mem_mb"] is None else f"{r['peak_mem_mb']:,.0f}", ratio_cell(r, "speedup_vs_v1"),
            "-" if r["mem_vs_v1"] is None else f"{r['mem_vs_v1']:.2f}", *([ratio_cell(r, "speedup_vs_peer")] if peer else []),
            "-" if r["mfu"] is None else f"{100 * r['mfu']:.1f}",
            f"{r['params_trained']}/{r['params_total']}" if r["params_total"] else "-",
            *([floor_cell(r)] if floor else []),
        ])
        busy = [run["busy"] for run in r["runs"] if run["busy"]]
        if r["busy"]:
            notes.append(f"{where}: busy: timings measure contention (in all {len(busy)} repeats; {r['busy']})")
        elif busy:
            notes.append(f"{where}: busy in {len(busy)} of {len(r['runs'])} repeats, its interval widened for it "
                         f"({busy[0]})")
    widths = [max(len(line[c]) for line in table if c < len(line)) for c in range(len(head))]
    lines = []
    for n, line in enumerate(table):
        cells = [cell.ljust(w) if c < 2 else cell.rjust(w) for c, (cell, w) in enumerate(zip(line, widths))]
        lines.append(" ".join(cells + ([failed[n]] if n in failed else [])).rstrip())
    return "\n".join(lines + notes)


def environment() -> dict[str, Any]:
    import platform

    import torch

    env = {"torch": torch.__version__, "python": platform.python_version(), "date": time.strftime("%Y-%m-%d")}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    env["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else platform.processor() or "cpu"
    return env


def load_baseline(baseline_path: Path) -> dict:
    """A saved bench JSON measured on this card; read before any case runs, so a wrong path or
    card fails in seconds rather than after the whole bench."""
    from tinylab.core.safeio import DOCUMENT_LIMIT, UnsafeFile, read_json

    try:
        baseline = read_json(baseline_path, DOCUMENT_LIMIT, follow_links=True)
    except FileNotFoundError:
        raise UserError(f"--baseline {baseline_path}: no such file") from None
    except OSError as exc:  # a folder, permission denied
        raise UserError(f"--baseline {baseline_path}: {exc.strerror or exc}") from None
    except UnsafeFile as exc:  # a FIFO, a device, too large, nested too deep
        raise UserError(f"--baseline: {exc}") from None
    except UserError:
        raise UserError(f"--baseline {baseline_path}: not a tinylab bench JSON (not valid JSON)") from None
    if not isinstance(baseline, dict) or not isinstance(baseline.get("rows"), list):
        raise UserError(f"--baseline {baseline_path}: not a tinylab bench JSON (no 'rows')")
    rows = [r for r in baseline["rows"] if isinstance(r, dict) and isinstance(r.get("case"), str)
            and isinstance(r.get("precision"), str) and isinstance(r.get("seq_len"), int)
            and isinstance(r.get("samples_per_s"), (int, float, type(None)))]  # a damaged row compares nothing
    here = environment()["device"]
    env = baseline.get("environment")
    device = env.get("device") if isinstance(env, dict) else None
    if device is not None and device != here:
        raise UserError(f"--baseline {baseline_path} was measured on {printable(str(device))[:80]}, this is {here}: "
                        "compare on the same card")
    return {**baseline, "rows": rows}


def check_regression(rows: list[dict], baseline: dict, max_regression_pct: float) -> tuple[list[str], list[str]]:
    """(cases slower than in the baseline (see load_baseline) by more than the allowed %, cases
    left unchecked and why): a case the load sampler saw busy in every repeat, here or in the
    baseline, measured the contention, and a slower figure from it says nothing of the code."""
    index = {(r["case"], r["precision"], r["seq_len"]): r for r in baseline["rows"]}
    problems, skipped = [], []
    for r in rows:
        old = index.get((r["case"], r["precision"], r["seq_len"]))
        if not old or not old.get("samples_per_s") or not r["samples_per_s"]:
            continue
        where = f"{r['case']} {r['precision']} seq {r['seq_len']}"
        busy = r.get("busy") or old.get("busy")
        if busy:
            side = "this bench" if r.get("busy") else "the baseline"
            skipped.append(f"{where}: not checked against the baseline: the machine was busy in every repeat of "
                           f"{side} ({printable(str(busy))[:200]}), so its timings measure contention")
            continue
        drop = 100 * (1 - r["samples_per_s"] / old["samples_per_s"])
        if drop > max_regression_pct:
            problems.append(
                f"{where}: {r['samples_per_s']:.1f} samples/s vs "
                f"{old['samples_per_s']:.1f} in the baseline ({drop:.1f}% slower > {max_regression_pct}%)"
            )
    return problems, skipped

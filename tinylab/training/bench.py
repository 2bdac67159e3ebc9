"""Benchmark versions on this device: one process, cases interleaved and repeated.

Each case is a full training run through the same Trainer the lab uses (so the bench measures
what users run, every parameter training), repeated `repeats` times in round-robin order so
that clock and thermal drift hit every case alike. A case's figure is the median over repeats
of each run's post-warm-up median. Memory is each run's own peak: cases run one at a time and
free their memory before the next.
"""

from __future__ import annotations

import dataclasses
import io
import statistics
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.core.versions import TABLE, baseline, first

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


@dataclass
class CaseResult:
    name: str
    precision: str
    seq_len: int
    batch_size: int
    runs: list[dict] = field(default_factory=list)
    error: str | None = None

    def median(self, key: str) -> float | None:
        vals = [r[key] for r in self.runs if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def row(self) -> dict[str, Any]:
        last = self.runs[-1] if self.runs else {}
        return {
            "case": self.name,
            "precision": self.precision,
            "seq_len": self.seq_len,
            "batch_size": self.batch_size,
            "samples_per_s": self.median("samples_per_s"),
            "step_ms": self.median("step_ms_median"),
            "step_ms_runs": [r.get("step_ms_median") for r in self.runs],
            "peak_mem_mb": self.median("peak_mem_mb"),
            "mfu": self.median("mfu"),
            "params_trained": last.get("params_trained"),
            "params_total": last.get("params_total"),
            "final_loss": last.get("final_loss"),
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
    cfg = dataclasses.replace(base, **overrides)
    cfg.validate()
    return Case(name, cfg)


def build_matrix(cases: list[str], precisions: list[str], seq_lens: list[int], base: RunConfig) -> list[Case]:
    return [make_case(v, p, s, base) for s in seq_lens for p in precisions for v in cases]


def run_cases(cases: list[Case], repeats: int, log: Callable[[str], None] = print) -> list[CaseResult]:
    from tinylab.training.trainer import run_training

    results = {c.name + str(c.group): CaseResult(c.name, c.config.precision, c.config.seq_len, c.config.batch_size) for c in cases}
    with tempfile.TemporaryDirectory(prefix="tinylab-bench-") as tmp:
        for rep in range(repeats):
            for i, case in enumerate(cases):
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
                log(
                    f"[{rep + 1}/{repeats}] {case.name:<18} {case.config.precision} s{case.config.seq_len}: "
                    f"{summary['samples_per_s']:9.1f} samples/s  {summary['step_ms_median']:8.2f} ms  "
                    f"({time.perf_counter() - t0:.0f}s)"
                )
    return list(results.values())


def _free_device_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def add_speedups(rows: list[dict]) -> None:
    """Speedup and memory ratio vs the baseline, v1 (and vs the compiled+graphed v2 peer) within a group."""
    base = baseline().name
    for row in rows:
        group = [r for r in rows if r["precision"] == row["precision"] and r["seq_len"] == row["seq_len"]]
        for ref_name, key in ((base, "speedup_vs_v1"), (PEER, "speedup_vs_peer")):
            ref = next((r for r in group if r["case"] == ref_name and r["samples_per_s"]), None)
            row[key] = row["samples_per_s"] / ref["samples_per_s"] if ref and row["samples_per_s"] else None
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


def format_table(rows: list[dict]) -> str:
    def f(v, spec, none="-"):
        return none if v is None else format(v, spec)

    floor = any(r.get("of_gemm_floor") is not None for r in rows)
    lines = [
        f"{'case':<18} {'prec':<5} {'seq':>5} {'samples/s':>10} {'step ms':>8} {'peak MB':>9} "
        f"{'vs v1':>6} {'mem/v1':>6} {'vs peer':>7} {'MFU':>6} {'trained':>8}" + (f" {'floor%':>6}" if floor else "")
    ]
    for r in rows:
        trained = f"{r['params_trained']}/{r['params_total']}" if r["params_total"] else "-"
        if r["error"]:
            lines.append(f"{r['case']:<18} {r['precision']:<5} {r['seq_len']:>5} FAILED: {r['error']}")
            continue
        lines.append(
            f"{r['case']:<18} {r['precision']:<5} {r['seq_len']:>5} {f(r['samples_per_s'], ',.1f'):>10} "
            f"{f(r['step_ms'], '.2f'):>8} {f(r['peak_mem_mb'], ',.0f'):>9} {f(r['speedup_vs_v1'], '.2f'):>6} "
            f"{f(r['mem_vs_v1'], '.2f'):>6} {f(r['speedup_vs_peer'], '.2f'):>7} "
            f"{f(None if r['mfu'] is None else 100 * r['mfu'], '.1f'):>6} {trained:>8}"
            + (f" {floor_cell(r):>6}" if floor else "")
        )
    return "\n".join(lines)


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
    from tinylab.runs.record import printable

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


def check_regression(rows: list[dict], baseline: dict, max_regression_pct: float) -> list[str]:
    """Cases slower than in the baseline (see load_baseline) by more than the allowed %."""
    index = {(r["case"], r["precision"], r["seq_len"]): r for r in baseline["rows"]}
    problems = []
    for r in rows:
        old = index.get((r["case"], r["precision"], r["seq_len"]))
        if not old or not old.get("samples_per_s") or not r["samples_per_s"]:
            continue
        drop = 100 * (1 - r["samples_per_s"] / old["samples_per_s"])
        if drop > max_regression_pct:
            problems.append(
                f"{r['case']} {r['precision']} seq {r['seq_len']}: {r['samples_per_s']:.1f} samples/s vs "
                f"{old['samples_per_s']:.1f} in the baseline ({drop:.1f}% slower > {max_regression_pct}%)"
            )
    return problems

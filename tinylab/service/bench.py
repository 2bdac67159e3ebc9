"""`tinylab bench`'s work: versions x precisions x sequence lengths timed on this device
(tinylab.training.bench), with the roofline ceilings and GEMM floors (tinylab.analysis.ceilings)
and the Triton kernel micro-benchmarks when asked for, checked against a saved baseline.

torch is imported when a bench runs, never when this module is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.core.safeio import write_atomic
from tinylab.training.bench import DEFAULT_CASES  # no torch: the faces' default list of cases

__all__ = ["DEFAULT_CASES", "BenchResult", "run_bench"]


@dataclass(frozen=True)
class BenchResult:
    environment: dict[str, Any]  # device, torch, triton, date (and liger_kernel with the kernels)
    rows: list[dict[str, Any]]  # a case each
    problems: list[str]  # regressions against the baseline
    skipped: list[str]  # cases the baseline check left out, and why (busy in every repeat)
    table: str  # the rows as text
    kernels_table: str | None  # the kernel micro-benchmarks as text, when they ran

    @property
    def failed(self) -> bool:
        """Whether a case failed."""
        return any(r["error"] for r in self.rows)


def run_bench(base: RunConfig, cases: list[str], precisions: list[str], seq_lens: list[int], repeats: int, *,
              kernels: bool = False, roofline: bool = False, baseline: Path | None = None,
              max_regression: float = 5.0, out: Path | None = None,
              log: Callable[[str], None] = print) -> BenchResult:
    """Every case `repeats` times over, the rounds interleaved ABBA (`log` gets the progress lines,
    the first one naming the device); `out`: where the results are written as JSON. UserError
    before anything runs when the device or a flag cannot be had."""
    from tinylab.training import bench  # torch

    matrix = bench.build_matrix(cases, precisions, seq_lens, base)
    import torch

    if not torch.cuda.is_available() and base.device != "cpu":
        raise UserError("tinylab bench measures a GPU and none is visible; pass --device cpu for a (slow) CPU run")
    if kernels and not torch.cuda.is_available():
        raise UserError("--kernels benchmarks Triton kernels on a GPU and none is visible; drop --kernels")
    saved = bench.load_baseline(baseline) if baseline else None
    env = bench.environment()
    log(f"bench on {env['device']} | torch {env['torch']} | triton {env['triton']} | {env['date']}")
    extra: dict[str, Any] = {}
    if roofline:
        from tinylab.analysis.ceilings import measure_ceilings

        extra["ceilings"] = measure_ceilings()
    results = bench.run_cases(matrix, repeats, log=log)
    rows = [r.row() for r in results]
    bench.add_speedups(rows)
    if roofline and torch.cuda.is_available():
        floors = bench.measure_gemm_floors(rows, base)
        bench.add_gemm_floor(rows, floors)
        extra["gemm_floors"] = [{"precision": p, "seq_len": s, **floor} for (p, s), floor in floors.items()]
    kernels_table = None
    if kernels:
        from kernels.bench_kernels import format_rows, liger_version, run_kernel_benchmarks

        extra["kernels"] = run_kernel_benchmarks(torch.device("cuda"))
        env["liger_kernel"] = liger_version()
        kernels_table = format_rows(extra["kernels"])
    doc = {"environment": env, "config": base.to_dict(), "rows": rows, **extra}
    if out:  # through a temporary file renamed over it: a full disk never truncates an old result
        try:
            write_atomic(out, (json.dumps(doc, indent=2, default=str) + "\n").encode("utf-8"))
        except OSError as exc:
            raise UserError(f"cannot write --out {out}: {exc.strerror or exc}") from None
    problems, skipped = bench.check_regression(rows, saved, max_regression) if saved else ([], [])
    return BenchResult(env, rows, problems, skipped, bench.format_table(rows), kernels_table)

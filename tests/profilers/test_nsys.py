"""The nsys wrapper adapter (tinylab/profilers/nsys.py) against the stand-in executables
(tests/profilers/bin), which accept only the real tools' documented flags and write their real output
formats: wrap_argv() is accepted and runs the program, collect() reads the whole run's kernels or the
measured steps'."""

from __future__ import annotations

from support import samples
from support.adapters import CONFIG, EXPECTED, run_wrapped, totals

from tinylab.profilers.registry import get_adapter
from tinylab.profilers.nsys import NsysAdapter


def test_nsys(standins, tmp_path):
    adapter = get_adapter("nsys")
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    argv = adapter.wrap_argv(out, CONFIG)
    assert argv[1:] == ["profile", "-o", str(out / "report"), "-t", "cuda,nvtx,osrt", "--force-overwrite", "true"]
    result = adapter.collect(out)
    # a CPU program marks no NVTX range: the whole run's kernel summary, and the note says so
    assert result.format == "nsys-kern-sum" and result.steps is None
    assert "no NVTX step ranges recorded" in result.note and "covers the whole run" in result.note
    assert totals(result.table) == {k: (v[0], v[1]) for k, v in EXPECTED.items()}
    assert {"report.nsys-rep", "report_cuda_gpu_kern_sum.csv", "report_cuda_gpu_trace.csv"} <= set(result.artifacts)
    logged = [line.split("\t") for line in standins.read_text().splitlines()]
    for report in ("nvtx_pushpop_trace", "cuda_gpu_trace", "cuda_gpu_kern_sum"):
        assert ["nsys", "stats", "--report", report, "--format", "csv", "--output", str(out / "report"),
                str(out / "report.nsys-rep")] in logged


def test_nsys_keeps_the_measured_steps_where_it_recorded_their_ranges(tmp_path):
    """A GPU run: nsys recorded the trainer's NVTX step ranges (":tinylab step N", the default
    domain) on the clock of its kernel trace; the table is the measured steps' kernels, the profile
    says how many steps. The dispatches are the real ROCm 7 docs trace's, shifted into the ranges."""
    out = tmp_path / "nsys"
    out.mkdir()
    (out / "report.nsys-rep").write_text("report")
    dispatches = samples.rocm7_dispatches()
    base = dispatches[0][1]
    shifted = [(name, start - base, end - base) for name, start, end in dispatches]
    ranges = [("tinylab warm-up step 0", 0, 40_000), ("forward", 40_100, 60_000), ("tinylab step 1", 40_000, 200_000)]
    (out / "report_cuda_gpu_trace.csv").write_text(samples.nsys_gpu_trace(shifted))
    (out / "report_nvtx_pushpop_trace.csv").write_text(samples.nsys_pushpop_trace(ranges))
    (out / "report_cuda_gpu_kern_sum.csv").write_text(samples.nsys_kern_sum(shifted).split("\n\n", 1)[1])
    result = NsysAdapter().collect(out)
    measured = [d for d in shifted if 40_000 <= d[1] <= 200_000]
    assert result.format == "nsys-gpu-trace" and result.steps == 1 and 0 < len(measured) < len(shifted)
    assert totals(result.table) == {k: (v[0], v[1]) for k, v in samples.expected_from_dispatches(measured).items()}
    assert "kernels of the 1 measured steps (NVTX step ranges" in result.note
    (out / "report_nvtx_pushpop_trace.csv").write_text("Start (ns),Name\n1,x\n")  # no End column
    broken = NsysAdapter().collect(out)
    assert broken.format == "nsys-kern-sum" and "the step ranges could not be read" in broken.note


def test_nsys_without_report(tmp_path):
    result = get_adapter("nsys").collect(tmp_path)
    assert result.table is None and "no report.nsys-rep" in result.note

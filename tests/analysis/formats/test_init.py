"""The registry: one table from every format, formats detected by content, folders.

Expected numbers come from the fixtures themselves, read with plain csv/json code in the test
(or written out by hand from the file), never from tinylab's parsers.
"""

from __future__ import annotations

import pytest
from support import samples
from support.formats import (
    DISPATCHES,
    EXPECTED,
    ROCM7,
    assert_matches,
    write,
)

from tinylab.analysis.hotspots import load_kernel_table
from tinylab.core.errors import UserError


def test_every_trace_and_summary_format_gives_the_same_table(tmp_path):
    """ROCm 6.x and 7.x headers, rocpd convert CSV, stats, nsys (3 header generations), rocpd summary."""
    variants = {
        "rocprofv3-kernel-trace": samples.rocprofv3_trace_6x(DISPATCHES),
        "rocpd-csv": samples.rocpd_convert_csv(DISPATCHES),
        "rocprofv3-kernel-stats": samples.rocprofv3_stats(DISPATCHES),
        "nsys-kern-sum": samples.nsys_kern_sum(DISPATCHES, "2023"),
        "nsys-gpu-trace": samples.nsys_gpu_trace(DISPATCHES),
        "rocpd-summary": samples.rocpd_summary_csv(DISPATCHES),
    }
    for fmt, text in variants.items():
        table, detected = load_kernel_table(write(tmp_path, f"{fmt}.out", text))
        assert detected == fmt
        assert_matches(table, EXPECTED)
    for style in ("2022", "2020"):
        table, detected = load_kernel_table(write(tmp_path, f"nsys{style}.csv", samples.nsys_kern_sum(DISPATCHES, style)))
        assert detected == "nsys-kern-sum"
        assert_matches(table, EXPECTED)


def test_rocprofv3_output_folder_merges_processes(tmp_path):
    for host_pid in ("node1/111", "node1/222"):
        path = tmp_path / f"{host_pid}_kernel_stats.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(samples.rocprofv3_stats(DISPATCHES))
        (tmp_path / f"{host_pid}_kernel_trace.csv").write_text(ROCM7.joinpath("kernel_trace.csv").read_text())
        (tmp_path / f"{host_pid}_hip_api_stats.csv").write_text(ROCM7.joinpath("hip_api_stats.csv").read_text())
    table, fmt = load_kernel_table(tmp_path)
    assert fmt == "rocprofv3-kernel-stats"
    assert_matches(table, {k: (2 * c, 2 * t, lo, hi) for k, (c, t, lo, hi) in EXPECTED.items()})
    assert "merged 2 files" in table.attrs["note"]


def test_folder_with_nothing_readable(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(UserError, match="no supported profiler output found in this folder"):
        load_kernel_table(tmp_path)


def test_files_of_separate_outputs_are_never_merged(tmp_path):
    """`tinylab hotspots .` in the repository root added a recording and a test fixture into one
    profile: files are merged only as one run's processes (one folder, or its <host>/<pid>/ folders)."""
    for where in ("exercises/recorded/resnet", "tests/fixtures/resnet"):
        path = tmp_path / where / "kernels_kernel_stats.csv"
        path.parent.mkdir(parents=True)
        path.write_text(samples.rocprofv3_stats(DISPATCHES))
    with pytest.raises(UserError) as refused:
        load_kernel_table(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path}: holds rocprofv3 --stats *_kernel_stats.csv files of 2 separate outputs (exercises/recorded/resnet, "
        f"tests/fixtures/resnet), not one run's processes: name one, e.g. tinylab hotspots "
        f"{tmp_path / 'exercises/recorded/resnet'}")
    table, _ = load_kernel_table(tmp_path / "tests")  # one of them named: read alone
    assert_matches(table, EXPECTED)


def test_one_runs_processes_in_host_and_pid_folders_are_merged(tmp_path):
    for host_pid in ("node1/111", "node2/222"):  # rocprofv3 -d out/%hostname%/%pid%
        path = tmp_path / "out" / host_pid / f"{host_pid[-3:]}_kernel_stats.csv"
        path.parent.mkdir(parents=True)
        path.write_text(samples.rocprofv3_stats(DISPATCHES))
    table, _ = load_kernel_table(tmp_path)
    assert_matches(table, {k: (2 * c, 2 * t, lo, hi) for k, (c, t, lo, hi) in EXPECTED.items()})
    assert "merged 2 files" in table.attrs["note"]

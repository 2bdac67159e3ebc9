"""The AMD adapters against stand-ins of every ROCm release from 6.2 to 7.1, each laid out as a real
install (tests/support/rocm.py) and behaving as that release's table entry says: the tool is found
and its release named, argv holds only that release's flags, outputs are read from that release's
layout, and what a release lacks is refused with one line naming it, before anything runs."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from support import samples
from support.rocm import VERSIONS, rocm_tree

from tinylab.config import RunConfig
from tinylab.errors import UserError
from tinylab.profilers import base
from tinylab.profilers.registry import get_adapter
from tinylab.profilers import rocm as rocm_module
from tinylab.profilers import rocm_releases as rr
from tinylab.profilers.rocprof_compute import RocprofComputeAdapter
from tinylab.profilers.rocprofv3 import Rocprofv3Adapter
from tinylab.service.launch import check_run
from tinylab.service.machine import Machine

CONFIG = RunConfig(num_steps=3, warmup_steps=1, device="cuda:1")
TWO_AMD_GPUS = Machine(2, "amd", "AMD Instinct MI300X")
TRUNCATED = samples.expected_from_dispatches(samples.rocm7_dispatches(samples.FIXTURES / "rocprofv3/rocm7-docs-data/kernel_trace_truncated.csv"))
COUNT_RUNS = ["/bin/sh", "-c", "printf x >> program_ran"]  # an existing file: 6.2-6.4 rocprof-compute checks


@pytest.fixture(params=list(VERSIONS))
def rocm(request, monkeypatch, tmp_path) -> str:
    """A ROCm install of one release first on PATH, an AMD GPU 'visible'; returns the release key."""
    monkeypatch.setenv("PATH", str(rocm_tree(tmp_path / "opt", request.param)) + os.pathsep + os.environ["PATH"])
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.delenv("STANDIN_ROCM_RELEASE", raising=False)
    monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "argv.log"))
    return request.param


def run_wrapped(adapter, tmp_path: Path, program=COUNT_RUNS, config=CONFIG) -> tuple[Path, list[str], subprocess.CompletedProcess]:
    out = tmp_path / "run" / "profiles" / adapter.name
    out.mkdir(parents=True)
    argv = adapter.wrap_argv(out, config)
    proc = subprocess.run(argv + program, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, argv, proc


def options_of(argv: list[str]) -> set[str]:
    return {a for a in argv[1 : argv.index("--")] if a.startswith("-")}


def test_every_tool_is_found_with_its_release(rocm):
    version = VERSIONS[rocm]
    label = f"ROCm {version.split('-')[0]}"
    assert get_adapter("rocprofv3").available() == base.Availability(
        True, None, rr.ROCPROFV3[rocm].sdk_version if rr.ROCPROFV3[rocm].version_flag else None, label)
    assert get_adapter("rocprof-sys").available() == base.Availability(True, None, rr.ROCPROF_SYS[rocm].version, label)
    assert get_adapter("rocprof-compute").available() == base.Availability(True, None, rr.ROCPROF_COMPUTE[rocm].version, label)


def test_rocprofv3_argv_and_layout(rocm, tmp_path):
    facts = rr.ROCPROFV3[rocm]
    adapter = get_adapter("rocprofv3")
    out, argv, _ = run_wrapped(adapter, tmp_path)
    assert all(facts.has(flag) for flag in options_of(argv))
    assert options_of(argv) == {"--kernel-trace", "--stats", "--truncate-kernels", "--marker-trace", "--output-format",
                                "--output-directory"}
    trace = next(name for name in adapter.collect(out).artifacts if name.endswith("_kernel_trace.csv"))
    parts = trace.split("/")
    assert parts[:-1] == ([socket.gethostname()] if facts.host_dir else [])  # <dir>/<pid>_ or <dir>/<host>/<pid>_
    header = (out / trace).read_text().splitlines()[0].replace('"', "").split(",")
    assert tuple(header) == facts.kernel_trace_header
    result = adapter.collect(out)
    assert result.format == "rocprofv3-kernel-stats" and "no roctx step ranges" in result.note
    assert ("does not preload the SDK's roctx" in result.note) == (not facts.marker_preload)
    assert {r["name"]: (r["calls"], r["total_ns"]) for r in result.table.to_dict("records")} == {
        k: (v[0], v[1]) for k, v in TRUNCATED.items()}


def test_rocprofv3_format_a_release_lacks_is_refused_before_launch(rocm, monkeypatch):
    facts = rr.ROCPROFV3[rocm]
    for fmt in ("otf2", "rocpd"):
        cfg = RunConfig(profilers=["rocprofv3"], rocprofv3_formats=[fmt])
        if fmt in facts.formats:
            check_run(cfg, TWO_AMD_GPUS)
            continue
        with pytest.raises(UserError) as err:
            check_run(cfg, TWO_AMD_GPUS)
        first = "6.3" if fmt == "otf2" else "7.0"
        message = str(err.value)
        assert message == (f"rocprofv3 of ROCm {VERSIONS[rocm].split('-')[0]} cannot write {fmt!r} output (it writes "
                           f"{', '.join(facts.formats)}); {fmt} needs ROCm {first} or newer (--rocprofv3-formats)")
        assert "\n" not in message


def test_rocprofv3_counters_in_passes(rocm, tmp_path):
    """One counter group is --pmc where the release has it (one run); otherwise, and for several
    groups, -i counters.txt: a run of the program per group, into <dir>/pmc_<n>/."""
    facts = rr.ROCPROFV3[rocm]
    single = Rocprofv3Adapter(counters=(("SQ_WAVES",),))
    out, argv, _ = run_wrapped(single, tmp_path)
    ran = (tmp_path / "program_ran").read_text()
    if facts.pmc_option:
        assert argv[argv.index("--pmc") + 1] == "SQ_WAVES" and "--input" not in argv and ran == "x"
        assert not single.reruns_program(out)
    else:  # 6.2 has no --pmc
        assert "--pmc" not in argv and (out / "counters.txt").read_text() == "pmc: SQ_WAVES\n"
        assert single.reruns_program(out) and single.planned_passes(out, None) == 1
    (tmp_path / "program_ran").unlink()
    several = Rocprofv3Adapter(counters=(("SQ_WAVES",), ("GRBM_COUNT", "GRBM_GUI_ACTIVE")))
    out = tmp_path / "several"
    out.mkdir()
    argv = several.wrap_argv(out, CONFIG)
    subprocess.run(argv + COUNT_RUNS, cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "program_ran").read_text() == "xx"
    assert several.reruns_program(out) and several.planned_passes(out, None) == 2
    result = several.collect(out)
    assert "counters in 2 passes (pmc_1, pmc_2" in result.note and "from pmc_1" in result.note
    assert result.table["calls"].sum() == sum(v[0] for v in TRUNCATED.values())  # pass 1 only, not both
    assert any(n.startswith("pmc_2/") and n.endswith("_counter_collection.csv") for n in result.artifacts)


def test_rocprof_sys_runner_and_flags(rocm, tmp_path):
    facts = rr.ROCPROF_SYS[rocm]
    adapter = get_adapter("rocprof-sys")
    out, argv, _ = run_wrapped(adapter, tmp_path)
    assert Path(argv[0]).name == facts.runner and options_of(argv) == {"--profile", "--trace", "-o"}
    result = adapter.collect(out)
    assert result.format == "rocprof-sys-json" and result.steps is None  # no perfetto package here: the whole run
    assert "the table covers the whole run, warm-up included: wall_clock has no timestamps" in result.note
    assert f"category {facts.kernel_category}" in result.note and "ui.perfetto.dev" in result.note


def test_rocprof_compute_passes_and_device(rocm, tmp_path, monkeypatch):
    facts = rr.ROCPROF_COMPUTE[rocm]
    monkeypatch.setenv("STANDIN_COMPUTE_PASSES", "3")
    adapter = RocprofComputeAdapter("full", dispatches=("0:2",))
    config = RunConfig(num_steps=3, warmup_steps=1, device="cuda:1", profilers=["rocprof-compute"],
                       profile_kernels=["vecCopy"]).validate()
    out, argv, proc = run_wrapped(adapter, tmp_path, config=config)
    assert Path(argv[0]).name == facts.executable
    assert argv[argv.index("--device") + 1] == "1"  # the run's GPU, for the roofline benchmark
    assert argv[argv.index("-k") + 1] == "vecCopy" and argv[argv.index("-d") + 1] == "0:2"  # the run's filter
    assert (tmp_path / "program_ran").read_text() == "xxx"  # once per pass
    assert adapter.reruns_program(out) and adapter.planned_passes(out, "gfx90a") == 3  # its own perfmon files
    assert ("timestamps.csv" in {p.name for p in (out / "workload").iterdir()}) == facts.timestamps_pass
    result = adapter.collect(out)
    # a speed-of-light table for the longest dispatch of the filtered kernel (the workload's only one)
    assert result.format == "rocprof-compute" and "analyze/dispatch_0/2.1_Speed-of-Light.csv" in result.artifacts
    assert "speed-of-light tables (2.1_Speed-of-Light.csv) in analyze/dispatch_<N>/ for dispatch 0 (vecCopy" in result.note
    # the timing pass where there is one, else the join of all passes (never SQ_LEVEL_WAVES.csv, one pass)
    assert result.note.startswith("read timestamps.csv" if facts.timestamps_pass else "read pmc_perf.csv")


def test_rocprof_compute_pass_count_from_the_table(rocm, tmp_path):
    """Before rocprof-compute has written its pass files, N is the release's count for the GPU, if known."""
    expected = rr.ROCPROF_COMPUTE[rocm].passes
    adapter = RocprofComputeAdapter()
    assert adapter.planned_passes(tmp_path, "gfx942:sramecc+:xnack-") == expected.get("gfx942")
    assert adapter.planned_passes(tmp_path, None) is None


def test_an_option_a_release_lacks_is_refused(rocm, monkeypatch):
    """rocprof-compute's -k/-d exist everywhere, so ask each adapter for a flag only some releases have."""
    adapter = get_adapter("rocprofv3")
    if adapter.facts().has("--pmc"):
        assert adapter.option("--pmc") == "--pmc"
    else:
        with pytest.raises(UserError, match=r"^rocprofv3 of ROCm 6\.2\.\d has no --pmc option"):
            adapter.option("--pmc")


@pytest.mark.parametrize("rocm", ["6.2.0", "6.3"], indirect=True)
def test_rocprofv3_keeps_the_measured_steps_where_it_recorded_their_ranges(rocm, tmp_path):
    """A GPU run's trace with the trainer's roctx step ranges, in the release's layout: the kernel
    table is the measured steps' dispatches and the profile says how many steps it covers."""
    from tinylab.profilers.rocm_releases import MARKER_TRACE_HEADER

    facts = rr.ROCPROFV3[rocm]
    folder = tmp_path / "out" / (socket.gethostname() if facts.host_dir else "")
    folder.mkdir(parents=True)
    dispatches = samples.rocm7_dispatches()
    base = dispatches[0][1]
    shifted = [(name, start - base, end - base) for name, start, end in dispatches]
    (folder / "77_kernel_trace.csv").write_text(samples.rocprofv3_trace_6x(shifted))
    (folder / "77_kernel_stats.csv").write_text(samples.rocprofv3_stats(shifted))
    ranges = [("tinylab warm-up step 0", 0, 40_000), ("tinylab step 1", 40_000, 200_000)]
    (folder / "77_marker_api_trace.csv").write_text(
        ",".join(MARKER_TRACE_HEADER) + "\n"
        + "".join(f"MARKER_CORE_API,{n},77,77,{i},{s},{e}\n" for i, (n, s, e) in enumerate(ranges)))
    result = get_adapter("rocprofv3").collect(tmp_path / "out")
    measured = [d for d in shifted if d[1] >= 40_000]
    assert result.steps == 1 and result.format == "rocprofv3-kernel-trace"
    assert result.table["calls"].sum() == len(measured) < len(shifted)
    assert "kernels of the 1 measured steps" in result.note


def test_rocprof_compute_on_mi300_has_a_roofline_from_6_4(rocm, tmp_path, monkeypatch):
    """MI300 (gfx942): ROCm 6.2/6.3 run no roofline there (their --roof-only stops with an error, a
    profile writes no roofline.csv); the profile says so in one line. From 6.4 it has one."""
    monkeypatch.setenv("STANDIN_GPU_ARCH", "gfx942")
    monkeypatch.setenv("STANDIN_COMPUTE_PASSES", "2")
    disabled = rocm in ("6.2.0", "6.2.2", "6.3")
    assert (rr.ROCPROF_COMPUTE[rocm].no_roofline == rr.MI300_ARCHS) == disabled
    adapter = RocprofComputeAdapter("full")
    out, _, _ = run_wrapped(adapter, tmp_path)
    workload = out / "workload"
    assert (workload / "roofline.csv").is_file() != disabled
    note = adapter.collect(out).note
    version = VERSIONS[rocm].split("-")[0]
    assert (f"no roofline: rocprof-compute of ROCm {version} runs no roofline on MI300 (gfx942)" in note) == disabled
    # --roof-only on such a node: refused before launch, naming the release
    nodes = tmp_path / "kfd"
    for node, props in (("0", "simd_count 0\n"), ("1", "simd_count 304\ngfx_target_version 90402\n")):
        (nodes / node).mkdir(parents=True)
        (nodes / node / "properties").write_text(props)
    monkeypatch.setattr(rocm_module, "KFD_NODES", nodes)
    roof_only = RocprofComputeAdapter("roof-only")
    if disabled:
        with pytest.raises(UserError) as err:
            roof_only.check(RunConfig(profilers=["rocprof-compute"], device="cuda:0"))
        assert str(err.value).startswith(f"rocprof-compute of ROCm {version} runs no roofline on MI300 (gfx942)")
        assert "\n" not in str(err.value)
        proc = subprocess.run(roof_only.wrap_argv(tmp_path / "again", CONFIG) + COUNT_RUNS, cwd=tmp_path,
                              capture_output=True, text=True)  # the tool itself stops there too
        assert proc.returncode == 1 and "Roofline temporarily disabled in MI300" in proc.stderr
    else:
        roof_only.check(RunConfig(profilers=["rocprof-compute"], device="cuda:0"))

"""The AMD adapters against stand-ins of ROCm 6.2 to 10.1, each laid out as a real install (a classic
tree, a TheRock package, a pip install: tests/support/rocm.py) and answering --help and parsing argv
as that release did: the tool is found and its release named, argv holds only what the tool's help
lists (so no stand-in refuses it), outputs are read wherever the release wrote them, and what a tool
does not list is refused with one line naming the option and the tool, before anything runs."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from support import samples
from support.rocm import VERSIONS, key_of, plain_version, rocm_tree

from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.profilers import base
from tinylab.profilers import rocm as rocm_module
from tinylab.core import rocm_releases as rr
from tinylab.profilers.registry import get_adapter
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
    """An install of one release first on PATH, an AMD GPU 'visible'; returns the install (a VERSIONS key)."""
    monkeypatch.setenv("PATH", str(rocm_tree(tmp_path / "opt", request.param)) + os.pathsep + os.environ["PATH"])
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    for name in ("ROCM_PATH", "STANDIN_ROCM_RELEASE", "STANDIN_EXTRA_OPTIONS", "STANDIN_DROP_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "argv.log"))
    return request.param


def run_wrapped(adapter, tmp_path: Path, program=COUNT_RUNS, config=CONFIG) -> tuple[Path, list[str], subprocess.CompletedProcess]:
    out = tmp_path / "run" / "profiles" / adapter.name
    out.mkdir(parents=True, exist_ok=True)
    argv = adapter.wrap_argv(out, config)
    proc = subprocess.run(argv + program, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the stand-in's parser took every option
    return out, argv, proc


def options_of(argv: list[str]) -> set[str]:
    return {a for a in argv[1 : argv.index("--")] if a.startswith("-")}


def test_every_tool_is_found_with_its_release(rocm):
    key, label = key_of(rocm), f"ROCm {plain_version(rocm)}"
    if rocm.endswith("-bare"):  # rocprof-sys and rocprof-compute say their release themselves: major.minor
        label = f"ROCm {key}"
    v3 = rr.ROCPROFV3[key]
    # outside any ROCm tree rocprofv3 6.x names no release: it runs from its help, its layouts guessed
    v3_label = ("release unknown: options from its help (file layouts as ROCm 6.3's: its --help lists --pmc, "
                "which ROCm 6.3 brought)") if rocm.endswith("-bare") else label
    assert get_adapter("rocprofv3").available() == base.Availability(
        True, None, v3.sdk_version if v3.version_flag else None, v3_label)
    assert get_adapter("rocprof-sys").available() == base.Availability(True, None, rr.ROCPROF_SYS[key].version, label)
    assert get_adapter("rocprof-compute").available() == base.Availability(True, None, rr.ROCPROF_COMPUTE[key].version, label)
    how = get_adapter("rocprofv3").release().how
    if rocm.endswith("-bare"):
        assert how == "the tool itself, rocprofv3 --help"
        return
    therock = rr.version_tuple(VERSIONS[rocm])[:2] >= (7, 9)  # /opt/rocm/core-<M.m>
    assert how.startswith("pip install, " if rocm.endswith("-pip") else "TheRock package, " if therock else
                          "ROCm tree, ") and how.endswith(rr.VERSION_FILE)


def test_rocprofv3_argv_and_layout(rocm, tmp_path):
    facts = rr.ROCPROFV3[key_of(rocm)]
    adapter = get_adapter("rocprofv3")
    out, argv, _ = run_wrapped(adapter, tmp_path)
    assert all(facts.has(flag) for flag in options_of(argv))
    db = facts.default_format == "rocpd"  # its --output-format lists rocpd: the database is the record
    assert argv[argv.index("--output-format") + 1:argv.index("--output-directory")] == ["rocpd" if db else "csv"]
    assert options_of(argv) == {"--kernel-trace", "--truncate-kernels", "--marker-trace", "--output-format",
                                "--output-directory"} | (set() if db else {"--stats"})
    result = adapter.collect(out)
    written = next(name for name in result.artifacts if name.endswith("_results.db" if db else "_kernel_trace.csv"))
    parts = written.split("/")
    assert parts[:-1] == ([socket.gethostname()] if facts.host_dir else [])  # <dir>/<pid>_ or <dir>/<host>/<pid>_
    assert ("files at <dir>/<hostname>/<pid>_*" in result.note) == facts.host_dir
    if not db:
        header = (out / written).read_text().splitlines()[0].replace('"', "").split(",")
        assert tuple(header) == facts.kernel_trace_header
    assert result.format == ("rocpd" if db else "rocprofv3-kernel-stats") and "no roctx step ranges" in result.note
    assert ("does not preload the SDK's roctx" in result.note) == (not facts.marker_preload)
    assert {r["name"]: (r["calls"], r["total_ns"]) for r in result.table.to_dict("records")} == {
        k: (v[0], v[1]) for k, v in TRUNCATED.items()}


def test_rocprofv3_format_the_tool_does_not_list_is_refused_before_launch(rocm, monkeypatch):
    facts = rr.ROCPROFV3[key_of(rocm)]
    for fmt in ("otf2", "json"):
        cfg = RunConfig(profilers=["rocprofv3"], rocprofv3_formats=[fmt])
        if fmt in facts.formats:
            check_run(cfg, TWO_AMD_GPUS)
            continue
        with pytest.raises(UserError) as err:
            check_run(cfg, TWO_AMD_GPUS)
        assert str(err.value) == (f"rocprofv3 of ROCm {plain_version(rocm)} cannot write 'otf2' output (it writes "
                                  f"{', '.join(facts.formats)}); otf2 needs ROCm 6.3 or newer (--rocprofv3-formats)")


def test_rocprofv3_counters_in_passes(rocm, tmp_path):
    """One counter group is --pmc where the tool lists it (one run); several are repeated --pmc groups
    where its help says multi-pass (pass_<n>/), else -i counters.txt (pmc_<n>/): a run of the program each."""
    facts = rr.ROCPROFV3[key_of(rocm)]
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
    folder = "pass_" if facts.multipass_pmc else "pmc_"
    assert (argv.count("--pmc") == 2) == facts.multipass_pmc and ("--input" in argv) != facts.multipass_pmc
    result = several.collect(out)
    assert f"counters in 2 passes ({folder}1, {folder}2" in result.note and f"from {folder}1" in result.note
    assert result.table["calls"].sum() == sum(v[0] for v in TRUNCATED.values())  # pass 1 only, not both
    assert any(n.startswith(f"{folder}2/") for n in result.artifacts)


def test_rocprof_sys_runner_and_flags(rocm, tmp_path):
    facts = rr.ROCPROF_SYS[key_of(rocm)]
    adapter = get_adapter("rocprof-sys")
    out, argv, _ = run_wrapped(adapter, tmp_path)
    assert adapter.help().command.endswith("--help=all") == facts.help_topics  # 1.6+: topics, then --help=all
    result = adapter.collect(out)
    if "--output-format" in facts.options:  # 1.7+: its tokens alone decide; the record is rocpd.db
        assert Path(argv[0]).name == facts.runner and options_of(argv) == {"--output-format", "--output"}
        assert argv[argv.index("--output-format") + 1:argv.index("--output")] == ["rocpd"]  # no Perfetto unless asked
        assert result.format == "rocpd" and result.steps is None and "rocpd.db (rocpd convert" in result.note
        assert "no roctx step ranges in rocpd.db" in result.note
        return
    assert Path(argv[0]).name == facts.runner and options_of(argv) == {"--profile", "--trace", "--output"}
    assert result.format == "rocprof-sys-json" and result.steps is None  # no perfetto package here: the whole run
    assert "the table covers the whole run, warm-up included: wall_clock has no timestamps" in result.note
    assert f"category {facts.kernel_category}" in result.note and "ui.perfetto.dev" in result.note


def test_rocprof_compute_passes_device_and_speed_of_light(rocm, tmp_path, monkeypatch):
    facts = rr.ROCPROF_COMPUTE[key_of(rocm)]
    monkeypatch.setenv("STANDIN_COMPUTE_PASSES", "3")
    adapter = RocprofComputeAdapter("full", dispatches=("0:2",))
    config = RunConfig(num_steps=3, warmup_steps=1, device="cuda:1", profilers=["rocprof-compute"],
                       profile_kernels=["vecCopy"]).validate()
    out, argv, proc = run_wrapped(adapter, tmp_path, config=config)
    assert Path(argv[0]).name == facts.executable and options_of(argv) <= set(facts.options) | set(facts.options.values())
    where = "--output-directory" if "--output-directory" in facts.options else "--path"  # 3.5+; --path gone from 3.7
    assert argv[argv.index(where) + 1] == str(out / "workload") and "--overwrite" not in argv  # a fresh folder
    assert argv[argv.index("--device") + 1] == "1"  # the run's GPU, for the roofline benchmark
    assert argv[argv.index("--kernel") + 1] == "vecCopy" and "-d" not in argv  # long names: -d moved in 3.10
    if "--kernel-iteration-range" in facts.options:  # 3.10: rocprofv3's syntax, dispatches from 1
        assert argv[argv.index("--kernel-iteration-range") + 1] == "[1-2]"
    else:
        assert argv[argv.index("--dispatch") + 1] == "0:2"
    assert (tmp_path / "program_ran").read_text() == "xxx"  # once per pass
    assert adapter.reruns_program(out) and adapter.planned_passes(out, "gfx90a") == 3  # its own perfmon files
    assert ("timestamps.csv" in {p.name for p in (out / "workload").iterdir()}) == facts.timestamps_pass
    result = adapter.collect(out)
    # a speed-of-light table for the longest dispatch of the filtered kernel, in the release's layout
    table = "kernel_metric.csv" if facts.analyze_csv == "views" else "2.1_Speed-of-Light.csv"
    assert result.format == "rocprof-compute" and f"analyze/dispatch_0/{table}" in result.artifacts
    assert f"speed-of-light tables ({table}) in analyze/dispatch_<N>/ for dispatch 0 (vecCopy" in result.note
    # the timing pass where there is one, else the join of all passes (3.6+: merged by analyze)
    assert result.note.startswith("read timestamps.csv" if facts.timestamps_pass else "read pmc_perf.csv")
    from tinylab.analysis.formats.rocprof_compute import analyzed_kernels, read_speed_of_light

    ((kernel, folder),) = analyzed_kernels(out / "analyze")
    sol = read_speed_of_light(folder)
    assert kernel.startswith("vecCopy(") and sol["l2 cache bw"]["pct"] == 36.62 and sol["valu flops"]["value"] == 0


def test_rocprof_compute_pass_count_from_the_table(rocm, tmp_path):
    """Before rocprof-compute has written its pass files, N is the release's count for the GPU, if known."""
    # outside any ROCm tree only the running tool could say its release, and this is asked in the program
    expected = {} if rocm.endswith("-bare") else rr.ROCPROF_COMPUTE[key_of(rocm)].passes
    adapter = RocprofComputeAdapter()
    assert adapter.planned_passes(tmp_path, "gfx942:sramecc+:xnack-") == expected.get("gfx942")
    assert adapter.planned_passes(tmp_path, None) is None


@pytest.mark.parametrize("rocm", ["6.2.0", "6.3"], indirect=True)
def test_rocprofv3_keeps_the_measured_steps_where_it_recorded_their_ranges(rocm, tmp_path):
    """A GPU run's trace with the trainer's roctx step ranges, in the release's layout: the kernel
    table is the measured steps' dispatches and the profile says how many steps it covers."""
    from tinylab.core.rocm_releases import MARKER_TRACE_HEADER

    facts = rr.ROCPROFV3[key_of(rocm)]
    folder = tmp_path / "out" / (socket.gethostname() if facts.host_dir else "")
    folder.mkdir(parents=True)
    dispatches = samples.rocm7_dispatches()
    base_ns = dispatches[0][1]
    shifted = [(name, start - base_ns, end - base_ns) for name, start, end in dispatches]
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


@pytest.mark.parametrize("rocm", ["6.2.0", "6.4", "10.1"], indirect=True)
def test_rocprof_compute_on_mi300_has_a_roofline_from_6_4(rocm, tmp_path, monkeypatch):
    """MI300 (gfx942): ROCm 6.2/6.3 run no roofline there (their --roof-only stops with an error, a
    profile writes no roofline.csv); the profile says so in one line. From 6.4 it has one."""
    monkeypatch.setenv("STANDIN_GPU_ARCH", "gfx942")
    monkeypatch.setenv("STANDIN_COMPUTE_PASSES", "2")
    disabled = rocm == "6.2.0"
    assert (rr.ROCPROF_COMPUTE[key_of(rocm)].no_roofline == rr.MI300_ARCHS) == disabled
    adapter = RocprofComputeAdapter("full")
    out, _, _ = run_wrapped(adapter, tmp_path)
    assert (out / "workload" / "roofline.csv").is_file() != disabled
    note = adapter.collect(out).note
    version = plain_version(rocm)
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
        proc = subprocess.run(roof_only.wrap_argv(tmp_path / "again", CONFIG) + COUNT_RUNS, cwd=tmp_path,
                              capture_output=True, text=True)  # the tool itself stops there too
        assert proc.returncode == 1 and "Roofline temporarily disabled in MI300" in proc.stderr
    else:
        roof_only.check(RunConfig(profilers=["rocprof-compute"], device="cuda:0"))

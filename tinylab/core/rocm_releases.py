"""What each ROCm release's profilers write, and what they accepted: rocprofv3, rocprof-sys, rocprof-compute.

Plain data and a few pure helpers, stdlib only. **The installed tool's own `--help` decides what
tinylab passes** (tinylab/profilers/rocm_help.py): a table of releases is always behind. This table
keeps what help cannot tell (output layouts, default formats, counter passes per GPU, column names,
which tool version came with which ROCm) and, for the test stand-ins (tests/profilers/bin, which load
this file by path), each release's options, so that they answer `--help` and parse argv as that
release did. A fact lives here once, with its source; docs/rocm-tools.md explains each one.

It sits below both its readers: the profiler adapters (tinylab.profilers) and the output parsers
(tinylab.analysis.formats), which import it without importing the adapters.

Evidence codes ("evidence" of every entry):
  T  read at the release's own tag or release branch
  M  read on the mainline branch at a commit dated before the release branch was cut (named)
  C  stated in the project's CHANGELOG only ("X for ROCm Y" headings)
  D  stated on a versioned docs page only
  U  UNVERIFIED: assumed, and the entry says from what

Repositories (git refs): SDK = ROCm/rocprofiler-sdk (tags rocm-6.2.0 = b2b99d4, rocm-6.2.1 =
rocm-6.2.2 = 03fe8df); RS = ROCm/rocm-systems (release/rocm-rel-7.0 = 64cf36def, develop of
2025-08-09 = 1b1610fc2; the CHANGELOGs read through 10.0/10.1: RS@0029a62d projects/rocprofiler-sdk,
RS@0147bd8a projects/rocprofiler-compute, RS@01ad4049 projects/rocprofiler-systems; through 10.2 (rocprof-compute 3.10.0, rocprof-sys 1.10.0) in
the code index's newer texts of the same files, and ROCm 10.1's release notes (RN101) for SDK 1.4.1;
RS@1b1610fc2 (the fetched snapshot) for rocprofiler-compute's rocprofv3 backend; newest sources
read: RS@01610ac2 rocprofv3.py, RS@01295a37 rocprofiler-compute src/argparser.py (3.5 era),
RS@002a2c74 analysis_db.py + utils/analysis_orm.py (3.7+ CSV views)); SYS =
ROCm/rocprofiler-systems (release/rocm-rel-6.2 = c9edd24); CMP = ROCm/rocprofiler-compute (tags
rocm-6.2.0 = 17eb9e3a, rocm-6.2.4 = afcf6ef1, rocm-6.3.0 = 4244ddb0); ROCK = ROCm/TheRock@89553ce3.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

#: Release keys, oldest first. 6.2 patch levels differ in rocprofv3's output layout history, so
#: they are kept apart; later releases are keyed by major.minor. 7.9-7.14 are the TheRock-built
#: line (ROCK), 10.0 (2026-08), 10.1 (2026-10) and 10.2 follow it.
RELEASES = ("6.2.0", "6.2.1", "6.2.2", "6.2.4", "6.3", "6.4", "7.0", "7.1", "7.2", "7.9", "7.10", "7.11",
            "7.12", "7.13", "7.14", "10.0", "10.1", "10.2")
#: Where ROCm records its own version (rocm-core CMakeLists.txt @052cc955: file(WRITE .info/version
#: "X.Y.Z"), under <rocm>/.info). 6.2-6.4 write "X.Y.Z-<build>" (or "X.Y.Z.P-<build>"), 7.0+ "X.Y.Z".
VERSION_FILE = ".info/version"
#: TheRock's native packages install to /opt/rocm/core-<M.m> (ROCK build_tools/packaging/linux/
#: build_package.py:590 "Release: /opt/rocm/core-7.15") and do not link /opt/rocm/.info.
THEROCK_PREFIX = "core-"
#: The pip-installed ROCm (rocm-sdk-core wheels): the tools are console scripts in the environment's
#: bin/ that exec <site-packages>/_rocm_sdk_core/bin/<tool> (ROCK rocm-sdk-core/src/rocm_sdk_core/_cli.py),
#: whose .info/version sits in _rocm_sdk_core/; `rocm-sdk version` prints the package version
#: (ROCK rocm/src/rocm_sdk/__main__.py _do_version). `rocm-sdk path --root` unpacks rocm[devel] on
#: first use (_do_path -> _devel.get_devel_root), so tinylab never runs it.
PIP_CORE = "_rocm_sdk_core"


def version_tuple(version: str) -> Optional[tuple[int, int, int]]:
    """(major, minor, patch) of "6.2.2-116", "6.2.1.60201-112", "7.14.0", "10.1" (patch 0), or None."""
    parts = version.strip().split("-")[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None
    patch = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0
    return major, minor, patch


def _key_tuple(key: str) -> tuple[int, ...]:
    return tuple(int(p) for p in key.split("."))


def release_key(version: str) -> Optional[str]:
    """The table key whose facts a ROCm version has: "6.2.2-116" -> "6.2.2", "6.3.1" -> "6.3", a
    release between two read ones -> the older one, newer than the newest -> the newest; None when
    older than 6.2 or not a version."""
    found = version_tuple(version)
    if found is None or found[:2] < (6, 2):
        return None
    major, minor, patch = found
    if (major, minor) == (6, 2):
        return {0: "6.2.0", 1: "6.2.1", 2: "6.2.2"}.get(patch, "6.2.4")
    later = [k for k in RELEASES if not k.startswith("6.2.") and _key_tuple(k) <= (major, minor)]
    return later[-1] if later else None


def newer_than_known(version: str) -> bool:
    """A release after the newest one read here: its options come from its help, its file layouts
    are taken to be the newest known release's."""
    found = version_tuple(version)
    return found is not None and found[:2] > _key_tuple(RELEASES[-1])


# =============================================================================== rocprofv3
# Option tables: long option -> short alias (or None), from each release's argparse calls.
# SDK@rocm-6.2.0:source/bin/rocprofv3.py:39-194 (identical at rocm-6.2.2).
_V62_OPTIONS = {
    "--hip-trace": None, "--hip-runtime-trace": None, "--hip-compiler-trace": None,
    "--marker-trace": None, "--kernel-trace": None, "--memory-copy-trace": None,
    "--scratch-memory-trace": None, "--stats": None, "--hsa-trace": None, "--hsa-core-trace": None,
    "--hsa-amd-trace": None, "--hsa-image-trace": None, "--hsa-finalizer-trace": None,
    "--sys-trace": "-s", "--mangled-kernels": "-M", "--truncate-kernels": "-T",
    "--list-metrics": "-L", "--input": "-i", "--output-file": "-o", "--output-directory": "-d",
    "--output-format": None, "--log-level": None, "--kernel-names": None, "--preload": None,
}
# RS@39db3e8a1 (2024-11-22, mainline before the 6.3 cut; M):projects/rocprofiler-sdk/source/bin/rocprofv3.py
_V63_OPTIONS = {
    "--input": "-i", "--output-file": "-o", "--output-directory": "-d", "--output-format": None,
    "--log-level": None, "--extra-counters": "-E", "--runtime-trace": "-r", "--sys-trace": "-s",
    "--hip-trace": None, "--marker-trace": None, "--kernel-trace": None,
    "--memory-copy-trace": None, "--memory-allocation-trace": None, "--scratch-memory-trace": None,
    "--hsa-trace": None, "--rccl-trace": None, "--kokkos-trace": None, "--hip-runtime-trace": None,
    "--hip-compiler-trace": None, "--hsa-core-trace": None, "--hsa-amd-trace": None,
    "--hsa-image-trace": None, "--hsa-finalizer-trace": None, "--pmc": None, "--stats": None,
    "--summary": "-S", "--summary-per-domain": "-D", "--summary-groups": None,
    "--summary-output-file": None, "--summary-units": "-u", "--mangled-kernels": "-M",
    "--truncate-kernels": "-T", "--kernel-rename": None, "--kernel-include-regex": None,
    "--kernel-exclude-regex": None, "--kernel-iteration-range": None, "--perfetto-backend": None,
    "--perfetto-buffer-size": None, "--perfetto-buffer-fill-policy": None,
    "--perfetto-shmem-size-hint": None, "--list-metrics": "-L", "--preload": None,
    "--suppress-marker-preload": None,
}
# RS@0608bbb4d (2025-02-12, before the 0.7.0 VERSION bump; M). Here -p is --collection-period.
_V64_OPTIONS = {
    **{k: v for k, v in _V63_OPTIONS.items() if k != "--list-metrics"},
    "--att-library-path": None, "--rocdecode-trace": None, "--pc-sampling-beta-enabled": None,
    "--pc-sampling-unit": None, "--pc-sampling-method": None, "--pc-sampling-interval": None,
    "--collection-period": "-p", "--collection-period-unit": None, "--list-avail": "-L", "--echo": None,
    "--advanced-thread-trace": "--att", "--att-target-cu": None, "--att-simd-select": None,
    "--att-buffer-size": None, "--att-shader-engine-mask": None, "--att-parse": None,
    "--att-serialize-all": None,
}
# RS@64cf36def (release/rocm-rel-7.0):projects/rocprofiler-sdk/source/bin/rocprofv3.py:251-808.
# -p is now the hidden --pid; --collection-period moved to -P (871686ad4).
_V70_OPTIONS = {
    **{k: v for k, v in _V64_OPTIONS.items() if k not in ("--att-parse", "--collection-period")},
    "--version": "-v", "--output-format": "-f", "--output-config": None, "--rocjpeg-trace": None,
    "--collection-period": "-P", "--selected-regions": None, "--group-by-queue": None,
    "--rocm-root": None, "--sdk-soversion": None, "--sdk-version": None, "--readlink": None,
    "--realpath": None, "--benchmark-mode": None, "--agent-index": "-A",
    "--disable-signal-handlers": None, "--minimum-output-data": None, "--pid": "-p",
    "--att-perfcounters": None, "--att-perfcounter-ctrl": None, "--att-activity": None,
}

# 7.1+: SDK CHANGELOG headings (C) name what each release adds; the spellings are the newest
# mainline's (RS@01610ac2 source/bin/rocprofv3.py). 7.1 (SDK 1.1.0) made -p/--pid visible as --attach.
_V71_OPTIONS = {**_V70_OPTIONS, "--pid": "-p", "--attach": None, "--attach-duration-msec": None}
_V72_OPTIONS = {**_V71_OPTIONS, "--profile-mpi-ranks": None}  # SDK 1.1.0 "for ROCm release 7.2"
# SDK 1.3.0 for 7.13: KFD, HIP graph and rocSHMEM tracing; --pmc repeatable (one pass a group)
_V713_OPTIONS = {**_V72_OPTIONS, "--kfd-trace": None, "--kfd-page-migration-trace": None,
                 "--kfd-page-mapping-trace": None, "--kfd-queue-trace": None, "--kfd-dropped-events-trace": None,
                 "--hip-graph-trace": None, "--rocshmem-trace": None}
_V714_OPTIONS = {**_V713_OPTIONS, "--spm": None, "--spm-sample-interval": None,  # SDK 1.3.2: SPM (beta)
                 "--spm-sample-interval-unit": None, "--spm-beta-enabled": None}
_V100_OPTIONS = {**_V714_OPTIONS, "--ompt-trace": None, "--hipfile-trace": None}  # SDK 1.3.5 for 10.0
# ROCm 10.1 release notes (RN101: ROCm/ROCm docs, "ROCprofiler-SDK feature highlights", SDK 1.4.1): HIP
# event tracing and kernel replay (beta)
_V101_OPTIONS = {**_V100_OPTIONS, "--hip-event-trace": None, "--replay-mode": None, "--kernel-replay-beta-enabled": None}

# kernel_trace.csv headers. SDK@rocm-6.2.0:source/lib/rocprofiler-sdk-tool/generateCSV.cpp:285-302.
KERNEL_TRACE_HEADER_62 = (
    "Kind", "Agent_Id", "Queue_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp",
    "End_Timestamp", "Private_Segment_Size", "Group_Segment_Size", "Workgroup_Size_X", "Workgroup_Size_Y",
    "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
)
# RS@39db3e8a1 generateCSV.cpp:264-281 (M) and RS@0608bbb4d :265-282 (M); Thread_Id and Dispatch_Id
# came with SDK ebb021c (2024-07-29), after the 6.2 branch. ROCm/rocprofiler-sdk issue #83 shows this
# header from real 6.3.1, 6.4.0 and 6.4.1 runs.
KERNEL_TRACE_HEADER_63 = (
    "Kind", "Agent_Id", "Queue_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id",
    "Start_Timestamp", "End_Timestamp", "Private_Segment_Size", "Group_Segment_Size", "Workgroup_Size_X",
    "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
)
# RS@64cf36def projects/rocprofiler-sdk/source/lib/output/generateCSV.cpp:262-285; Agent_Id is a
# string such as "Agent 4" there.
KERNEL_TRACE_HEADER_70 = (
    "Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
    "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
    "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
    "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
)
# The same header on every release: SDK@rocm-6.2.0 generateCSV.cpp:480-487 and RS@64cf36def
# generateCSV.cpp:523-532. A roctxRangePush/Pop pair is one row, Function = the range's message, its
# start at the push and its end at the pop (SDK@rocm-6.2.0 rocprofiler-sdk-tool/tool.cpp:342-382),
# on the clock the kernel records use (rocprofiler_get_timestamp).
MARKER_TRACE_HEADER = ("Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp",
                       "End_Timestamp")
STATS_HEADER = ("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage", "MinNs", "MaxNs", "StdDev")
#: argparse usage line of every release (SDK@rocm-6.2.0 rocprofv3.py:31-36; RS@64cf36def :230-236).
ROCPROFV3_USAGE = "usage: rocprofv3 [options] -- <application> [application options]"


@dataclass(frozen=True)
class Rocprofv3Facts:
    release: str
    evidence: str
    sdk_version: str
    options: dict  # long option -> short alias or None
    formats: tuple  # what --output-format accepts
    default_format: str  # what is written when --output-format is not given
    version_flag: bool  # `rocprofv3 --version` exists (else argparse exits 2)
    allow_abbrev: bool  # argparse accepts unique prefixes of long options
    host_dir: bool  # the default output name is %hostname%/%pid% (else %pid%)
    kernel_trace_header: tuple
    marker_preload: bool  # --marker-trace preloads the SDK's roctx, catching apps linked to roctracer's
    pmc_option: bool  # --pmc exists (one pass); several counter groups always need -i FILE (a run each)
    #: --pmc is repeatable: each group is a pass, a run of the program into <dir>/pass_<n>/ (SDK 1.3.0;
    #: RS@01610ac2 rocprofv3.py: action="append", sub_directory "pass_"; its help says "multi-pass")
    multipass_pmc: bool = False
    #: -i accepts a .txt file of pmc: lines, a run each into <dir>/pmc_<n>/ (removed in SDK 1.3.0)
    txt_input: bool = True
    #: its rocpd marker regions are named after the ROCTx message (10.1, RN101), so the trainer's step
    #: ranges are found in the database by name
    roctx_regions: bool = False

    @property
    def layout(self) -> str:
        """Where a file lands, relative to --output-directory."""
        return "<dir>/<hostname>/<pid>_<name>" if self.host_dir else "<dir>/<pid>_<name>"

    def has(self, option: str) -> bool:
        return option in self.options or option in self.options.values()


_V62 = Rocprofv3Facts(
    release="6.2.0", evidence="T", sdk_version="0.4.0", options=_V62_OPTIONS,
    formats=("csv", "json", "pftrace"),  # rocprofv3.py:167-174, default=["csv"]
    default_format="csv", version_flag=False, allow_abbrev=True,
    # rocprofiler-sdk-tool/config.hpp:81-82 output_file = getpid(); output_file.cpp:55-64
    host_dir=False, kernel_trace_header=KERNEL_TRACE_HEADER_62,
    marker_preload=False,  # no --suppress-marker-preload and no roctx LD_PRELOAD in rocprofv3.py:366-369
    pmc_option=False,  # counters only via -i; one subprocess per pmc line into <dir>/pmc_<n> (:488-510)
)
_V63 = replace(
    _V62, release="6.3", evidence="M", sdk_version="0.5.0", options=_V63_OPTIONS,
    formats=("csv", "json", "pftrace", "otf2"),  # rocprofv3.py:133-139 (otf2: RS ef22b7a48, 2024-07-30)
    host_dir=True,  # output_config.hpp:75-76 "%hostname%/%pid%" (SDK 395f01b, 2024-09-09, after the 6.2 branch)
    kernel_trace_header=KERNEL_TRACE_HEADER_63, marker_preload=True, pmc_option=True,  # --pmc: 651e28f7f
)
_V64 = replace(_V63, release="6.4", sdk_version="0.6.0", options=_V64_OPTIONS)  # RS@0608bbb4d (M)
_V70 = replace(
    _V64, release="7.0", evidence="T", sdk_version="1.0.0", options=_V70_OPTIONS,
    formats=("csv", "json", "pftrace", "otf2", "rocpd"),  # rocprofv3.py:282-289
    default_format="rocpd",  # rocprofv3.py:1108-1109: <pid>_results.db
    version_flag=True,  # rocprofv3.py:251-252, prints "rocm_version: X.Y.Z" among others (:32-42)
    allow_abbrev=False, kernel_trace_header=KERNEL_TRACE_HEADER_70,
)
_V71 = replace(_V70, release="7.1", evidence="C", sdk_version="1.1.0", options=_V71_OPTIONS)
_V72 = replace(_V71, release="7.2", options=_V72_OPTIONS)  # C: SDK 1.1.0 "for ROCm release 7.2"
# C: SDK 1.3.0 "for ROCm release 7.13": repeated --pmc groups (pass_<n>/), no .txt counter input
# ("Counter collection support for plain text (.txt) input files has been deprecated", under Removed).
# The CHANGELOG also names 1.3.0 "for ROCm release 7.2.4": what that patch's CLI accepts, its help says.
_V713 = replace(_V72, release="7.13", sdk_version="1.3.0", options=_V713_OPTIONS, multipass_pmc=True,
                txt_input=False)
ROCPROFV3 = {
    "6.2.0": _V62,
    "6.2.1": replace(_V62, release="6.2.1"),  # tag rocm-6.2.1 is the rocm-6.2.2 commit: same source
    "6.2.2": replace(_V62, release="6.2.2"),
    # U: no rocm-6.2.4 tag in the snapshot; the rocm-6.2.x branch head (2024-10-24) is the 6.2.2 commit
    "6.2.4": replace(_V62, release="6.2.4", evidence="U"),
    "6.3": _V63,
    "6.4": _V64,
    "7.0": _V70,
    # C: SDK CHANGELOG "1.1.0 for ROCm release 7.1" (process attachment); docs-7.1.1 lists -f and the
    # rocpd default; layouts as 7.0 (U: no 7.1 branch was read)
    "7.1": _V71,
    "7.2": _V72,
    # U: no CHANGELOG heading names 7.9-7.12 (SDK 1.1.0 for 7.2, then 1.3.0 for 7.13); taken as 7.2's
    **{key: replace(_V72, release=key, evidence="U") for key in ("7.9", "7.10", "7.11", "7.12")},
    "7.13": _V713,
    "7.14": replace(_V713, release="7.14", sdk_version="1.3.2", options=_V714_OPTIONS),
    "10.0": replace(_V713, release="10.0", sdk_version="1.3.5", options=_V100_OPTIONS),
    # D (RN101): rocpd schema 3.0.4; rocprofv3 "no longer silently adds rocpd to an output format explicitly
    # requested"; rocpd marker regions named after their ROCTx message (not a generic label)
    "10.1": replace(_V713, release="10.1", evidence="D", sdk_version="1.4.1", options=_V101_OPTIONS, roctx_regions=True),
    # U: no SDK CHANGELOG heading or release note for 10.2 was read; taken as 10.1's
    "10.2": replace(_V713, release="10.2", evidence="U", sdk_version="1.4.1", options=_V101_OPTIONS, roctx_regions=True),
}


# =============================================================================== rocprof-sys
# Runner flags: source/lib/core/argparse.cpp add_argument() calls; timemory adds -h/-?/--help and
# --version. SYS@release/rocm-rel-6.2 argparse.cpp:312-1248; RS@7e1c3f9ff (6.3, M) the same set.
_SYS_OPTIONS_62 = {
    "--monochrome": None, "--debug": None, "--verbose": "-v", "--config": "-c", "--output": "-o",
    "--trace": "-T", "--profile": "-P", "--flat-profile": "-F", "--sample": "-S", "--host": "-H",
    "--device": "-D", "--wait": "-w", "--duration": "-d", "--periods": None, "--include": "-I",
    "--exclude": "-E", "--launcher": "-l", "--trace-file": None, "--trace-buffer-size": None,
    "--trace-fill-policy": None, "--trace-wait": None, "--trace-duration": None, "--trace-periods": None,
    "--trace-clock-id": None, "--profile-format": None, "--profile-diff": None, "--process-freq": None,
    "--process-wait": None, "--process-duration": None, "--cpus": None, "--gpus": None,
    "--sampling-freq": "-f", "--tids": "-t", "--sampling-wait": None, "--sampling-duration": None,
    "--sample-cputime": None, "--sample-realtime": None, "--sample-overflow": None, "--cpu-events": "-C",
    "--gpu-events": "-G", "--inlines": "-i", "--hsa-interrupt": None, "--fork": None, "--help": "-h",
    "--version": None,
}
# RS@572f9532e (6.4, M) and RS@64cf36def (7.0, T): --gpu-events/-G is gone.
_SYS_OPTIONS_64 = {k: v for k, v in _SYS_OPTIONS_62.items() if k != "--gpu-events"}
# C (RS@01ad4049 CHANGELOG): 1.4.0 for 7.11 "--trace-legacy / -L"; 1.6.0 for 7.13 presets, domain flags,
# --selected-regions, rank filters and topic help (--help=<topic>, --help=all).
_SYS_OPTIONS_711 = {**_SYS_OPTIONS_64, "--trace-legacy": "-L"}
_SYS_OPTIONS_713 = {**_SYS_OPTIONS_711, "--preset": None, "--list-presets": None, "--explain": None, "--gpu": None,
                    "--rocm": None, "--cpu": None, "--parallel": None, "--export-config": None,
                    "--selected-regions": None, "--rank-filter-output": None, "--rank-filter-logs": None,
                    "--rank-filter-id": None}
# C (the CHANGELOG through 1.10.0, RS projects/rocprofiler-systems/CHANGELOG.md): 1.7.0 for 7.14.0 adds
# rocprof-sys-run --output-format (proto, rocpd, json, text; "cannot be combined with" --trace/--profile/
# --flat-profile/--profile-format). Its "--freq -> --sampling-freq" rename is rocprof-sys-sample's: the
# runner had --sampling-freq already (SYS@release/rocm-rel-6.2 argparse.cpp).
_SYS_OPTIONS_714 = {**_SYS_OPTIONS_713, "--output-format": None}


@dataclass(frozen=True)
class RocprofSysFacts:
    release: str
    evidence: str
    version: str
    runner: str  # the executable that wraps a program
    options: dict
    env_prefix: str
    output_prefix: str  # default output folder "<prefix>-<tag>-output" (timemory_init in config.cpp)
    kernel_category: str  # Perfetto category of GPU kernel slices
    kernel_track: str  # Perfetto track name of kernel slices
    parse_error_exit_code: int  # impl.cpp:289-292 on_error -> exit(EXIT_FAILURE)
    #: --help shows essential options and topics only; --help=all lists every option (1.6.0 for 7.13:
    #: "Topic-based help system ... Use --help=all for the full option listing")
    help_topics: bool = False
    #: what it writes when no output option is given: timemory tables and Perfetto (to 1.8), a rocpd
    #: database rocpd.db (1.9.0 for 10.1: "rocpd is now the default output format", Perfetto only with
    #: --output-format proto; ROCPROFSYS_PROFILE defaults to false)
    default_outputs: tuple = ("proto", "text")


_SYS62 = RocprofSysFacts(
    release="6.2.0", evidence="T", version="1.11.2", runner="omnitrace-run", options=_SYS_OPTIONS_62,
    env_prefix="OMNITRACE_", output_prefix="omnitrace",  # config.cpp:1042
    kernel_category="device_hip",  # source/lib/core/categories.hpp:94
    kernel_track="HIP Activity Device {dev}, Queue {queue}",  # library/roctracer.cpp:917-922
    parse_error_exit_code=1,
)
_SYS63 = replace(_SYS62, release="6.3", evidence="M", version="0.1.0", runner="rocprof-sys-run",
                 env_prefix="ROCPROFSYS_", output_prefix="rocprofsys")  # RS@7e1c3f9ff config.cpp:1055
_SYS64 = replace(_SYS63, release="6.4", version="1.0.0", options=_SYS_OPTIONS_64,
                 kernel_category="rocm_kernel_dispatch",  # RS@572f9532e categories.hpp:97 (b29cfac10)
                 kernel_track="GPU Kernel Dispatch [{dev}] Queue {queue}")  # library/rocprofiler-sdk.cpp:676
_SYS70 = replace(_SYS64, release="7.0", evidence="T", version="1.1.0")  # RS@64cf36def categories.hpp:97
# C + develop@1b1610fc2: kernels grouped by HIP stream by default (CHANGELOG 1.2.0); options U (7.0's)
_SYS71 = replace(_SYS70, release="7.1", evidence="C", version="1.2.0", kernel_track="HIP Activity Stream {stream}")
_SYS72 = replace(_SYS71, release="7.2", version="1.3.0")  # C: "1.3.0 for ROCm 7.2.0"; options U (7.1's)
_SYS713 = replace(_SYS72, release="7.13", version="1.6.0", options=_SYS_OPTIONS_713, help_topics=True)
ROCPROF_SYS = {
    # one 6.2 branch: its patch releases cannot be told apart
    **{key: replace(_SYS62, release=key) for key in ("6.2.0", "6.2.1", "6.2.2", "6.2.4")},
    "6.3": _SYS63, "6.4": _SYS64, "7.0": _SYS70, "7.1": _SYS71, "7.2": _SYS72,
    # U: no heading names 7.9 or 7.10 (1.3.0 for 7.2.0, then 1.4.0 for 7.11.0): taken as 7.2's
    **{key: replace(_SYS72, release=key, evidence="U") for key in ("7.9", "7.10")},
    "7.11": replace(_SYS72, release="7.11", version="1.4.0", options=_SYS_OPTIONS_711),
    "7.12": replace(_SYS72, release="7.12", version="1.5.0", options=_SYS_OPTIONS_711),
    "7.13": _SYS713,
    "7.14": replace(_SYS713, release="7.14", version="1.7.0", options=_SYS_OPTIONS_714),  # C: "1.7.0 for ROCm 7.14.0"
    # C: "1.8.0 for ROCm 10.0" (instrument -p/--pid removed: rocprof-sys-attach), "1.9.0 for ROCm 10.1",
    # "1.10.0 for ROCm 10.2 (unreleased)"; the runner's options as 7.14's (U: no runner flag is named)
    "10.0": replace(_SYS713, release="10.0", version="1.8.0", options=_SYS_OPTIONS_714),
    "10.1": replace(_SYS713, release="10.1", version="1.9.0", options=_SYS_OPTIONS_714, default_outputs=("rocpd",)),
    "10.2": replace(_SYS713, release="10.2", version="1.10.0", options=_SYS_OPTIONS_714, default_outputs=("rocpd",)),
}
#: Every Perfetto category a rocprof-sys release files GPU kernels under (a trace reader needs no release).
SYS_KERNEL_CATEGORIES = tuple(dict.fromkeys(f.kernel_category for f in ROCPROF_SYS.values()))


# =============================================================================== rocprof-compute
# `profile` options, general group included (src/argparser.py). -v is --version; -V is --verbose.
_C62_OPTIONS = {
    "--version": "-v", "--verbose": "-V", "--quiet": "-q", "--specs": "-s", "--name": "-n",
    "--target": None, "--path": "-p", "--kernel": "-k", "--dispatch": "-d", "--block": "-b",
    "--join-type": None, "--no-roof": None, "--roof-only": None, "--sort": None, "--mem-level": "-m",
    "--device": None, "--kernel-names": None,
}
_C64_OPTIONS = {**_C62_OPTIONS, "--subpath": None, "--hip-trace": None, "--kokkos-trace": None,
                "--spatial-multiplexing": None, "--format-rocprof-output": None}
# -R/--roofline-data-type came with 3.1.1 (C: "3.1.1 for ROCm 6.4.2"), so 6.4.2+ has it too; the 6.4 key
# holds 6.4.0's options (RS@611704d82, M)
_C70_OPTIONS = {**_C64_OPTIONS, "--list-metrics": None, "--config-dir": None, "--pc-sampling-method": None,
                "--pc-sampling-interval": None, "--rocprofiler-sdk-library-path": None,
                "--roofline-data-type": "-R"}
# C (RS@0147bd8a CHANGELOG) for what each version adds or removes; spellings from RS@01295a37 argparser.py.
# 3.3.0 (7.1): process attach, single-pass sets, rocpd output kept; 3.4.0 (7.2): --list-blocks
_C71_OPTIONS = {**_C70_OPTIONS, "--attach-pid": None, "--attach-duration-msec": None, "--set": None,
                "--list-sets": None, "--retain-rocpd-output": None, "--list-available-metrics": None}
_C72_OPTIONS = {**_C71_OPTIONS, "--list-blocks": None}
# 3.5.0 (7.12): --output-directory (-p/--path "(DEPRECATED) ... Use --output-directory instead"), the
# native counter tool, --rocprofiler-sdk-library-path renamed --rocprofiler-sdk-tool-path
_C712_OPTIONS = {**{k: v for k, v in _C72_OPTIONS.items() if k not in ("--rocprofiler-sdk-library-path",
                                                                     "--kernel-names")},
                 "--output-directory": None, "--rocprofiler-sdk-tool-path": None, "--no-native-tool": None,
                 "--iteration-multiplexing": None, "--experimental": None, "--torch-trace": None}
# 3.6.0 (7.13): --sort, --mem-level, --roofline-data-type moved to analyze; HIP trace removed
_C713_OPTIONS = {k: v for k, v in _C712_OPTIONS.items()
                 if k not in ("--sort", "--mem-level", "--roofline-data-type", "--hip-trace")}
# 3.7.0 (7.14): "--path and --subpath options have been removed from profile mode"; --bench-only
_C714_OPTIONS = {**{k: v for k, v in _C713_OPTIONS.items() if k not in ("--path", "--subpath")}, "--bench-only": None}
# 3.8.0 (10.0): --overwrite ("Profile mode now errors when the target workload directory is non-empty
# unless --overwrite is passed"); --spatial-multiplexing removed
_C100_OPTIONS = {**{k: v for k, v in _C714_OPTIONS.items() if k != "--spatial-multiplexing"}, "--overwrite": None}
# 3.9.0 (10.1): "Removed the CSV profile output backend and the --format-rocprof-output profile mode option",
# "Removed the --join-type profile mode option" (an earlier text of the same heading said "Deprecated": the
# newest read is followed)
_C101_OPTIONS = {k: v for k, v in _C100_OPTIONS.items() if k not in ("--format-rocprof-output", "--join-type")}
# 3.10.0 (10.2): "Renamed the profile-mode dispatch filter to --kernel-iteration-range, matching the rocprofv3
# option it drives"; "--dispatch is no longer accepted in profile-mode"; "-d is now the short form of
# --output-directory in profile-mode"
_C102_OPTIONS = {**{k: v for k, v in _C101_OPTIONS.items() if k != "--dispatch"}, "--output-directory": "-d",
                 "--kernel-iteration-range": None}

# `analyze` options. CMP@rocm-6.2.0 src/argparser.py analyze group (the same through RS@64cf36def).
_CA62_OPTIONS = {
    "--version": "-v", "--verbose": "-V", "--quiet": "-q", "--path": "-p", "--list-stats": None,
    "--list-metrics": None, "--kernel": "-k", "--dispatch": "-d", "--block": "-b", "--gpu-id": None,
    "--output": "-o", "--save-dfs": None, "--gui": None, "--random-port": None, "--max-stat-num": None,
    "--normal-unit": "-n", "--time-unit": "-t", "--decimal": None, "--cols": None, "--config-dir": None,
    "--kernel-verbose": None,
}
# 3.3.0 (7.1): "Replace -o / --output analyze mode option with --output-format and --output-name",
# "Replace --save-dfs analyze mode option with --output-format csv"; --include-cols
_CA71_OPTIONS = {**{k: v for k, v in _CA62_OPTIONS.items() if k not in ("--output", "--save-dfs")},
                 "--output-format": None, "--output-name": None, "--include-cols": None, "--tui": None,
                 "--list-available-metrics": None, "--roofline-data-type": "-R"}
# 3.6.0 (7.13): --sort and --mem-level arrive from profile mode; --view
_CA713_OPTIONS = {**_CA71_OPTIONS, "--sort": None, "--mem-level": "-m", "--view": None}
# 3.10.0 (10.2): "Removed the --kernel-verbose analyze option"
_CA102_OPTIONS = {k: v for k, v in _CA713_OPTIONS.items() if k != "--kernel-verbose"}


@dataclass(frozen=True)
class RocprofComputeFacts:
    release: str
    evidence: str
    version: str
    executable: str
    options: dict  # of `profile`
    #: launches of the program per profile on MI200 (gfx90a) and MI300 (gfx942); None: not known
    passes: dict
    app_must_be_file: bool  # the program's argv[0] must be an existing file (6.2-6.4), else on PATH
    name_forbids: str  # characters -n/--name may not hold (6.x also limits it to 35 characters)
    timestamps_pass: bool  # a timestamps.csv pass exists (not with the 7.0 rocprofv3 backend)
    #: GPU architectures it runs no roofline on: --roof-only stops with an error there, and a full
    #: profile writes no roofline.csv (its roofline microbenchmark is never started)
    no_roofline: tuple
    analyze_options: dict = field(default_factory=lambda: _CA62_OPTIONS)
    #: what `analyze` writes its per-dispatch tables as (docs/rocm-tools.md, "Speed-of-light tables"):
    #: "save-dfs" <dir>/<id>_<title>.csv (--save-dfs, to 3.2); "tables" the same files under
    #: --output-format csv --output-name <dir> (3.3-3.6, utils/tty.py); "views" <dir>/kernel.csv,
    #: kernel_metric.csv, workload_metric.csv, pc_sampling.csv (3.7+, analysis_db.py write_csv_dir)
    analyze_csv: str = "save-dfs"
    #: the speed-of-light percentage's column (or value_name): "Pct of Peak" to 3.7, "Percent of Peak" 3.8+
    pct_column: str = "Pct of Peak"
    #: profile writes one results_<pass>.csv a pass and analyze merges them into pmc_perf.csv (3.6.0)
    results_per_pass: bool = False
    #: profile refuses a non-empty workload folder unless --overwrite (3.8.0)
    refuses_non_empty: bool = False
    #: --roof-only writes roofline.csv only (3.6.0: "Standalone roofline (--roof-only option) in profile
    #: mode now creates roofline.csv only"): no counters, no kernel table
    roof_only_bare: bool = False
    deprecated: tuple = ()  # options its help marks "(DEPRECATED)"
    #: the number of a workload's first dispatch (3.10.0: "Dispatch IDs now start at 1 instead of 0")
    dispatch_base: int = 0
    #: analyze's kernel.csv has a short_name column, and the System Speed-of-Light panel no Active CUs
    #: (3.10.0: "Use CU Utilization instead")
    short_names: bool = False


#: MI300's architectures: rocprof-compute's SoC classes soc_gfx940/941/942 (MI300A and MI300X).
MI300_ARCHS = ("gfx940", "gfx941", "gfx942")


_CMP62 = RocprofComputeFacts(
    release="6.2.0", evidence="T", version="2.0.1", executable="omniperf", options=_C62_OPTIONS,
    # old coalescing (soc_base.py:258-262,284-520 + profiler_base.py:66-100): 5 SQ + 19/18 pmc_perf +
    # timestamps; the same counts as CMP tests/workloads/vcopy/{MI200,MI300X_A1}/perfmon
    passes={"gfx90a": 25, "gfx942": 24},
    app_must_be_file=True,  # profiler_base.py:295 os.path.isfile(argv[0])
    name_forbids="-.", timestamps_pass=True,  # profiler_base.py:308-310
    # src/omniperf_soc/soc_gfx94{0,1}.py:85,94 and soc_gfx942.py:90,99 (also at rocm-6.2.4):
    # profiling_setup: console_error("Roofline temporarily disabled in MI300") on --roof-only;
    # post_profiling logs the same and never calls mibench (the roofline benchmark)
    no_roofline=MI300_ARCHS,
)
# CMP@rocm-6.3.0; improved coalescing c93fead7: counts COMPUTED from source, not seen in a real run.
# The MI300 roofline is still off: src/rocprof_compute_soc/soc_gfx94{0,1}.py:88,97, soc_gfx942.py:93,102
# (the same at rocm-6.3.2; ROCm/rocprofiler-compute#285 shows it on a real 6.3.3 MI300 run).
_CMP63 = replace(_CMP62, release="6.3", version="3.0.0", executable="rocprof-compute",
                 passes={"gfx90a": 16, "gfx942": 15})
# RS@611704d82: soc_gfx942.py:100-110 runs mibench unless --no-roof (so does RS@64cf36def :91; CMP 272e5b6e, 2025-01-02,
# brought it back; the CHANGELOG does not say so)
_CMP64 = replace(_CMP63, release="6.4", evidence="M", version="3.1.0", options=_C64_OPTIONS, no_roofline=())
_CMP70 = replace(
    # the release branch's VERSION file reads 3.2.2 (a pre-release); ROCm 7.0.0 shipped 3.2.3 (C)
    _CMP64, release="7.0", evidence="T", version="3.2.3", options=_C70_OPTIONS,
    passes={},  # counters come from the analysis configs (static pmc files removed, #606): U
    app_must_be_file=False,  # profiler_base.py:299 shutil.which(argv[0])
    name_forbids="/", timestamps_pass=False,  # rocprof_compute_base.py:246-247; soc_base.py:829-837
)
_CMP71 = replace(_CMP70, release="7.1", evidence="C", version="3.3.0", options=_C71_OPTIONS,
                 analyze_options=_CA71_OPTIONS, analyze_csv="tables")
_CMP72 = replace(_CMP71, release="7.2", version="3.4.0", options=_C72_OPTIONS)
_CMP712 = replace(_CMP72, release="7.12", version="3.5.0", options=_C712_OPTIONS, deprecated=("--path", "--subpath"))
_CMP713 = replace(_CMP712, release="7.13", version="3.6.0", options=_C713_OPTIONS, analyze_options=_CA713_OPTIONS,
                  results_per_pass=True, roof_only_bare=True)
_CMP714 = replace(_CMP713, release="7.14", version="3.7.0", options=_C714_OPTIONS, analyze_csv="views", deprecated=())
_CMP100 = replace(_CMP714, release="10.0", version="3.8.0", options=_C100_OPTIONS, pct_column="Percent of Peak",
                  refuses_non_empty=True)
ROCPROF_COMPUTE = {
    **{key: replace(_CMP62, release=key) for key in ("6.2.0", "6.2.1", "6.2.2", "6.2.4")},
    "6.3": _CMP63, "6.4": _CMP64, "7.0": _CMP70, "7.1": _CMP71, "7.2": _CMP72,
    # U: no heading names 7.9-7.11 (3.4.0 for 7.2.0, then 3.5.0 for 7.12.0): taken as 7.2's
    **{key: replace(_CMP72, release=key, evidence="U") for key in ("7.9", "7.10", "7.11")},
    "7.12": _CMP712, "7.13": _CMP713, "7.14": _CMP714, "10.0": _CMP100,
    "10.1": replace(_CMP100, release="10.1", version="3.9.0", options=_C101_OPTIONS),
    "10.2": replace(_CMP100, release="10.2", version="3.10.0", options=_C102_OPTIONS, analyze_options=_CA102_OPTIONS,
                    dispatch_base=1, short_names=True),
}

#: Tool versions printed by --version / -v -> ROCm releases (each project's CHANGELOG headings), for a
#: tool whose ROCm tree has no .info/version and whose output names no ROCm release.
SYS_TO_ROCM = {"1.11.2": "6.2", "0.1.0": "6.3", "0.1.1": "6.3", "1.0.0": "6.4", "1.0.1": "6.4", "1.0.2": "6.4",
               "1.1.0": "7.0", "1.1.1": "7.0", "1.2.0": "7.1", "1.2.1": "7.1", "1.3.0": "7.2", "1.4.0": "7.11",
               "1.5.0": "7.12", "1.6.0": "7.13", "1.7.0": "7.14",
               "1.8.0": "10.0", "1.9.0": "10.1", "1.10.0": "10.2"}
COMPUTE_TO_ROCM = {"2.0.1": "6.2", "3.0.0": "6.3", "3.1.0": "6.4", "3.1.1": "6.4", "3.2.2": "7.0", "3.2.3": "7.0",
                   "3.3.0": "7.1", "3.3.1": "7.1", "3.4.0": "7.2", "3.5.0": "7.12", "3.6.0": "7.13", "3.7.0": "7.14",
                   "3.8.0": "10.0", "3.9.0": "10.1", "3.10.0": "10.2"}

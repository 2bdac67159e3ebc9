"""The release table (tinylab/core/rocm_releases.py) pinned to the tools' own sources, release by release,
and the release keys it maps versions to.

The stand-ins (tests/profilers/bin) are built from tinylab/core/rocm_releases.py, so every
other release test agrees with the table by construction: a wrong edit of it would be mirrored by
the stand-ins and pass. Here a few facts of each release are literal values copied from the tools'
sources and changelogs, as docs/rocm-tools.md cites them (T: the release's tag or branch, M: the
mainline before the release was cut, C: CHANGELOG only, U: assumed), so such an edit fails here.

Repositories: SDK ROCm/rocprofiler-sdk, RS ROCm/rocm-systems, SYS ROCm/rocprofiler-systems,
CMP ROCm/rocprofiler-compute.
"""

from __future__ import annotations

import pytest

from tinylab.core import rocm_releases as rr

V62 = ("csv", "json", "pftrace")  # SDK@rocm-6.2.0 and @rocm-6.2.2 source/bin/rocprofv3.py:172 choices=
V63 = V62 + ("otf2",)  # SDK 16d535e (2024-07-30, after the 6.2 tags); RS@39db3e8a1 rocprofv3.py:137
V70 = V63 + ("rocpd",)  # RS@64cf36def (release/rocm-rel-7.0) rocprofv3.py:287, with "-f" (:282, RS 0e93099fd)
MI300 = ("gfx940", "gfx941", "gfx942")  # CMP soc_gfx940.py/soc_gfx941.py/soc_gfx942.py
FACTS = {
    # release: (rocprofv3 formats, default format, <dir>/<host>/ layout, --version and -f, --pmc,
    #           kernel_trace columns, roctx preload; rocprof-sys runner, kernel category;
    #           rocprof-compute executable, version, timestamps pass, no roofline on)
    "6.2.0": (V62, "csv", False, False, False, 16, False,  # SDK@rocm-6.2.0 rocprofv3.py:171 default=["csv"],
              # config.hpp:81-82 output_file=%pid%, generateCSV.cpp:285-302, no roctx LD_PRELOAD (:366-369)
              "omnitrace-run", "device_hip",  # SYS@c9edd24 categories.hpp:94
              "omniperf", "2.0.1", True, MI300),  # CMP@rocm-6.2.0 VERSION; soc_gfx942.py:90 "Roofline temporarily disabled"
    "6.2.1": (V62, "csv", False, False, False, 16, False, "omnitrace-run", "device_hip", "omniperf", "2.0.1", True,
              MI300),  # tag rocm-6.2.1 is the rocm-6.2.2 commit (SDK 03fe8df)
    "6.2.2": (V62, "csv", False, False, False, 16, False, "omnitrace-run", "device_hip", "omniperf", "2.0.1", True,
              MI300),  # SDK@rocm-6.2.2 = 03fe8df; CMP@rocm-6.2.4 soc_gfx942.py:90 still disabled
    "6.2.4": (V62, "csv", False, False, False, 16, False, "omnitrace-run", "device_hip", "omniperf", "2.0.1", True,
              MI300),  # U: no SDK rocm-6.2.4 tag, taken as 6.2.2
    "6.3": (V63, "csv", True, False, True, 18, True,  # RS@39db3e8a1 (M): output_config.hpp %hostname%/%pid%,
            # generateCSV.cpp:264-281 (18 columns, as real 6.3.1 output in ROCm/rocprofiler-sdk#83),
            # --pmc, --suppress-marker-preload
            "rocprof-sys-run", "device_hip",  # RS@7e1c3f9ff (M) categories.hpp:94
            "rocprof-compute", "3.0.0", True, MI300),  # CMP@rocm-6.3.0 VERSION, soc_gfx942.py:93
    "6.4": (V63, "csv", True, False, True, 18, True,  # RS@0608bbb4d (M) rocprofv3.py:230
            "rocprof-sys-run", "rocm_kernel_dispatch",  # RS@572f9532e (M) categories.hpp:97
            "rocprof-compute", "3.1.0", True, ()),  # RS@611704d82 (M) soc_gfx942.py:109 calls mibench
    "7.0": (V70, "rocpd", True, True, True, 22, True,  # RS@64cf36def rocprofv3.py:1108-1109 ["rocpd"] default,
            # :251-252 --version, generateCSV.cpp:262-285
            "rocprof-sys-run", "rocm_kernel_dispatch",  # RS@64cf36def categories.hpp:97
            # CHANGELOG "3.2.3 for ROCm 7.0.0" (the branch's VERSION file said 3.2.2, a pre-release);
            "rocprof-compute", "3.2.3", False, ()),  # rocprof_compute_base.py:246-247 (rocprofv3 backend)
    "7.1": (V70, "rocpd", True, True, True, 22, True,  # C: SDK CHANGELOG 1.1.0 for ROCm 7.1; U: layouts as 7.0
            "rocprof-sys-run", "rocm_kernel_dispatch",
            "rocprof-compute", "3.3.0", False, ()),  # C: CHANGELOG 3.3.0 for ROCm 7.1.0
}
#: 7.2 on (C: each tool's CHANGELOG heading "<version> for ROCm <release>", RS@0029a62d, @0147bd8a, @01ad4049;
#: U where no heading names the release): SDK version, repeated --pmc, .txt counter input; rocprof-sys
#: version, topic help; rocprof-compute version, -p, --output-directory, --overwrite, analyze's table output
#: and percentage column, per-pass results files.
LATER = {
    "7.2": ("1.1.0", False, True, "1.3.0", False, "3.4.0", True, False, False, "tables", "Pct of Peak", False),
    "7.9": ("1.1.0", False, True, "1.3.0", False, "3.4.0", True, False, False, "tables", "Pct of Peak", False),  # U
    "7.10": ("1.1.0", False, True, "1.3.0", False, "3.4.0", True, False, False, "tables", "Pct of Peak", False),  # U
    "7.11": ("1.1.0", False, True, "1.4.0", False, "3.4.0", True, False, False, "tables", "Pct of Peak", False),
    "7.12": ("1.1.0", False, True, "1.5.0", False, "3.5.0", True, True, False, "tables", "Pct of Peak", False),
    # SDK 1.3.0 "for ROCm release 7.13": "multiple --pmc flags", ".txt input files ... deprecated" (Removed);
    # rocprof-sys 1.6.0 "--help=all"; rocprof-compute 3.6.0 "pmc_perf_*.csv or results_*.csv" a replay
    "7.13": ("1.3.0", True, False, "1.6.0", True, "3.6.0", True, True, False, "tables", "Pct of Peak", True),
    # rocprof-compute 3.7.0: "--path and --subpath ... removed from profile mode"; csv "one CSV per analysis view"
    "7.14": ("1.3.2", True, False, "1.7.0", True, "3.7.0", False, True, False, "views", "Pct of Peak", True),
    # 3.8.0: "--overwrite"; "Renamed the Pct of Peak / PoP analysis column to Percent of Peak"
    # rocprof-sys "1.8.0 for ROCm 10.0", "1.9.0 for ROCm 10.1", "1.10.0 for ROCm 10.2 (unreleased)"; ROCm 10.1's
    # release notes: rocprofiler-sdk 1.4.1; rocprof-compute "3.10.0 for ROCm 10.2.0"
    "10.0": ("1.3.5", True, False, "1.8.0", True, "3.8.0", False, True, True, "views", "Percent of Peak", True),
    "10.1": ("1.4.1", True, False, "1.9.0", True, "3.9.0", False, True, True, "views", "Percent of Peak", True),
    "10.2": ("1.4.1", True, False, "1.10.0", True, "3.10.0", False, True, True, "views", "Percent of Peak", True),
}


def test_10_2_renames_the_dispatch_filter_and_numbers_from_1():
    """rocprof-compute 3.10.0: --kernel-iteration-range replaces profile's --dispatch, -d is --output-directory,
    dispatch IDs start at 1, analyze's --kernel-verbose is gone; rocprof-sys 1.7+ has --output-format,
    1.9+ writes rocpd.db by default."""
    old, new = rr.ROCPROF_COMPUTE["10.1"], rr.ROCPROF_COMPUTE["10.2"]
    assert (old.options["--dispatch"], old.dispatch_base, old.options["--output-directory"]) == ("-d", 0, None)
    assert "--dispatch" not in new.options and new.options["--output-directory"] == "-d" and new.dispatch_base == 1
    assert "--kernel-iteration-range" in new.options and "--kernel-verbose" not in new.analyze_options
    assert "--join-type" not in old.options and "--format-rocprof-output" not in old.options  # 3.9.0 removed both
    assert [k for k in rr.RELEASES if "--output-format" in rr.ROCPROF_SYS[k].options][0] == "7.14"
    assert [k for k in rr.RELEASES if rr.ROCPROF_SYS[k].default_outputs == ("rocpd",)] == ["10.1", "10.2"]


def test_every_release_is_pinned():
    assert set(FACTS) | set(LATER) == set(rr.RELEASES)


@pytest.mark.parametrize("release", list(FACTS))
def test_the_table_says_what_the_sources_say(release):
    (formats, default, host_dir, version_flag, pmc, columns, preload,
     runner, category, executable, version, timestamps, no_roofline) = FACTS[release]
    v3, sys_, compute = rr.ROCPROFV3[release], rr.ROCPROF_SYS[release], rr.ROCPROF_COMPUTE[release]
    assert (v3.formats, v3.default_format, v3.host_dir, v3.version_flag) == (formats, default, host_dir, version_flag)
    assert (v3.has("--version"), v3.has("-f")) == (version_flag, version_flag)  # both came with 7.0
    assert (v3.pmc_option, v3.has("--pmc"), len(v3.kernel_trace_header), v3.marker_preload) == (pmc, pmc, columns, preload)
    assert (sys_.runner, sys_.kernel_category) == (runner, category)
    assert (compute.executable, compute.version, compute.timestamps_pass, compute.no_roofline) == (
        executable, version, timestamps, no_roofline)
    assert (v3.multipass_pmc, v3.txt_input, sys_.help_topics, compute.analyze_csv) == (
        False, True, False, "tables" if release == "7.1" else "save-dfs")


@pytest.mark.parametrize("release", list(LATER))
def test_later_releases_say_what_their_changelogs_say(release):
    (sdk, multipass, txt, sys_version, topics, compute_version, has_path, has_output_directory, has_overwrite,
     analyze_csv, pct, per_pass) = LATER[release]
    v3, sys_, compute = rr.ROCPROFV3[release], rr.ROCPROF_SYS[release], rr.ROCPROF_COMPUTE[release]
    assert (v3.sdk_version, v3.multipass_pmc, v3.txt_input, v3.default_format) == (sdk, multipass, txt, "rocpd")
    assert (sys_.version, sys_.help_topics, sys_.kernel_category) == (sys_version, topics, "rocm_kernel_dispatch")
    assert (compute.version, "--path" in compute.options, "--output-directory" in compute.options,
            "--overwrite" in compute.options) == (compute_version, has_path, has_output_directory, has_overwrite)
    assert (compute.analyze_csv, compute.pct_column, compute.results_per_pass) == (analyze_csv, pct, per_pass)
    assert compute.roof_only_bare == per_pass  # 3.6.0 both: results_*.csv a pass, --roof-only writes roofline.csv only
    assert "--save-dfs" not in compute.analyze_options and "--output-format" in compute.analyze_options  # 3.3+
    assert compute.refuses_non_empty == has_overwrite and ("--set" in compute.options)  # --set: 3.3+


def test_release_keys():
    assert rr.release_key("6.2.2-116") == "6.2.2" and rr.release_key("6.2.3") == "6.2.4"
    assert rr.release_key("6.2.1.60201-112") == "6.2.1"  # the X.Y.Z.P-<build> form of .info/version
    assert rr.release_key("6.3.1") == "6.3" and rr.release_key("7.1.0") == "7.1" and rr.release_key("7.2.4") == "7.2"
    assert rr.release_key("7.5.0") == "7.2"  # between two read releases: the older one's facts
    assert rr.release_key("7.10.1") == "7.10" and rr.release_key("7.9") == "7.9"  # 7.10 after 7.9, not before
    assert rr.release_key("10.1.0") == "10.1" and not rr.newer_than_known("10.1.2")
    assert rr.release_key("10.2.0") == "10.2" and not rr.newer_than_known("10.2.1")
    assert rr.release_key("11.0.0") == "10.2" and rr.newer_than_known("11.0.0")  # newest known layouts, said so
    assert rr.release_key("6.1.3") is None and rr.release_key("junk") is None
    assert set(rr.ROCPROFV3) == set(rr.ROCPROF_SYS) == set(rr.ROCPROF_COMPUTE) == set(rr.RELEASES)

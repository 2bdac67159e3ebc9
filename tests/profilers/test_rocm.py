"""What the AMD adapters share (tinylab/profilers/rocm.py): the release of a tool, from its tree (a
classic one, a TheRock package named by its folder, a pip install) or from what the tool says, and
which wins when they disagree; a tool newer than the table working from its help; the one-line
refusal when a tool lists nothing the run needs; the GPU architectures KFD lists."""

from __future__ import annotations

import os
import subprocess

import pytest
from support.paths import BIN
from support.rocm import rocm_tree

from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.profilers import base
from tinylab.profilers import rocm as rocm_module
from tinylab.profilers.registry import get_adapter
from tinylab.service.launch import check_run
from tinylab.service.machine import Machine

AMD = Machine(1, "amd", "AMD Instinct MI300X")


@pytest.fixture
def amd(monkeypatch):
    """An AMD GPU 'visible', no ROCm in the environment, stand-ins as their tree says."""
    monkeypatch.setattr(base, "gpu_vendors", lambda: {"amd"})
    for name in ("ROCM_PATH", "STANDIN_ROCM_RELEASE", "STANDIN_EXTRA_OPTIONS", "STANDIN_DROP_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def on_path(monkeypatch, folder) -> None:
    monkeypatch.setenv("PATH", str(folder) + os.pathsep + os.environ["PATH"])


def test_a_tool_outside_any_tree_says_its_release(amd, tmp_path):
    """No .info/version anywhere: 7.x rocprofv3 names its ROCm in --version; 6.x (no --version) runs from
    its help, its release guessed from the options its help lists, and says so; rocprof-sys names it in
    --version ("rocm: v7.1.x")."""
    guessed = "release unknown: options from its help (file layouts as ROCm {}'s: its --help lists {}, which ROCm {} brought)"
    for version, label in (("6.2.2", guessed.format("6.2.2", "--kernel-names", "6.2")),
                           ("6.3.1", guessed.format("6.3", "--pmc", "6.3")),
                           ("6.4.1", guessed.format("6.4", "--collection-period", "6.4")), ("7.1.0", "ROCm 7.1.0"),
                           ("10.1.0", "ROCm 10.1.0")):
        bare = tmp_path / version / "bin"  # a folder of its own: each tool's answers are kept by its path
        bare.mkdir(parents=True)
        for name in ("rocprofv3", "rocprof-sys-run", "rocprof-compute"):
            (bare / name).symlink_to(BIN / name)
        amd.setenv("STANDIN_ROCM_RELEASE", version)
        with amd.context() as m:
            on_path(m, bare)
            release = get_adapter("rocprofv3").release()
            assert release.label == label and release.install == "the tool itself"
            assert get_adapter("rocprof-sys").release().label == f"ROCm {version.rsplit('.', 1)[0]}"


def test_a_therock_package_without_version_file_is_named_by_its_folder(amd, tmp_path):
    on_path(amd, rocm_tree(tmp_path, "10.1", version_file=False))  # /opt/rocm/core-10.1, nothing in .info
    sys_release = get_adapter("rocprof-sys").release()
    assert sys_release.label == "ROCm 10.1" and sys_release.how == "TheRock package, its folder name core-10.1"
    v3 = get_adapter("rocprofv3").release()  # its --version is finer: 10.1.0, and the folder agrees
    assert v3.label == "ROCm 10.1.0" and v3.how == "TheRock package, rocprofv3 --version; its folder name core-10.1 agrees"


def test_a_pip_install_without_version_file_asks_rocm_sdk(amd, tmp_path):
    bin_dir = rocm_tree(tmp_path, "10.1-pip")
    (bin_dir.parent / "lib/python3.12/site-packages/_rocm_sdk_core/.info/version").unlink()
    amd.setenv("STANDIN_ROCM_RELEASE", "10.1.0")  # the stand-ins read that file too
    on_path(amd, bin_dir)
    release = get_adapter("rocprof-compute").release()
    assert release.label == "ROCm 10.1.0" and release.how == "pip install, rocm-sdk version"


def test_when_tree_and_tool_disagree_the_tool_wins(amd, tmp_path):
    """A 7.2.0 tree whose rocprofv3 says 7.13.0 (a tool from another install linked in)."""
    on_path(amd, rocm_tree(tmp_path, "7.2"))
    amd.setenv("STANDIN_ROCM_RELEASE", "7.13.0")
    release = get_adapter("rocprofv3").release()
    assert release.label == "ROCm 7.13.0" and release.key == "7.13"
    assert release.note == f"its ROCm tree says ROCm 7.2.0 ({tmp_path}/rocm-7.2.0/.info/version): tinylab follows the tool"


def test_a_release_newer_than_the_table_works_from_its_help(amd, tmp_path):
    """ROCm 11.0: options no table knows, and some the newest known release had taken away; every argv
    is its help's (the stand-ins accept it), and the label says the file layouts are assumed."""
    from support.adapters import CONFIG

    amd.setenv("STANDIN_EXTRA_OPTIONS", "--quantum-trace,--output-directory-template")
    amd.setenv("STANDIN_DROP_OPTIONS", "--truncate-kernels,-T,--marker-trace")
    on_path(amd, rocm_tree(tmp_path, "11.0.0"))
    for name in ("rocprofv3", "rocprof-sys", "rocprof-compute"):
        adapter = get_adapter(name)
        assert adapter.available().release == ("ROCm 11.0.0 (newer than any release read: options from its help, "
                                                "file layouts as 10.2)")
        assert adapter.help(*(("profile",) if name == "rocprof-compute" else ())).has("--quantum-trace")
        out = tmp_path / "out" / name
        out.mkdir(parents=True)
        argv = adapter.wrap_argv(out, CONFIG)
        assert not {"--truncate-kernels", "--marker-trace"} & set(argv)
        proc = subprocess.run(argv + ["/bin/true"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert adapter.collect(out).table is not None


@pytest.mark.parametrize("tool,dropped,message", [
    ("rocprofv3", "--output-directory,-d", "rocprofv3 1.4.1 (ROCm 10.1.0) lists neither --output-directory nor -d in "
                                           "`rocprofv3 --help`: tinylab needs it to write into the run's folder"),
    ("rocprof-compute", "--output-directory", "rocprof-compute 3.9.0 (ROCm 10.1.0) lists neither --output-directory nor "
                                              "--path in `rocprof-compute profile --help`: tinylab needs it to "
                                              "write its workload into the run's folder"),
    ("rocprof-sys", "--output-format,--trace,-T", "rocprof-sys 1.9.0 (ROCm 10.1.0) lists neither --trace nor -T in "
                                                  "`rocprof-sys-run --help=all`: tinylab needs it for its timeline "
                                                  "(--profile alone turns it off)"),
])
def test_a_tool_that_lists_nothing_the_run_needs_is_refused_before_launch(amd, tmp_path, tool, dropped, message):
    amd.setenv("STANDIN_DROP_OPTIONS", dropped)
    on_path(amd, rocm_tree(tmp_path, "10.1"))
    with pytest.raises(UserError) as err:
        check_run(RunConfig(profilers=[tool], device="cuda"), AMD)
    assert str(err.value) == message


def test_kfd_gpus_names_each_gpu_architecture(tmp_path, monkeypatch):
    """KFD's gfx_target_version as LLVM names it (90402 gfx942, 90010 gfx90a), CPU nodes left out, in node order."""
    for node, props in (("0", "simd_count 0\ngfx_target_version 0\n"), ("2", "simd_count 304\ngfx_target_version 90402\n"),
                        ("10", "simd_count 440\ngfx_target_version 90010\n")):
        (tmp_path / node).mkdir()
        (tmp_path / node / "properties").write_text(props)
    monkeypatch.setattr(rocm_module, "KFD_NODES", tmp_path)
    assert rocm_module.kfd_gpus() == ["gfx942", "gfx90a"]


def test_both_forms_of_the_version_file(tmp_path):
    """6.x writes X.Y.Z-<build> or X.Y.Z.P-<build>, 7.0+ X.Y.Z: only X.Y.Z is read."""
    for text, version in (("6.2.0-66\n", "6.2.0"), ("6.4.1.60401-83\n", "6.4.1"), ("7.14.0\n", "7.14.0")):
        root = tmp_path / text.strip()
        (root / ".info").mkdir(parents=True)
        (root / ".info" / "version").write_text(text)
        release = rocm_module.release_in([root])
        assert (release.version, release.install) == (version, "ROCm tree")

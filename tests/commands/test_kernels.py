"""`tinylab kernels` as a user meets it: a table at 80 columns, JSON, one stage, a sweep, and
one-line errors that name the choices. The session's cache (conftest.shipped) is handed to
the CLI through XDG_CACHE_HOME, so these runs read the session's compiles back."""

import json
import os
import subprocess
import sys

import pytest

from tinylab.anatomy import TARGETS


@pytest.fixture(scope="module")
def cli(shipped, cache_home):
    """Run the CLI against the session cache (warm after `shipped`); returns the result."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}

    def run(*args, timeout=300):
        return subprocess.run([sys.executable, "-m", "tinylab", "kernels", *args],
                              capture_output=True, text=True, timeout=timeout, env=env)

    return run


def test_table_for_every_kernel_and_target_at_80_columns(cli, shipped):
    res = cli("--precision", "bf16")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # progress goes to stderr only when it is a terminal
    lines = res.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    anatomy, _ = shipped["default-bf16"]
    for v in anatomy.variants:
        assert any(line.startswith(v.name + " ") for line in lines), v.name
    rows = [line for line in lines if line[19:25].strip() in TARGETS]  # the target column
    assert len(rows) == len(anatomy.variants) * len(TARGETS)


def test_json_holds_every_report(cli, shipped):
    res = cli("--precision", "bf16", "--target", "gfx942,sm_90", "--json")
    doc = json.loads(res.stdout)
    anatomy, _ = shipped["default-bf16"]
    assert [k["name"] for k in doc["kernels"]] == [v.name for v in anatomy.variants]
    for kernel in doc["kernels"]:
        assert set(kernel["targets"]) == {"gfx942", "sm_90"}
        for target in kernel["targets"].values():
            assert target["report"]["occupancy"]["value"] > 0 and target["launch"]["params"]
    assert doc["config"]["precision"] == "bf16" and doc["triton"]


def test_stage_text_of_one_kernel(cli):
    res = cli("attn_fwd", "--precision", "bf16", "--target", "gfx942", "--stage", "amdgcn")
    assert res.returncode == 0, res.stderr
    assert ".amdgcn_target" in res.stdout and "v_mfma" in res.stdout
    sass = cli("attn_fwd", "--precision", "bf16", "--target", "sm_90", "--stage", "sass")
    assert "HGMMA" in sass.stdout or "HMMA" in sass.stdout


def test_one_kernels_details(cli):
    res = cli("attn_bwd_dq", "--precision", "bf16", "--target", "sm_90")
    assert res.returncode == 0
    assert "attn_bwd_dq.1" in res.stdout and "attn_bwd_dq.2" in res.stdout
    assert "UNROPE=False" in res.stdout and "BLOCK_M=" in res.stdout and "grid" in res.stdout


def test_sweep_tabulates_each_value_and_marks_the_shipped_one(cli, shipped):
    res = cli("attn_fwd", "--precision", "bf16", "--target", "gfx942,sm_90", "--sweep", "BLOCK_N=32,64")
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines() if line.split()[:1] and line.split()[0].rstrip("*") in ("32", "64")]
    assert len(rows) == 4 and sum("*" in r.split()[0] for r in rows) == 2  # one shipped value a target
    doc = json.loads(cli("attn_fwd", "--precision", "bf16", "--target", "gfx942,sm_90", "--sweep", "BLOCK_N=32,64", "--json").stdout)
    points = {(p["value"], p["target"]): p for p in doc["points"]}
    # Hopper's 3 pipeline stages keep 3 K and 3 V tiles of BLOCK_N rows in shared memory
    assert points[64, "sm_90"]["report"]["lds"] > points[32, "sm_90"]["report"]["lds"]
    shipped_fwd = next(v for v in shipped["default-bf16"][0].variants if v.name == "attn_fwd")
    for (value, target), point in points.items():
        if point["shipped"]:  # the sweep's own compile of the shipped value is the table's
            assert point["report"] == shipped_fwd.reports[target].to_json()


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--target", "gfx1100"], "unknown target 'gfx1100': choose from gfx90a, gfx942, gfx950, sm_80, sm_90"),
        (["nope", "--target", "sm_90"], "unknown kernel 'nope': choose one of adamw,"),
        (["rmsnorm_bwd", "--target", "sm_90", "--stage", "ptx"], "kernel 'rmsnorm_bwd' is launched in"),
        (["attn_fwd", "--target", "gfx942", "--stage", "ptx"], "gfx942 has no stage 'ptx': choose one of ttir, ttgir, llir, amdgcn"),
        (["attn_fwd", "--stage", "ttir"], "--stage shows one target's code: add one --target"),
        (["--stage", "ttir", "--target", "sm_90"], "--stage needs a kernel NAME"),
        (["attn_fwd", "--target", "sm_90", "--sweep", "BLOCK_Q=16"], "cannot sweep 'BLOCK_Q' of attn_fwd on sm_90: choose one of "),
        (["attn_fwd", "--target", "sm_90", "--sweep", "waves_per_eu=1"], "cannot sweep 'waves_per_eu' of attn_fwd on sm_90"),
        (["attn_fwd", "--sweep", "BLOCK_N"], "expected PARAM=V1,V2,..."),
        (["attn_fwd", "--sweep", "num_warps=4,3", "--target", "sm_90"], "num_warps=3: num_warps must be a power of two"),
        (["--precision", "fp64"], "unknown precision 'fp64'"),
        (["--hidden-dim", "96", "--num-heads", "1", "--num-kv-heads", "1"], "head dimension of 16, 32, 64 or 128"),
    ],
)
def test_bad_input_is_one_line(cli, args, fragment):
    res = cli(*args)
    assert res.returncode == 2, res.stdout
    assert fragment in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    if "--sweep" in args and "=" in args[-1]:  # the choices: NVIDIA's options, the block sizes
        assert all(p in res.stderr for p in ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages"))
        assert "waves_per_eu, " not in res.stderr


def test_the_widest_registers_keep_the_columns():
    """An AMD kernel at the register limit with spills (a sweep's 128-key attention tile) stays
    within 80 columns, its cells under their headers."""
    from tinylab.anatomy import KernelReport, Occupancy
    from tinylab.commands.kernels import _header, _row

    report = KernelReport("gfx942", 4, {"VGPR": 255, "AGPR": 28, "SGPR": 106}, 16384, 1040, {"VGPR": 12, "SGPR": 18},
                          Occupancy(1, "waves/SIMD", "VGPRs+SGPRs", {}, 1))
    header, row = _header("BLOCK_N"), _row("128", "gfx942", report)
    assert report.cells() == ["v255+a28 s106", "16K", "1040", "12v 18s", "1/8", "VGPRs+SGPRs"]
    assert len(row) <= 80 and row.split()[2:] == ["v255+a28", "s106", "16K", "1040", "12v", "18s", "1/8", "VGPRs+SGPRs"]
    for column in ("LDS", "scratch", "occ"):  # right-aligned under their headers
        end = header.index(column) + len(column)
        assert row[end - 1] != " " and row[end] == " ", column


def test_progress_shows_on_a_terminal(monkeypatch):
    import io

    from tinylab.anatomy import Progress
    from tinylab.commands import kernels

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    show = kernels._progress()
    show(Progress("compiling", 3, 10, "attn_fwd @ gfx942"))
    assert "compiling 3/10  attn_fwd @ gfx942" in err.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert kernels._progress() is None


def test_help_stays_light():
    code = ("import sys\nfrom tinylab.cli import main\ntry:\n    main(['kernels', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', [m for m in ('torch', 'triton', 'textual') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert "LOADED []" in out and "--sweep" in out


def test_the_readme_states_the_compiled_numbers(shipped):
    """The README's table of the attention kernels (bf16, the workshop's model) is what compiles."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1:4] for line in readme.splitlines() if line.strip().startswith("| `attn")]
    anatomy, _ = shipped["default-bf16"]
    assert len(rows) == 3
    for name, amd, nvidia in rows:
        variant = anatomy.variant(name.strip().strip("`"))
        for target, cell in (("gfx942", amd), ("sm_90", nvidia)):
            regs, lds, _, spills, occ, _ = variant.reports[target].cells()
            assert cell.strip() == f"{regs}, {lds}, {occ}" and spills == "-", (name, target)

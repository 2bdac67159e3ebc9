"""The Kernels view at 80x24: the section key, the table for a target, the target picker, the IR
pane, the sweep chart, the precision, progress while compiling, and Hotspots' way in. The Lab's
kernel calls are answered by fakes (conftest.FakeKernels): compiling for real takes minutes, and
tests/commands/test_kernels.py and tests/service cover those calls."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from support.anatomy import ANATOMY
from textual.widgets import DataTable, Log

from tinylab.tui.screens.kernels import KernelsScreen

from ..conftest import SIZE, make_app, screen_name, text_of, wait_for
from ..fakes import make_run, write_kernels
from ..test_snapshots import rows

pytestmark = pytest.mark.asyncio


async def open_kernels(pilot) -> KernelsScreen:
    await pilot.press("K")
    await wait_for(pilot, lambda: screen_name(pilot) == "KernelsScreen", what="the Kernels screen")
    screen = pilot.app.screen
    await wait_for(pilot, lambda: screen.query_one("#kern-table", DataTable).row_count == len(ANATOMY), what="rows")
    return screen


def row(screen: KernelsScreen, name: str) -> list[str]:
    table = screen.query_one("#kern-table", DataTable)
    return [str(cell) for cell in table.get_row(name)]


async def test_the_section_key_shows_every_kernel_on_mi300x_first(store: Path, fake_kernels):
    async with make_app(store).run_test(size=SIZE) as pilot:
        screen = await open_kernels(pilot)
        assert screen.target == "gfx942" and fake_kernels.studies == ["fp32"]
        assert row(screen, "attn_fwd") == ["attn_fwd", "v126 s51", "8K", "-", "4/8", "VGPRs"]
        assert row(screen, "swiglu_fwd")[1:] == ["v31 s26", "0", "-", "8/8", "none"]
        head = text_of(pilot, "#kern-head")
        assert "hidden 512" in head and "fp32" in head and "gfx942 = MI300X" in head and "compiling" not in head
        assert "▸gfx942" in text_of(pilot, "#kern-targets")  # the chosen target reads without colour
        detail = text_of(pilot, "#kern-detail")
        assert "rmsnorm_fwd.1 on gfx942" in detail and "BLOCK_N=512" in detail and "launched by v3" in detail


async def test_the_target_picker_spills_and_failures(store: Path, fake_kernels):
    async with make_app(store).run_test(size=SIZE) as pilot:
        screen = await open_kernels(pilot)
        await pilot.press("5")
        assert screen.target == "sm_90" and "▸sm_90" in text_of(pilot, "#kern-targets")
        assert row(screen, "attn_bwd_dkdv.2")[1:] == ["r128", "36.2K", "16B", "16/64", "regs"]
        assert row(screen, "attn_fwd")[-1] == "regs"
        await pilot.press("g")  # wraps around to the first target
        assert screen.target == "gfx90a"
        await pilot.press("g", "g")
        assert screen.target == "gfx950" and row(screen, "swiglu_fwd")[1] == "failed"
        screen.query_one("#kern-table", DataTable).move_cursor(row=4)
        await pilot.pause()
        assert "failed to compile: LLVM ERROR: cannot select" in text_of(pilot, "#kern-detail")
        await pilot.press("s")
        await pilot.pause()
        assert any("nothing to sweep" in str(n.message) for n in pilot.app._notifications)


async def test_the_ir_pane_shows_one_stage_and_follows_the_target(store: Path, fake_kernels):
    async with make_app(store).run_test(size=SIZE) as pilot:
        screen = await open_kernels(pilot)
        screen.query_one("#kern-table", DataTable).move_cursor(row=2)  # attn_fwd
        await pilot.press("i", "i", "i")  # ttir -> ttgir -> llir -> amdgcn
        assert screen.query_one("#kern-panes").current.id == "kern-ir-pane"
        log = screen.query_one("#kern-ir", Log)
        await wait_for(pilot, lambda: log.line_count and "amdgcn of attn_fwd for gfx942" in log.lines[0], what="amdgcn")
        assert "[amdgcn]" in text_of(pilot, "#kern-ir-title")
        await pilot.press("5")  # NVIDIA has no amdgcn: the same level of its code
        await wait_for(pilot, lambda: log.line_count and "ptx of attn_fwd for sm_90" in log.lines[0], what="ptx")
        await pilot.press("i", "i")  # ptx -> sass -> ttir
        await wait_for(pilot, lambda: log.line_count and "ttir of attn_fwd for sm_90" in log.lines[0], what="ttir")
        assert ("attn_fwd", "sm_90", "sass") in fake_kernels.stages


async def test_the_sweep_charts_one_parameter_at_a_time(store: Path, fake_kernels):
    async with make_app(store).run_test(size=SIZE) as pilot:
        screen = await open_kernels(pilot)
        screen.query_one("#kern-table", DataTable).move_cursor(row=2)  # attn_fwd: BLOCK_M, BLOCK_N, then options
        await pilot.pause()
        await pilot.press("s")
        assert screen.query_one("#kern-panes").current.id == "kern-sweep-pane"
        await wait_for(pilot, lambda: "BLOCK_M" in text_of(pilot, "#kern-points") and "64*" in text_of(pilot, "#kern-points"),
                       what="the sweep's points")
        points = text_of(pilot, "#kern-points")
        assert "32" in points and "128" in points and "v86" in points and "4v" in points  # 126 - 40, a spill at 128
        await pilot.press("s")
        await wait_for(pilot, lambda: "BLOCK_N" in text_of(pilot, "#kern-points"), what="the next parameter")
        assert fake_kernels.sweeps == [("attn_fwd", "gfx942", "BLOCK_M"), ("attn_fwd", "gfx942", "BLOCK_N")]
        await pilot.press("g")  # another target: the sweep starts over
        assert screen.sweep_key is None and text_of(pilot, "#kern-points") == ""


async def test_progress_shows_while_compiling_and_a_new_precision_starts_over(store: Path, fake_kernels):
    fake_kernels.gate = threading.Event()
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("K")
        await wait_for(pilot, lambda: "compiling 3/132 · attn_fwd @ gfx942" in text_of(pilot, "#kern-head"),
                       what="the progress line")
        await pilot.press("s")  # nothing compiled yet: says so
        await pilot.pause()
        assert any("still compiling" in str(n.message) for n in pilot.app._notifications)
        await pilot.press("p")  # bf16: the fp32 study's answer is stale
        fake_kernels.gate.set()
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.anatomy is not None, what="the bf16 table")
        assert fake_kernels.studies == ["fp32", "bf16"] and screen.anatomy.config.precision == "bf16"
        assert "bf16" in text_of(pilot, "#kern-head")


async def test_a_config_that_cannot_compile_says_why(store: Path, fake_kernels):
    fake_kernels.error = "the Triton attention supports a head dimension of 16, 32, 64 or 128"
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("K")
        await wait_for(pilot, lambda: "cannot compile: the Triton attention" in text_of(pilot, "#kern-head"),
                       what="the error")
        await pilot.press("i")
        await pilot.pause()
        assert any("Nothing compiled" in str(n.message) for n in pilot.app._notifications)


async def test_hotspots_k_opens_the_kernel_under_the_cursor_at_the_runs_model(store: Path, fake_kernels):
    run = make_run(store, "20261126-024000-e5e5", version="v3", hidden_dim=128, num_heads=4, num_kv_heads=2)
    write_kernels(run / "profiles/pytorch/kernels.csv", [("_attn_fwd_kernel", 48, 9_800_000, "triton"),
                                                          ("triton_poi_fused_mul_silu_0", 24, 1_000_000, "triton")])
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots("20261126-024000-e5e5")
        await wait_for(pilot, lambda: rows(pilot, "#kernels") == 2, what="kernel rows")
        await pilot.press("k")
        await wait_for(pilot, lambda: screen_name(pilot) == "KernelsScreen", what="the Kernels screen")
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.anatomy is not None, what="the table")
        assert screen.selected == "attn_fwd" and screen.config.hidden_dim == 128
        assert "20261126-024000-e5e5's model: hidden 128" in text_of(pilot, "#kern-head")
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="back to Hotspots")
        studies = len(fake_kernels.studies)
        await pilot.press("down", "k")  # inductor's kernel is none of v3's and v4's: said at once, nothing compiled
        await wait_for(pilot, lambda: any("is not one of v3's and v4's Triton kernels" in str(n.message)
                                          for n in pilot.app._notifications), what="the notice")
        await pilot.pause(0.2)
        assert screen_name(pilot) == "HotspotsScreen" and len(fake_kernels.studies) == studies


async def test_every_action_has_a_key_and_a_palette_entry(store: Path, fake_kernels):
    async with make_app(store).run_test(size=SIZE) as pilot:
        lab_titles = [c.title for c in pilot.app.get_system_commands(pilot.app.screen)]
        assert "Kernels" in lab_titles
        screen = await open_kernels(pilot)
        titles = [c.title for c in pilot.app.get_system_commands(screen)]
        for title in ("Back", "Target", "Target sm_90", "Precision", "IR stage", "Sweep", "Next panel"):
            assert title in titles, title
        await pilot.press("escape")  # the section's root goes home
        await wait_for(pilot, lambda: screen_name(pilot) == "LabScreen", what="the Lab")


async def test_an_exercise_step_over_compiled_kernels_runs_nothing(store: Path, monkeypatch):
    from support.anatomy import fake_compiles

    from tinylab import exercises as ex

    calls = fake_compiles(monkeypatch)
    async with make_app(store, exercises_root=ex.default_root()).run_test(size=SIZE) as pilot:
        pilot.app.open_exercise("v4-fusion")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "scenario", None) is not None, what="the scenario")
        screen = pilot.app.screen
        await pilot.press(*["n"] * (len(screen.scenario.steps) - 1))
        assert all(c.on == "anatomy" for c in screen.step.checks)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "compiled on this machine" in text_of(pilot, "#step-run"), what="compiled")
        assert screen.step_runs[screen.step.number] == {} and calls and calls[0][0] == "analyze"
        assert {r.name for r in screen.results} == {c.name for c in screen.step.checks}
        assert "checks failed" in text_of(pilot, "#checks")  # the fake anatomy has no rmsnorm_bwd

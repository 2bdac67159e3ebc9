"""Pilot tests of the lab's flows, at 80x24: launch, watch, cancel, hotspots, compare, exercises, errors."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from tinylab.config import PROFILERS
from tinylab.runs.launcher import group_alive
from tinylab.runs.store import RunStore, mark_run

from .conftest import make_app, wait_for
from .fakes import make_run

pytestmark = pytest.mark.asyncio

SIZE = (80, 24)
V1, V2, V3 = "20261126-020000-a1a1", "20261126-021000-b2b2", "20261126-022000-c3c3"
TINY_FORM = {"batch_size": "2", "seq_len": "16", "hidden_dim": "64", "num_layers": "2", "num_heads": "4",
             "num_kv_heads": "2", "num_steps": "6", "warmup_steps": "1"}


def screen_name(pilot) -> str:
    return type(pilot.app.screen).__name__


def fill_form(pilot, values: dict[str, str], device: str = "cpu") -> None:
    screen = pilot.app.screen
    for name, value in values.items():
        screen.query_one(f"#num-{name}").value = value
    screen.query_one("#device").value = device


def text_of(pilot, selector: str) -> str:
    return str(pilot.app.screen.query_one(selector).render())


async def test_launch_tiny_cpu_run_from_lab_and_watch_it_finish(tmp_path: Path):
    app = make_app(tmp_path / "runs", clock=None)
    async with app.run_test(size=SIZE) as pilot:
        fill_form(pilot, TINY_FORM)
        await pilot.pause()
        assert "ready: v1" in text_of(pilot, "#check")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen", what="the Run screen")
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.status != "running", timeout=150, what="the run to end")
        assert screen.status == "finished", text_of(pilot, "#outcome")
        outcome = text_of(pilot, "#outcome")
        assert "finished" in outcome and "samples/s" in outcome
        assert len(screen.steps) == 6
        assert "step 6/6" in text_of(pilot, "#progress-text")
        log = "\n".join(str(line) for line in screen.query_one("#log").lines)
        assert "summary (medians after warm-up)" in log


async def test_cancel_asks_then_stops_the_run(tmp_path: Path):
    app = make_app(tmp_path / "runs", clock=None)
    async with app.run_test(size=SIZE) as pilot:
        fill_form(pilot, {**TINY_FORM, "num_steps": "100000"})
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen", what="the Run screen")
        screen = pilot.app.screen
        await pilot.press("c")
        await wait_for(pilot, lambda: screen_name(pilot) == "ConfirmScreen", what="the confirmation")
        await pilot.press("n")
        await pilot.pause(0.3)
        assert screen.status == "running"
        await pilot.press("c")
        await wait_for(pilot, lambda: screen_name(pilot) == "ConfirmScreen", what="the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.status == "cancelled", timeout=30, what="cancelled status")
        assert "cancelled" in text_of(pilot, "#outcome")
    run = RunStore(tmp_path / "runs").list()[0]
    assert run.status() == "cancelled"
    assert not group_alive(run.process["pgid"])


async def test_hotspots_sort_filter_category_and_artifacts(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.query("#runs") and
                       pilot.app.screen.query_one("#runs").row_count == 3, what="runs")
        await pilot.press("down", "down")  # the oldest: v1
        await pilot.press("k")
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        screen = pilot.app.screen
        table = screen.query_one("#kernels")
        await wait_for(pilot, lambda: table.row_count == 10, what="kernel rows")
        assert "ampere_sgemm_128x64_tn" in text_of(pilot, "#kernel-name")
        await pilot.press("down")
        assert "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_16x3_nt_align4>(Params)" in text_of(
            pilot, "#kernel-name")
        await pilot.press("s")  # total -> share
        await pilot.press("s")  # share -> calls
        await wait_for(pilot, lambda: screen.sort_key == "calls" and screen.shown[0]["calls"] == 960,
                       what="sorted by calls")
        await pilot.press("S")
        await wait_for(pilot, lambda: screen.shown[0]["calls"] == 24, what="reverse sort")
        await pilot.press("slash")
        await pilot.press(*"gemm")
        await wait_for(pilot, lambda: table.row_count == 2, what="name filter")
        await pilot.press("enter")
        for _ in screen.summary["categories"]:
            await pilot.press("c")
            await pilot.pause(0.05)
            if screen.category == "attention":
                break
        pilot.app.screen.query_one("#hot-filter").value = ""
        await wait_for(pilot, lambda: table.row_count == 1 and screen.shown[0]["category"] == "attention",
                       what="category filter")
        await pilot.press("t", "t")
        assert screen.query_one("#hot-panes").current.id == "artifacts-pane"
        artifacts = text_of(pilot, "#artifacts")
        assert "trace.json.gz" in artifacts and "ui.perfetto.dev" in artifacts


async def test_hotspots_of_a_run_of_two_ranks_shows_one_rank_at_a_time(store: Path):
    """Rank 0's table with a note, never the ranks merged; R shows rank 1's (the straggler's: 1.3x the
    time), then rank 0's again; a one-process run has no R."""
    make_run(store, "20261126-024000-e5e5", ranks=2)
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots("20261126-024000-e5e5")
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.query("#kernels") and screen.query_one("#kernels").row_count == 11,
                       what="rank 0's rows")
        head = text_of(pilot, "#hot-head")
        assert "rank 0 of 2 (R: next)" in head and "communication 8%" in head, head
        assert "kernel time: rank 1 +30% over rank 0" in head
        await wait_for(pilot, lambda: "rank 0 of 2" in text_of(pilot, "#hot-timeline"), what="rank 0's timeline")
        total = screen.summary["total_ns"]
        assert screen.shown[0]["total_ns"] == 41_200_000 and total == 99_650_000  # rank 0's own, not a sum
        assert any(cmd.title == "Next rank" for cmd in pilot.app.get_system_commands(screen))
        await pilot.press("R")
        await wait_for(pilot, lambda: screen.summary["rank"] == 1, what="rank 1")
        await wait_for(pilot, lambda: screen.shown[0]["total_ns"] == pytest.approx(1.3 * 41_200_000), what="rows")
        assert "rank 1 of 2" in text_of(pilot, "#hot-head")
        assert "rank 1 of 2" in text_of(pilot, "#hot-timeline")  # the step anatomy follows the rank
        await pilot.press("R")
        await wait_for(pilot, lambda: screen.summary["rank"] == 0, what="rank 0 again")
        await pilot.press("escape")
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen" and pilot.app.screen.summary
                       and pilot.app.screen.tables is not None, what="a one-process run")
        assert "rank" not in text_of(pilot, "#hot-head")
        assert not any(cmd.title == "Next rank" for cmd in pilot.app.get_system_commands(pilot.app.screen))


async def test_hotspots_roofline_panel(store: Path):
    """Without ceilings the panel says how to get them; with ceilings of the run's card it draws."""
    import json

    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        await wait_for(pilot, lambda: pilot.app.screen.query("#roofline"), what="roofline pane")
        await wait_for(pilot, lambda: "No ceilings measured" in text_of(pilot, "#roofline"), what="hint")
        assert f"tinylab roofline {V1}" in text_of(pilot, "#roofline")
    ceilings = {"copy_gbps": 3000.0, "gemm_tflops": {"fp32": {"large": 50.0}, "bf16": {"large": 700.0}}}
    (store / "ceilings-NVIDIA_H100_80GB_HBM3.json").write_text(json.dumps(ceilings))
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        await wait_for(pilot, lambda: pilot.app.screen.query("#roofline"), what="roofline pane")
        await wait_for(pilot, lambda: "ridge at" in text_of(pilot, "#roofline"), what="roofline")
        assert "training step" in text_of(pilot, "#roofline")
        await pilot.press("t", "t", "t")
        assert pilot.app.screen.query_one("#hot-panes").current.id == "roofline-pane"


async def test_compare_two_marked_runs(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.query("#runs") and
                       pilot.app.screen.query_one("#runs").row_count == 3, what="runs")
        await pilot.press("down", "down", "m", "up", "m", "v")
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen", what="compare")
        metrics = pilot.app.screen.query_one("#metrics")
        await wait_for(pilot, lambda: metrics.row_count > 0, what="metrics")
        first = [str(c) for c in metrics.get_row_at(0)]
        assert first[0] == "samples/s" and first[3] == "1.56x" and "B better" in first[4]
        kernels = pilot.app.screen.query_one("#kernel-diff")
        assert kernels.row_count > 0
        await pilot.press("s")
        await wait_for(pilot, lambda: [str(c) for c in metrics.get_row_at(0)][3] == "0.64x", what="swap")


async def test_compare_across_world_sizes_shows_the_scaling(store: Path):
    """1 rank vs 2: each run's ranks, samples/s in all and per rank, collectives, and the efficiency;
    no scaling block for runs of one world size."""
    make_run(store, "20261126-024000-e5e5", ranks=2, step_ms=44.0)
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_compare(V1, "20261126-024000-e5e5")
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen" and pilot.app.screen.query("#metrics")
                       and pilot.app.screen.query_one("#metrics").row_count > 0, what="metrics")
        scaling = pilot.app.screen.query_one("#cmp-scaling")
        assert scaling.has_class("-shown") and scaling.display
        text = " ".join(str(scaling.render()).split())
        assert "A 1 47.6 47.6 - -" in text and "B 2 90.9 45.5 9.24 64%" in text, text
        assert "scaling efficiency 95% (B's samples/s per rank / A's); B is 1.91x as fast as A, ideally 2.00x" in text
        assert "NOT" not in text_of(pilot, "#cmp-notes")
        await pilot.press("escape")
        pilot.app.open_compare(V1, V2)
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen" and pilot.app.screen.query("#metrics")
                       and pilot.app.screen.query_one("#metrics").row_count > 0, what="metrics")
        assert not pilot.app.screen.query_one("#cmp-scaling").display  # runs of one world size


async def test_the_ab_chart_draws_compared_summary_fields():
    """The chart picks its bars by key from compare's metrics: a renamed field would vanish silently."""
    from tinylab.analysis.compare import METRICS
    from tinylab.tui.screens.compare import CHART_KEYS

    assert set(CHART_KEYS) <= {m.key for m in METRICS} and len(set(CHART_KEYS)) == len(CHART_KEYS)


async def test_step_through_an_exercise_with_live_checks(store: Path, progress_file: Path):
    """The step's run is launched through the backend; here it "launches" a finished run (the Lab
    test covers a real launch), so the live checks can be seen to pass."""
    app = make_app(store)
    launched = []

    def attempt(number: int) -> dict:
        return json.loads(progress_file.read_text())["scenarios"]["fusion-basics"]["steps"].get(str(number), {})

    def recorded(number: int) -> tuple:
        got = attempt(number)
        return [c["status"] for c in got["checks"].values()], got["run_ids"]

    def launch(cfg):
        launched.append(cfg)
        return app.backend.run({"v1": V1, "v2": V2}[cfg.version])

    app.backend.launch = launch
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await wait_for(pilot, lambda: pilot.app.screen.query("#scenarios") and
                       pilot.app.screen.query_one("#scenarios").option_count == 2, what="scenarios")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen_name(pilot) == "StepScreen" and pilot.app.screen.scenario,
                       what="the step view")
        screen = pilot.app.screen
        assert "step 2/2: Fused" in text_of(pilot, "#step-head")  # step 1 is done: it opens at step 2
        assert "GPU only: tiny CPU shapes" in text_of(pilot, "#checks")
        await pilot.press("p")
        assert "step 1/2: Baseline" in text_of(pilot, "#step-head")
        await pilot.press("i")
        assert "Press enter to launch." in text_of(pilot, "#hints")
        await pilot.press("a")
        assert "The backward pass" in text_of(pilot, "#questions")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "run" in screen.step_runs.get(1, {}), what="the step's run")
        assert launched[0].version == "v1" and launched[0].device == "cpu" and launched[0].hidden_dim == 64
        await wait_for(pilot, lambda: "all checks passed" in text_of(pilot, "#checks"), what="the checks to pass")
        assert "✓ every parameter tensor trains  = 20" in text_of(pilot, "#checks")
        await wait_for(pilot, lambda: "run_ids" in attempt(1), what="recorded progress")
        assert recorded(1) == (["pass", "pass"], [V1])
        await pilot.press("n", "enter")  # step 2 compares: its baseline runs first, then the step's run
        await wait_for(pilot, lambda: "run" in screen.step_runs.get(2, {}), what="step 2's runs")
        assert [c.version for c in launched[1:]] == ["v1", "v2"]
        assert screen.step_runs[2] == {"baseline": V1, "run": V2}
        await wait_for(pilot, lambda: "run_ids" in attempt(2), what="step 2's progress")
        assert recorded(2) == (["pass", "skip"], [V1, V2])


async def test_failed_run_shows_its_error(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        pilot.app.open_run(V3)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "failed", what="failed status")
        outcome = text_of(pilot, "#outcome")
        assert "FloatingPointError: loss became nan at step 3" in outcome
        assert pilot.app.screen.query_one("#run-panes").current.id == "log-pane"
        assert pilot.app.is_running


async def test_invalid_config_is_flagged_and_not_launched(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        fill_form(pilot, {**TINY_FORM, "num_heads": "5"})
        await pilot.pause()
        assert pilot.app.screen.query_one("#num-num_heads").has_class("-invalid")
        assert pilot.app.screen.query_one("#num-hidden_dim").has_class("-invalid")
        assert "--num-heads 5 must divide --hidden-dim 64" in text_of(pilot, "#check")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert screen_name(pilot) == "LabScreen"
        assert not (tmp_path / "runs").exists()
        assert pilot.app.focused.id in ("num-hidden_dim", "num-num_heads")


async def test_the_scale_row_runs_ranks_under_an_engine_and_refuses_what_it_cannot_train(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        fill_form(pilot, {**TINY_FORM, "nproc_per_node": "2"})
        await pilot.pause()
        assert "ddpx2" in text_of(pilot, "#check") and "ready" in text_of(pilot, "#check")  # ranks alone: ddp
        screen = pilot.app.screen
        screen.query_one("#engine").value = "fsdp"
        await pilot.pause()
        assert "fsdpx2" in text_of(pilot, "#check") and "FSDP2" in text_of(pilot, "#hint")
        screen.query_one("#versions").highlighted = 3  # v4
        await pilot.pause()
        assert "--parallel fsdp cannot train v4" in text_of(pilot, "#check")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert screen_name(pilot) == "LabScreen" and not (tmp_path / "runs").exists()


async def test_unsupported_toggle_and_missing_profiler_say_why(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        ncu = pilot.app.screen.query_one("#profiler-ncu")
        ncu.focus()
        await pilot.press("space")
        assert ncu.value is False
        assert "ncu not found on PATH" in text_of(pilot, "#hint")
        graph = pilot.app.screen.query_one("#toggle-qkv_fusion")
        graph.focus()
        await pilot.pause()
        assert "is a toggle of v2, not v1" in text_of(pilot, "#hint")


async def test_number_fields_keep_letters_and_esc_leaves_them(tmp_path: Path):
    """A letter typed into a number field must not jump to a section (x) or quit the lab (q)."""
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        field = pilot.app.screen.query_one("#num-batch_size")
        field.focus()
        await pilot.press("1")
        value = field.value
        assert value.endswith("1")
        for key in ("x", "q", "r"):
            await pilot.press(key)
            await pilot.pause()
            assert screen_name(pilot) == "LabScreen" and pilot.app.is_running and field.value == value
        assert "takes digits only" in text_of(pilot, "#hint")
        await pilot.press("escape", "r")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunsScreen", what="the Runs screen")


async def test_reopening_lists_live_runs_and_reattaches(store: Path):
    make_run(store, "20261126-023000-d4d4", version="v2", status="running", steps=40, alive_pid=os.getpid())
    async with make_app(store).run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.live_runs, what="the live-run scan")
        assert any("20261126-023000-d4d4" in str(n.message) for n in pilot.app._notifications)
        assert "20261126-023000-d4d4" in text_of(pilot, "#live")
        await pilot.press("w")
        await wait_for(pilot, lambda: screen_name(pilot) == "RunScreen", what="the Run screen")
        screen = pilot.app.screen
        await wait_for(pilot, lambda: len(screen.steps) == 20, what="the live steps")
        assert screen.status == "running" and "ETA" in text_of(pilot, "#progress-text")
        await pilot.press("escape")
        assert screen_name(pilot) == "LabScreen"


async def test_corrupt_run_folder_does_not_break_the_lab(store: Path):
    bad = store / "20261126-024000-e5e5"
    bad.mkdir()
    mark_run(bad)
    (bad / "config.json").write_text("{not json", encoding="utf-8")
    (bad / "events.jsonl").write_text('{"event": "start"}\n{broken\n', encoding="utf-8")
    async with make_app(store).run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.query("#runs") and
                       pilot.app.screen.query_one("#runs").row_count == 4, what="runs")
        await pilot.press("enter")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "running") != "running",
                       what="the corrupt run's status")
        assert pilot.app.screen.status == "lost"
        await pilot.press("k")
        await pilot.pause(0.5)
        assert pilot.app.is_running


async def test_palette_reaches_every_bound_action(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        titles = {c.title for c in pilot.app.get_system_commands(pilot.app.screen)}
        assert {"Launch", "Runs", "Exercises", "Doctor", "Help", "Quit"} <= titles
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        titles = {c.title for c in pilot.app.get_system_commands(pilot.app.screen)}
        assert {"Filter", "Category", "Sort", "Top N", "Back"} <= titles
        await pilot.press("colon")
        await wait_for(pilot, lambda: screen_name(pilot) == "CommandPalette", what="the palette")


async def test_every_screen_opens_at_200x60(store: Path):
    """The snapshots cover 80x24 and 120x40; this walks the sections on a big terminal."""
    async with make_app(store).run_test(size=(200, 60)) as pilot:
        for key, name in (("r", "RunsScreen"), ("x", "ExercisesScreen"), ("d", "DoctorScreen"),
                          ("question_mark", "HelpScreen"), ("escape", "DoctorScreen"), ("l", "LabScreen")):
            await pilot.press(key)
            await wait_for(pilot, lambda: screen_name(pilot) == name, what=name)
        assert pilot.app.screen.has_class("-wide")
        assert pilot.app.screen.query_one("#recent").display



async def test_v4_attention_toggle_follows_precision(tmp_path: Path):
    """v4's SDPA default depends on precision (SDPA in strict fp32); the form shows the real default."""
    from textual.widgets import OptionList, Select

    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.query("#versions"), what="lab")
        screen.query_one("#versions", OptionList).highlighted = 3
        screen._apply_version("v4", reset=True)
        await pilot.pause()
        sdpa = screen.query_one("#toggle-sdpa")
        assert sdpa.value is True
        screen.query_one("#precision", Select).value = "bf16"
        await wait_for(pilot, lambda: sdpa.value is False, what="bf16 default")
        assert screen.config().toggle("sdpa") is False


async def test_a_cancelled_run_says_so_without_the_interrupts_traceback():
    """A cancel reaches the trainer as an interrupt and leaves an error event; the run screen
    reports the cancel, not that event as if the run had crashed."""
    from tinylab.events import ErrorEvent
    from tinylab.runs.record import RunRecord
    from tinylab.tui.screens.run import outcome_text

    record = RunRecord("r", Path("r"), "cancelled", None, {}, None, None, None,
                       ErrorEvent("KeyboardInterrupt", "interrupted by SIGINT",
                                  "  File \"trainer.py\", line 1\nKeyboardInterrupt"), None, None, 3, None)
    assert outcome_text(record, "cancelled").plain == "■ cancelled after 3 steps"
    failed = outcome_text(dataclasses.replace(record, status="failed", error=ErrorEvent("ValueError", "bad", "boom")),
                          "failed").plain
    assert failed.startswith("✗ failed: ValueError: bad") and "boom" in failed


async def test_hotspots_timeline_panel_takes_its_turn_on_a_wide_screen(store: Path):
    """At 120 columns artifacts, roofline and timeline share the grid's last cell; t cycles them."""
    async with make_app(store).run_test(size=(120, 40)) as pilot:
        pilot.app.open_hotspots(V1)
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen", what="hotspots")
        await wait_for(pilot, lambda: pilot.app.screen.query("#hot-timeline"), what="timeline pane")
        await wait_for(pilot, lambda: "launch-bound" in text_of(pilot, "#hot-timeline"), what="timeline text")
        screen = pilot.app.screen
        assert screen.query_one("#artifacts-pane").display and not screen.query_one("#timeline-pane").display
        await pilot.press("t", "t")
        assert screen.query_one("#timeline-pane").display and not screen.query_one("#artifacts-pane").display
        assert "GPU |" in text_of(pilot, "#hot-timeline")


async def test_a_step_whose_tool_is_missing_reads_its_recorded_output(store: Path, monkeypatch):
    """rocm-tools on a machine without the AMD tools: the step view says what to do without them,
    running the step starts no run and its recorded checks pass over the shipped output."""
    from tinylab.exercises import default_root
    from tinylab.profilers import base

    monkeypatch.setattr(base, "gpu_vendors", lambda: set())
    app = make_app(store, exercises_root=default_root())
    app.backend.launch = lambda cfg: pytest.fail("no run may start without the step's tool")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_step(pilot, app, "rocm-tools")
        assert "recorded output:" in text_of(pilot, "#hints") and "on an NVIDIA GPU:" in text_of(pilot, "#hints")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "checks ran and passed (over the recorded output)" in text_of(pilot, "#checks"),
                       what="the recorded checks")
        assert "all checks passed" not in text_of(pilot, "#checks")  # the run checks were skipped: it says so
        assert "no run: its tool is not here" in text_of(pilot, "#step-run") and screen.step_runs[1] == {}


async def open_step(pilot, app, scenario_id: str):
    from tinylab.tui.screens.exercises import StepScreen

    app.push_screen(StepScreen(scenario_id))
    await wait_for(pilot, lambda: screen_name(pilot) == "StepScreen" and pilot.app.screen.scenario, what="the step view")
    return pilot.app.screen


async def test_a_run_in_its_counter_passes_shows_the_pass_not_a_finished_run(store: Path):
    """rocprof-compute in pass 3 of 4: pass 1's 50 steps are the record, yet the run is not done.
    At 80 columns the pass label stays (the step count goes), the bar counts passes (2 of 4 done:
    50%, not 100%) and the ETA is the passes still to come (4 s each, measured from pass 2)."""
    run_id = "20261126-023000-d4d4"
    make_run(store, run_id, steps=50, status="running", alive_pid=os.getpid(), profile=False, counter_pass=(3, 4))
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        pilot.app.open_run(run_id)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "counter_pass", None), what="the pass event")
        await pilot.pause(0.1)
        text = text_of(pilot, "#progress-text")
        assert text.startswith("counter pass 3 of 4 (rocprof-compute)") and "step 50/50" not in text
        bar = pilot.app.screen.query_one("#progress")
        assert (bar.total, bar.progress) == (4, 2)
        await pilot.resize_terminal(160, 24)
        await wait_for(pilot, lambda: "ETA" in text_of(pilot, "#progress-text"), what="the ETA at 160 columns")
        assert "ETA 0:04" in text_of(pilot, "#progress-text")


async def test_took_covers_every_counter_pass(store: Path):
    """A finished 4-pass run ended when its last pass did (the exit record), not at pass 1's summary."""
    run_id = "20261126-023000-d4d4"
    run_dir = make_run(store, run_id, steps=50, profile=False, counter_pass=(4, 4))
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    launched = json.loads((run_dir / "process.json").read_text())["launched_at"]
    summary, exit_ = (next(e["time"] for e in events if e["event"] == kind) for kind in ("summary", "exit"))
    assert exit_ - summary == 13  # passes 2-4 ran after pass 1's summary
    app = make_app(store)
    async with app.run_test(size=(160, 24)) as pilot:
        pilot.app.open_run(run_id)
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "finished", what="finished")
        assert f"took 0:{exit_ - launched:02.0f}" in text_of(pilot, "#progress-text")


async def test_a_newest_run_with_a_profiler_missing_here_does_not_break_the_lab(store: Path):
    """The form starts from the newest run: one profiled by rocprof-compute on an AMD node, opened
    where the tool is missing, is a ✗ on the form's check line, not a crash before the doctor answers."""
    make_run(store, "20261126-023000-d4d4", steps=50, profile=False, counter_pass=(4, 4))
    async with make_app(store).run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.prefilled, what="the form's prefill")
        await pilot.pause(0.1)
        assert pilot.app.is_running and screen_name(pilot) == "LabScreen"
        check = text_of(pilot, "#check")
        assert check.startswith("✓") or "'rocprof-compute' is not available here" in check


async def test_the_form_starts_from_the_newest_plain_run(tmp_path: Path):
    """After an exercise the form became v3, b2 s16, 2 steps, pytorch ticked (the exercise's run):
    it starts from the newest run the learner launched plainly, past exercise, profiled and fault runs."""
    runs = tmp_path / "runs"
    make_run(runs, "20261126-010000-a1a1", version="v2", gpu=False, profile=False, batch_size=4, seq_len=32, steps=50)
    make_run(runs, "20261126-020000-b2b2", version="v1", gpu=False, profile=True, batch_size=8)
    make_run(runs, "20261126-030000-c3c3", version="v1", gpu=False, profile=False, fault="missing-init", batch_size=6)
    make_run(runs, "20261126-040000-d4d4", version="v3", gpu=False, profile=True, steps=2,
             label="exercise v1-baseline step 1")
    make_run(runs, "20261126-050000-e5e5", version="v3", gpu=False, profile=False, steps=3,
             label="exercise v3-swiglu step 1 baseline")
    async with make_app(runs).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.prefilled, what="the form filled from history")
        assert screen.version == "v2"
        assert [screen.query_one(f"#num-{k}").value for k in ("batch_size", "seq_len", "num_steps")] == ["4", "32", "50"]
        assert not any(screen.query_one(f"#profiler-{name}").value for name in PROFILERS)


async def test_the_exercise_preview_lists_every_step_at_80x24(store: Path):
    """The shipped scenarios at 80x24: the preview under the list shows the summary and every step
    (Performance debugging's 6th step was cut off), and the list keeps the selection in view."""
    async with make_app(store, exercises_root=None).run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await wait_for(pilot, lambda: screen_name(pilot) == "ExercisesScreen" and pilot.app.screen.scenarios,
                       what="the scenarios")
        screen = pilot.app.screen
        options, about = screen.query_one("#scenarios"), screen.query_one("#scenario-about")
        assert len(screen.scenarios) >= 12 and max(len(s.steps) for s in screen.scenarios) == 6
        for index, scenario in enumerate(screen.scenarios):
            options.highlighted = index
            await pilot.pause(0.2)
            shown = about.render().wrap(about.content_region.width)
            assert len(shown) <= about.content_region.height, scenario.id
            assert str(shown[-1]).strip().endswith(scenario.steps[-1].title), scenario.id
            top = options.scroll_offset.y
            assert top <= index < top + options.content_region.height, scenario.id


async def test_recent_ages_move_on_while_the_lab_stays_open(store: Path, monkeypatch):
    """The Lab's "Recent runs" ages froze at the values they had when the lab opened."""
    from tinylab.tui.screens import lab
    from .fakes import NOW

    now = [NOW]
    monkeypatch.setattr(lab, "AGE_TICK_S", 0.2)
    async with make_app(store, clock=lambda: now[0]).run_test(size=(120, 40)) as pilot:
        table = pilot.app.screen.query_one("#recent")
        await wait_for(pilot, lambda: table.row_count == 3, what="the recent runs")
        ages = lambda: [str(table.get_cell(key, "age")) for key in table.records]  # noqa: E731
        before = ages()
        now[0] += 3 * 3600
        await wait_for(pilot, lambda: ages() != before, what="ages moving on")
        assert all(a.endswith("h") for a in ages()) and not any(a.endswith("h") for a in before)


# ------------------------------------------------------------------------------ a run's text is never markup
MARKUP_LABEL, BOLD_LABEL = "[/]", "[bold]x"
ODD_KERNEL = "[/]kern[bold]el<[i]>"
ODD_SHORT = "[/]kern[bold]el"  # what short names keep of it (templates fold to <…>)


def _cell_text(cell) -> str:
    """A DataTable cell as the table draws it (a str cell would be parsed as markup here)."""
    from textual.widgets._data_table import default_cell_formatter

    return default_cell_formatter(cell).plain


def _odd_store(root: Path) -> dict[str, str]:
    """Runs whose labels, error and kernel names look like markup (`tinylab run --label '[/]'` is accepted)."""
    from .fakes import KERNELS, write_kernels

    ids = {"closing": "20261126-030000-d1d1", "bold": "20261126-031000-d2d2", "failed": "20261126-032000-d3d3"}
    make_run(root, ids["closing"], label=MARKUP_LABEL)
    make_run(root, ids["bold"], version="v2", label=BOLD_LABEL, kernel_scale=0.5)
    make_run(root, ids["failed"], status="failed", profile=False, label="[/bold]")
    for run_id in (ids["closing"], ids["bold"]):
        write_kernels(root / run_id / "profiles/pytorch/kernels.csv", [(ODD_KERNEL, 500, 90_000_000, "gemm"), *KERNELS])
    events = root / ids["failed"] / "events.jsonl"
    events.write_text(events.read_text().replace("loss became nan at step 3", "[/bold] boom [red]"))
    return ids


async def test_labels_errors_and_kernel_names_that_look_like_markup_show_literally(tmp_path: Path, monkeypatch):
    """A label `[/]` raised a MarkupError when the Lab's recent-runs table drew it (one record could
    take the lab down); `[bold]x` lost its brackets."""
    monkeypatch.chdir(tmp_path)
    ids = _odd_store(Path("runs"))
    async with make_app(Path("runs")).run_test(size=(120, 40)) as pilot:
        recent = pilot.app.screen.query_one("#recent")
        await wait_for(pilot, lambda: recent.row_count == 3, what="the recent runs")
        configs = [_cell_text(recent.get_row_at(i)[-1]) for i in range(recent.row_count)]
        assert any(c.endswith(" [[/]]") for c in configs) and any(c.endswith(" [[bold]x]") for c in configs), configs
        assert any(c.endswith(" [[/bold]]") for c in configs), configs

        await pilot.press("r")
        await wait_for(pilot, lambda: pilot.app.screen.query("#runs") and
                       pilot.app.screen.query_one("#runs").row_count == 3, what="runs")
        await pilot.press("down")  # newest first: the failed run, then the `[bold]x` one
        await wait_for(pilot, lambda: "label: [bold]x" in text_of(pilot, "#run-detail"), what="the label")
        await pilot.press("up")
        await wait_for(pilot, lambda: "[/bold] boom [red]" in text_of(pilot, "#run-detail"), what="the error")
        await pilot.press("down", "m", "down", "m")
        assert text_of(pilot, "#marks") == f"A = {ids['bold']}   B = {ids['closing']}   v compares"
        await pilot.press("v")
        await wait_for(pilot, lambda: screen_name(pilot) == "CompareScreen", what="compare")
        kernels = pilot.app.screen.query_one("#kernel-diff")
        await wait_for(pilot, lambda: kernels.row_count > 0, what="the kernel diff")
        names = [_cell_text(kernels.get_row_at(i)[-1]) for i in range(kernels.row_count)]
        assert any(n.startswith(ODD_SHORT) for n in names), names

        pilot.app.open_run(ids["failed"])
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "status", "") == "failed", what="failed status")
        assert "FloatingPointError: [/bold] boom [red]" in text_of(pilot, "#outcome")

        pilot.app.open_hotspots(ids["closing"])
        await wait_for(pilot, lambda: screen_name(pilot) == "HotspotsScreen" and pilot.app.screen.query("#kernels"),
                       what="hotspots")
        table = pilot.app.screen.query_one("#kernels")
        await wait_for(pilot, lambda: table.row_count > 0, what="kernel rows")
        assert ODD_KERNEL in text_of(pilot, "#kernel-name")
        assert _cell_text(table.get_row_at(0)[-1]).startswith(ODD_SHORT)

        pilot.app.notify(f"run {ids['closing']} [{MARKUP_LABEL}] {BOLD_LABEL}")
        await pilot.pause(0.2)
        assert pilot.app.is_running

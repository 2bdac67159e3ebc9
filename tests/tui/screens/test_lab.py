"""The Lab screen at 80x24 (tinylab/tui/screens/lab.py): its form (checks, presets, toggles, the scale
row, number fields, the keys that reach its parts), where it starts from, its live and recent runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.widgets import Select

from tinylab.config import PROFILERS
from tinylab.tui.widgets.form import Option

from ..conftest import SIZE, TINY_FORM, V1, fill_form, make_app, screen_name, text_of, wait_for
from ..fakes import make_run

pytestmark = pytest.mark.asyncio


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


async def test_recent_ages_move_on_while_the_lab_stays_open(store: Path, monkeypatch):
    """The Lab's "Recent runs" ages froze at the values they had when the lab opened."""
    from tinylab.tui.screens import lab
    from ..fakes import NOW

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


async def test_enter_on_the_device_list_opens_it_and_launches_nothing(store: Path):
    async with make_app(store).run_test(size=SIZE) as pilot:
        device = pilot.app.screen.query_one("#device", Select)
        device.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert device.expanded and screen_name(pilot) == "LabScreen"
        await pilot.press("escape")


async def test_checkboxes_read_without_colour(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        box = pilot.app.screen.query_one("#toggle-qkv_fusion", Option)
        assert str(box.render()).startswith("[ ]")
        pilot.app.screen.query_one("#versions").highlighted = 1  # v2: its fusions default to on
        await pilot.pause()
        assert str(box.render()).startswith("[x]")


async def test_without_a_gpu_the_form_starts_from_the_cpu_preset_and_says_so(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = pilot.app.screen
        assert screen.query_one("#size", Select).value == "cpu"
        assert screen.query_one("#num-hidden_dim").value == "128" and screen.query_one("#num-batch_size").value == "4"
        screen.query_one("#size", Select).focus()
        await pilot.press("enter", "up", "enter")  # open the list, pick the entry above cpu (workshop)
        await pilot.pause()
        assert screen.query_one("#num-hidden_dim").value == "512"
        screen.query_one("#num-hidden_dim").value = "96"
        await pilot.pause()
        assert screen.query_one("#size", Select).value == "custom"


async def test_the_form_refuses_what_the_trainer_would(tmp_path: Path):
    """v2 with a CUDA graph on a CPU machine: refused in the form, by the trainer's own rule."""
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        screen.query_one("#versions").highlighted = 1
        await pilot.pause()
        fill_form(pilot, TINY_FORM)
        screen.query_one("#toggle-cuda_graph", Option).value = True
        await pilot.pause()
        assert "--cuda-graph needs a GPU" in text_of(pilot, "#check")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert screen_name(pilot) == "LabScreen" and not list((tmp_path / "runs").glob("*"))


async def test_a_versions_figure_comes_only_from_clean_runs_at_the_forms_sizes(store: Path):
    """The store's v1 run is profiled: it is not the figure of v1; a clean run at other sizes neither."""
    make_run(store, "20261126-025000-f6f6", version="v1", step_ms=10.0, profile=False)  # TINY sizes, clean
    async with make_app(store).run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.records, what="the history")
        screen = pilot.app.screen
        fill_form(pilot, TINY_FORM)  # the tiny sizes of the fake runs
        await pilot.pause()
        assert screen.last_runs["v1"].id == "20261126-025000-f6f6" and V1 not in {r.id for r in screen.last_runs.values()}
        screen.query_one("#num-hidden_dim").value = "128"
        await pilot.pause()
        assert "v1" not in screen.last_runs


async def test_enter_before_the_machine_is_known_launches_with_its_preset(tmp_path: Path, monkeypatch):
    """With a GPU's device node the form shows the workshop's GPU sizes until the doctor answers
    (torch decides whether it can use the GPU); on a CPU those train for a quarter of an hour, so
    an early enter waits for the machine and launches the cpu preset. The key is taken: the check
    line says the run waits for the machine check, which memory needs. (With no device node the
    machine is surely a CPU: test_lab_start.py.)"""
    import threading

    from tinylab.tui.backend import Backend

    from ..fakes import fake_doctor

    monkeypatch.setenv("TINYLAB_GPU_VENDORS", "nvidia")
    answered = threading.Event()

    def slow_doctor(self, stop=lambda: False):
        while not answered.wait(0.05):
            if stop():
                raise RuntimeError("stopped")
        self.doctor_result = fake_doctor()
        return self.doctor_result

    monkeypatch.setattr(Backend, "doctor", slow_doctor)
    async with make_app(tmp_path / "runs", doctor=None).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        launched = []
        screen.launch = launched.append
        await pilot.pause()
        assert "enter checks the machine, then launches" in text_of(pilot, "#check")
        await pilot.press("enter")
        await pilot.pause()
        assert not launched and text_of(pilot, "#check").startswith("… checking the machine… then launching v1")
        assert "checking the machine first" in text_of(pilot, "#hint")
        answered.set()
        await wait_for(pilot, lambda: launched, what="the launch once the machine is known")
        assert launched[0].hidden_dim == 128 and launched[0].batch_size == 4


async def test_p_and_f_reach_the_profilers_and_fusions(tmp_path: Path):
    async with make_app(tmp_path / "runs").run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        assert pilot.app.focused.id == "profiler-pytorch"  # the fake doctor's only available profiler
        await pilot.press("space")
        assert pilot.app.focused.value and "prof=pytorch" in text_of(pilot, "#check")
        await pilot.press("escape", "f")
        assert pilot.app.focused.id == "versions"
        assert "v1 has no fusion toggles" in text_of(pilot, "#hint")
        pilot.app.screen.query_one("#versions").highlighted = 1
        await pilot.pause()
        await pilot.press("f")
        assert pilot.app.focused.id == "toggle-qkv_fusion"


async def test_a_run_on_a_busy_machine_is_not_a_versions_figure(store: Path):
    """The tour's v1 ran on a busy machine (p10 323 ms, p90 1,701 ms) and the Lab kept its
    2.5 samples/s as v1's figure: a run the load sampler found busy is kept out, and the Lab says
    why. A wide spread alone keeps no run out (an idle machine's tiny steps spread too), and a
    figure from a run that sampled no load says its contention was not measured."""
    import json

    quiet, busy, busy_v2, unmeasured = ("20261126-025000-f6f6", "20261126-026000-a7a7", "20261126-027000-b8b8",
                                        "20261126-028000-c9c9")
    loaded = dict(others_cpu_cores=1.8, spare_cpu_cores=0.0)
    loads = {quiet: dict(others_cpu_cores=0.1, spare_cpu_cores=0.0), busy: loaded, busy_v2: loaded,
             unmeasured: dict(step_ms_p10=323.0, step_ms_p90=1701.0)}  # spread ±82 %, no load samples
    for run_id, version in ((quiet, "v1"), (busy, "v1"), (busy_v2, "v2"), (unmeasured, "v3")):
        run_dir = make_run(store, run_id, version=version, step_ms=10.0 if run_id == quiet else 400.0, profile=False)
        events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        for event in events:
            if event["event"] == "summary":
                event.update(loads[run_id])
        (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    async with make_app(store).run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.records, what="the history")
        screen = pilot.app.screen
        fill_form(pilot, TINY_FORM)
        await pilot.pause()
        assert screen.last_runs["v1"].id == quiet and screen.busy_runs["v1"].id == busy
        screen.query_one("#versions").highlighted = 0  # the form started from the newest run, v3's
        await pilot.pause()
        assert text_of(pilot, "#version-about").splitlines()[1].startswith("figure from 1126-0250-f6f6")
        assert "(no profiler, no fault, a quiet machine)" in text_of(pilot, "#version-about").replace("\n", " ")
        assert "v2" not in screen.last_runs and screen.busy_runs["v2"].id == busy_v2
        assert "no quiet run at these sizes" in str(screen._version_row("v2").columns[2]._cells[0])
        screen.query_one("#versions").highlighted = 1
        await pilot.pause()
        assert text_of(pilot, "#version-about").splitlines()[1] == (
            "no quiet run: every clean run of v2 at these sizes was on a busy machine (newest 1126-0270-b8b8)")
        assert screen.last_runs["v3"].id == unmeasured and "v3" not in screen.busy_runs
        screen.query_one("#versions").highlighted = 2
        await pilot.pause()
        assert "contention not measured" in text_of(pilot, "#version-about").replace("\n", " ")

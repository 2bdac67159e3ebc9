"""The shipped scenarios: all load and validate, cover the course, and build valid run configs."""

from __future__ import annotations

import re

import pytest

from tinylab import exercises as ex
from tinylab.core.categories import CATEGORIES
from tinylab.config import FAULTS, RunConfig
from tinylab.training.faults import CATALOGUE

SCENARIOS = ex.load_scenarios()
BY_ID = {s.id: s for s in SCENARIOS}
REQUIRED = ["performance-debugging", "v1-baseline", "v1-memory", "v1-bottlenecks", "v2-fusion",
            "v2-flash-attention", "profiler-tour", "rocm-tools", "v3-triton-basics", "v3-flash-attention",
            "v3-swiglu", "v4-fusion", "scaling", "straggler"]  # fmt: skip


def test_every_required_scenario_ships():
    assert sorted(BY_ID) == sorted(REQUIRED)
    assert [s.id for s in SCENARIOS][0] == "v1-baseline"  # course order, not alphabetical


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_scenario_is_complete(scenario):
    assert scenario.path.name == f"{scenario.id}.toml" and scenario.summary and scenario.notes
    assert scenario.path.parent == ex.default_root()
    for step in scenario.steps:
        assert step.text.strip() and step.checks and step.hints, (scenario.id, step.number)
        for check in step.checks:
            assert check.description and (check.gpu_reason != "") == check.needs_gpu
        for device in ("cpu", "cuda"):  # both shapes validate, with the preset's own fault
            cfg = ex.step_config(step, device, {})
            assert isinstance(cfg, RunConfig) and cfg.device == device and cfg.fault == step.preset.get("fault")
            base = ex.baseline_config(step, device, {})
            assert (base is None) == (step.baseline is None) and (base is None or base.fault is None)


def test_cpu_shapes_stay_small():
    """CPU presets keep the Triton interpreter (v3/v4) and eager CPU runs to seconds per step: 32
    tokens for up to 3 steps, or 128 tokens for 2 (v3-flash-attention's online softmax needs two
    of the interpreter's 64-key blocks: 2.7 s a step)."""
    for scenario in SCENARIOS:
        for step in scenario.steps:
            cfg = ex.step_config(step, "cpu", {})
            assert cfg.hidden_dim <= 64 and cfg.num_layers <= 2, (scenario.id, step.number)
            if cfg.version in ("v3", "v4"):
                tokens = cfg.batch_size * cfg.seq_len
                assert (tokens <= 32 and cfg.num_steps <= 3) or (tokens <= 128 and cfg.num_steps <= 2), (
                    scenario.id, step.number)


def test_performance_debugging_diagnoses_each_fault_then_the_fixed_model():
    steps = BY_ID["performance-debugging"].steps
    assert len(steps) >= 6
    faults = [s.preset.get("fault") for s in steps]
    one_process = [f for f in FAULTS if f != "straggler"]  # the straggler needs ranks: its own scenario
    assert sorted(f for f in faults if f) == sorted(one_process) and faults[-1] is None
    assert BY_ID["straggler"].steps[0].preset["fault"] == "straggler"
    for s in steps:
        fault = s.preset.get("fault")
        assert "fault" in s.hints[-1].lower() or fault is None  # only the last hint names it
        if fault:
            assert all(fault not in hint for hint in s.hints[:-1]), (fault, "named before the last hint")
            assert fault not in s.title and fault not in s.text
        cpu_checks = [c for c in s.checks if not c.needs_gpu]
        if fault and CATALOGUE[fault].observable_on == "cpu":
            assert cpu_checks, f"{fault} is CPU-observable: its step needs checks that run on a CPU"


def test_readme_documents_every_name():
    readme = (ex.default_root() / "README.md").read_text(encoding="utf-8")
    config_fields = {f for f in RunConfig.__dataclass_fields__}
    for name in ex.names():
        if name in config_fields or re.search(r"_(ms|pct|calls)$", name):
            continue  # documented as "every RunConfig field" and "<category>_ms/_pct/_calls"
        assert f"`{name}`" in readme, name
    for category in CATEGORIES:
        assert f"`{category}`" in readme


def test_package_data_covers_the_files():
    """pyproject ships *.toml and *.md of exercises/ and its subfolders, and the recorded outputs
    in <scenario>/recorded/ (a rocprof-compute profile folder nests workload/ and analyze/dispatch_N/):
    nothing lives elsewhere."""
    root = ex.default_root()
    for path in root.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            parts = path.relative_to(root).parts
            recorded = len(parts) >= 3 and parts[1] == "recorded"
            assert path.suffix in (".toml", ".md", ".py") or recorded, path


#: What gives a fault away: its name, and the words of its cause. The words of what it shows, which
#: a title may well name (the model: "triton"; the phase or the timers: "backward", "timing"), are
#: the symptom the learner starts from, not the answer.
TELLS = {
    "missing-init": ("missing-init", "missing", "init"),
    "non-contiguous": ("non-contiguous", "contiguous", "column-major", "column major", "strided"),
    "unsynced-timing": ("unsynced-timing", "unsynced", "sync"),
    "detached-backward": ("detached-backward", "detach", "no_grad", "no grad", "autograd"),
    "naive-triton-swiglu": ("naive-triton-swiglu", "naive", "swiglu"),
}


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if any(st.hidden for st in s.steps)], ids=lambda s: s.id)
def test_no_title_or_list_entry_names_a_fault_a_step_hides(scenario):
    """performance-debugging hides each step's fault until the learner names it; the list (its
    title, level and minutes), the preview under it (the summary and every step's title) and each
    step's head must not name it first."""
    hidden = {ex.hidden_fault(st) for st in scenario.steps} - {None}
    assert hidden and hidden <= set(TELLS) <= set(FAULTS), "a new hidden fault needs its words in TELLS"
    shown = {"list entry": f"{scenario.title} {scenario.level} {scenario.minutes} min",
             "summary": scenario.summary, **{f"step {st.number}'s title": st.title for st in scenario.steps}}
    for fault in hidden:
        for where, text in shown.items():
            told = [w for w in TELLS[fault] if re.search(rf"(?<![a-z]){re.escape(w)}", text, re.IGNORECASE)]
            assert not told, f"{scenario.id}: the {where} {text!r} names the hidden fault {fault} ({told})"

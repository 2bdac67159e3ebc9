"""Every reader of a run survives whatever events.jsonl holds: random records, wrong field types,
garbage bytes, a cut last line, a missing or broken config.json."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.runs import tiny_config

from tinylab.analysis.compare import compare_runs
from tinylab.render.compare import format_compare
from tinylab.render.report import build_report
from tinylab.commands import show as show_command
from tinylab.core.eventlog import read_events
from tinylab.core.events import KINDS
from tinylab.runs.store import STATUSES, Run, mark_run

FIELDS = ["step", "loss", "step_ms", "fwd_ms", "bwd_ms", "opt_ms", "samples_per_s", "tokens_per_s", "mem_alloc_mb",
          "mem_peak_mb", "warmup", "final_loss", "initial_loss", "mfu", "params_trained", "params_total",
          "step_ms_median", "step_ms_p90", "peak_mem_mb", "returncode", "signal", "type", "message", "traceback",
          "device", "device_name", "pid", "tool", "artifacts", "kernel_table", "note", "time", "torch"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(), st.text(max_size=8),
                   st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))
CONFIG = tiny_config().resolved().to_dict()


@st.composite
def records(draw) -> bytes:
    kind = draw(st.sampled_from(KINDS + ("bogus",)))
    record = {"event": kind, **draw(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=8))}
    if kind == "start" and draw(st.booleans()):
        record["config"] = CONFIG
    return json.dumps(record).encode()


LINES = st.one_of(records(), st.binary(max_size=40).filter(lambda b: b"\n" not in b))


def read_everything(run: Run, other: Run) -> None:
    """Each way a user or the TUI reads a run."""
    assert run.status() in STATUSES
    run.record().row()
    with contextlib.redirect_stdout(io.StringIO()):
        for as_json in (False, True):
            show_command.run(argparse.Namespace(run=str(run.dir), runs_dir=str(run.dir.parent), json=as_json))
    for a, b in ((run, other), (other, run)):
        format_compare(compare_runs(a.record(), b.record()))
    build_report([run, other], "md")
    build_report([run, other], "html")


PROCESS = st.one_of(st.binary(max_size=20), st.builds(
    lambda r: json.dumps(r).encode(),
    st.dictionaries(st.sampled_from(["pid", "pgid", "start_time", "launched_at"]), VALUES, max_size=4)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(LINES, max_size=12), tail=st.binary(max_size=30), config=st.sampled_from(["ok", "bad"]),
       process=st.none() | PROCESS)
def test_readers_never_crash(lines, tail, config, process):
    """(A folder without config.json is not a run at all: `RunStore.list` skips it.)"""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "20260101-000000-aaaa"
        run_dir.mkdir()
        mark_run(run_dir)
        (run_dir / "events.jsonl").write_bytes(b"\n".join(lines) + b"\n" + tail)
        if process is not None:
            (run_dir / "process.json").write_bytes(process)
        (run_dir / "config.json").write_bytes(json.dumps(CONFIG).encode() if config == "ok" else b'{"version": "v1", "ba')
        other = Path(tmp) / "20260101-000000-bbbb"
        other.mkdir()
        mark_run(other)
        (other / "config.json").write_text(json.dumps(CONFIG))
        read_everything(Run(run_dir), Run(other))


def test_a_parseable_record_with_wrong_field_types_is_corrupt(tmp_path):
    path = tmp_path / "events.jsonl"
    good_step = {"event": "step", "step": 0, "loss": 6.9, "step_ms": 1.0}
    path.write_text("\n".join(json.dumps(r) for r in [
        good_step,
        {**good_step, "step": "0"},
        {**good_step, "loss": [6.9]},
        {"event": "step", "step": 1},  # no loss
        {"event": "exit", "returncode": "0"},
        {"event": "summary", "samples_per_s": "fast"},
        {"event": "error", "traceback": ["not", "text"]},
        {"event": "exit", "returncode": 0, "signal": None},
    ]) + "\n")
    log = read_events(path)
    assert [e["event"] for e in log.events] == ["step", "exit"]
    assert log.corrupt_lines == [2, 3, 4, 5, 6, 7]


def test_true_false_is_no_count():
    """`"pass": true` or `"returncode": false` parse as JSON ints in Python: they are corrupt records."""
    from tinylab.core.eventlog import parse_lines

    events, corrupt, _ = parse_lines(b'{"event": "pass", "pass": true}\n{"event": "exit", "returncode": false}\n'
                                     b'{"event": "pass", "pass": 2, "planned": 16}\n')
    assert corrupt == [1, 2] and [e["pass"] for e in events] == [2]


def test_key_config_names_a_profiler_or_fault_right_after_the_sizes():
    """Tables cut the config at 80 columns: what makes a run measure something else than a clean
    one comes before the toggles, which go by their short names."""
    from tinylab.config import RunConfig
    from tinylab.runs.record import key_config

    cfg = dict(version="v2", batch_size=4, seq_len=64, hidden_dim=128, num_layers=2, qkv_fusion=True, sdpa=True,
               swiglu_fusion=True, profilers=["pytorch"])
    assert key_config(RunConfig(**cfg)) == "b4 s64 h128 l2 prof=pytorch qkv+sdpa+swiglu"
    assert key_config(RunConfig(**{**cfg, "profilers": [], "fault": "missing-init", "precision": "bf16"})) == \
        "b4 s64 h128 l2 bf16 fault=missing-init qkv+sdpa+swiglu"
    assert key_config(RunConfig(**{**cfg, "version": "v4", "cuda_graph": True, "qkv_fusion": None, "sdpa": None,
                                   "swiglu_fusion": None})) == "b4 s64 h128 l2 prof=pytorch graph"
    assert key_config(None) == "?"  # a damaged config.json


def test_printable_shows_control_characters_and_direction_overrides_as_question_marks():
    from tinylab.runs.record import printable

    assert printable("a\x1b[2Jb\nc\td\x9be") == "a?[2Jb?c?d?e"
    assert printable("invoice\u202efdp.exe \u2066x\u2069") == "invoice?fdp.exe ?x?"
    assert printable("[bold]ünïcödé → ok") == "[bold]ünïcödé → ok"

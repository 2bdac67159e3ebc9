"""Issue 40, the hostile node's tail: what a hostile run folder, profiler file or command line
still did badly (a traceback, unbounded reading, raw escape sequences, formulas, a leaked token,
absurd values accepted, a usage block before the one line that matters)."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.runs import TINY_FLAGS, cli, profile_tables, world_of

from tinylab.cli import main
from tinylab.core.eventlog import SAMPLE_LIMIT, STEP_LINE_LIMIT, sample_steps
from tinylab.runs.store import RunStore

RUN = "20260101-000000-aaaa"
STEP = {"event": "step", "time": 2.0, "loss": 6.5, "step_ms": 40.0, "samples_per_s": 100.0}


def tinylab(capsys, *argv: str) -> tuple[int, str, str]:
    """main() in this process: (exit code, stdout, stderr); argparse's refusals exit."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_one_line(code: int, err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("tinylab: error: "), (code, err)
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def step_line(k: int) -> bytes:
    return (json.dumps({**STEP, "step": k}) + "\n").encode()


# ----------------------------------------------------------------------------- 1. report's reading
def test_sampling_steps_skips_a_huge_line_and_reads_a_huge_log_at_its_ends(tmp_path):
    """A 1 GiB events.jsonl without a newline in its middle: sample_steps gathered that "line" whole
    (a 4 GB one took 1.24 GB and over 60 s); now it reads the log's first and last SAMPLE_LIMIT / 2,
    skips what is no line of tinylab's, and keeps the steps on either side. Run under a 400 MB
    address-space limit, so that the old reading fails fast instead of eating the machine."""
    path = tmp_path / "events.jsonl"
    with open(path, "wb") as fh:
        fh.write(b"".join(step_line(k) for k in range(3)))
        fh.seek(1 << 30)  # a sparse hole of NUL bytes: one gigabyte-long line
        fh.write(b"\n" + b"".join(step_line(k) for k in range(3, 6)))
    assert path.stat().st_size > SAMPLE_LIMIT and STEP_LINE_LIMIT < SAMPLE_LIMIT
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20)); "
            "from tinylab.core.eventlog import sample_steps; print([s.step for s in sample_steps(sys.argv[1])])")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0 and proc.stdout.strip() == "[0, 1, 2, 3, 4, 5]", proc.stderr[-2000:]


def test_a_line_longer_than_the_limit_is_skipped_and_the_next_one_read(tmp_path):
    path = tmp_path / "events.jsonl"
    long = b'{"event": "step", "step": 9, "loss": 1.0, "pad": "' + b"x" * STEP_LINE_LIMIT + b'"}\n'
    path.write_bytes(step_line(0) + long + step_line(1) + b"x" * (STEP_LINE_LIMIT + 5))
    assert [s.step for s in sample_steps(path)] == [0, 1]


# ----------------------------------------------------------------------------- 2. numbers a file made up
def hostile_run(root: Path, run_id: str = RUN, summary: dict | None = None, step: dict | None = None,
                **start) -> Path:
    run = world_of(root, run_id, 1, 100.0)
    events = [json.loads(line) for line in (run.dir / "events.jsonl").read_text().splitlines()]
    for e in events:
        if e["event"] == "summary":
            e.update(summary or {})
        if e["event"] == "start":
            e.update(start)
    events[1:1] = [{**STEP, "step": 0, **(step or {})}, {**STEP, "step": 1}]
    (run.dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run.dir


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_float_where_a_count_belongs_and_a_huge_loss_are_no_traceback(tmp_path, capsys, fmt):
    """`params_trained: 1e308` raised "Unknown format code 'd'" (since the typed decode, the record
    is damaged: said once, its other events still read), and a step's loss of 1e308 made the
    report's chart overflow (plotext: "cannot convert float infinity to integer")."""
    root = tmp_path / "runs"
    hostile_run(root, summary={"params_trained": 1e308, "params_total": 1e308}, step={"loss": 1e308})
    code, out, err = tinylab(capsys, "report", RUN, "--format", fmt, "--runs-dir", str(root))
    assert code == 0 and "Traceback" not in err, err
    code, out, err = tinylab(capsys, "show", RUN, "--runs-dir", str(root))
    assert code == 0, err
    assert [line for line in out.splitlines() if "unreadable line" in line] == [
        "warning  events.jsonl has 1 unreadable line(s): [4]"]


# ----------------------------------------------------------------------------- 3. a lone surrogate
def test_a_lone_surrogate_in_a_run_file_is_no_traceback(tmp_path, capsys):
    """JSON may escape half of a UTF-16 pair ("\\ud800"); json.loads makes it a str that no UTF-8
    can encode, and `show` (print) and `report -o` (write_output) raised UnicodeEncodeError."""
    root = tmp_path / "runs"
    run_dir = hostile_run(root, device_name="cpu \ud800 x")
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "label": "lab\udfffel"}))
    with open(run_dir / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"event": "error", "time": 5.0, "type": "Oops\ud800", "message": "m\udc00",
                             "traceback": "line\ud800"}) + "\n")
    for argv in (["show", RUN], ["show", RUN, "--json"], ["runs"], ["report", RUN, "-o", str(tmp_path / "r.md")],
                 ["report", RUN, "--format", "html", "-o", str(tmp_path / "r.html")]):
        code, out, err = tinylab(capsys, *argv, "--runs-dir", str(root))
        assert code == 0 and "Traceback" not in err, (argv, err)
        (out + err).encode("utf-8")  # nothing a terminal could not be sent
    shown = tinylab(capsys, "show", RUN, "--runs-dir", str(root))[1]
    assert "cpu \ufffd x" in shown and "Oops\ufffd: m\ufffd" in shown
    assert "lab\ufffdel" in (tmp_path / "r.md").read_text(encoding="utf-8")


def test_the_output_writer_takes_a_lone_surrogate(tmp_path):
    from tinylab.commands._common import write_output

    write_output(tmp_path / "out.md", "a\ud800b", "-o")
    assert (tmp_path / "out.md").read_text(encoding="utf-8") == "a?b"


# ----------------------------------------------------------------------------- 5, 6. kernel names in CSV
HOSTILE_NAMES = ["\x1b]0;pwn\x07\x1b[2Jclear", "=cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "+1+1",
                 "-2+3", "=HYPERLINK(\"http://evil.example\",\"x\")", "\tTAB", "plain_kernel"]


def test_hotspots_csv_has_no_escape_sequence_and_no_formula(tmp_path, capsys):
    root = tmp_path / "runs"
    profile_tables(world_of(root, RUN, 1, 100.0), {None: [(n, 1, 1000.0 * (i + 1)) for i, n in
                                                          enumerate(HOSTILE_NAMES)]})
    code, out, err = tinylab(capsys, "hotspots", RUN, "--csv", "--runs-dir", str(root))
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    names = [row["name"] for row in csv.DictReader(io.StringIO(out))]
    assert len(names) == len(HOSTILE_NAMES) and "plain_kernel" in names
    assert all(not n.startswith(("=", "+", "-", "@", "\t")) for n in names), names
    assert "'=cmd|' /C calc'!A0" in names and "'-2+3" in names and "?]0;pwn??[2Jclear" in names
    for fmt in ("md", "html"):  # the reports quote kernel names too
        code, out, err = tinylab(capsys, "report", RUN, "--format", fmt, "--runs-dir", str(root))
        assert code == 0 and "\x1b" not in out and "\x07" not in out, err


def test_csv_cell_prefixes_only_text_that_starts_like_a_formula():
    from tinylab.core.text import csv_cell

    assert [csv_cell(v) for v in ("=1", "+1", "-1", "@x", "\tx", "\rx", "a=1", -1, 2.5, "", "'q")] == [
        "'=1", "'+1", "'-1", "'@x", "'\tx", "'\rx", "a=1", -1, 2.5, "", "''q"]


def test_the_kernels_csv_a_run_stores_is_guarded_and_reads_back_the_same(tmp_path):
    """Item 6's "any other CSV the lab writes": profiles/<tool>/kernels.csv, which a learner may open."""
    import pandas as pd

    from tinylab.analysis.formats import load
    from tinylab.profilers import base

    names = ["=HYPERLINK(\"http://evil.example\",\"x\")", "@SUM(A1)", "'quoted", "gemm"]
    table = pd.DataFrame({"name": names, "calls": [1] * 4, "total_ns": [4e3, 3e3, 2e3, 1e3]})
    event = base.write_kernel_table(tmp_path, "pytorch", base.CollectResult({}, table, "", "pytorch"))
    written = (tmp_path / event["kernel_table"]).read_text()
    assert "\n=HYPERLINK" not in written and "\n@SUM" not in written and "'=HYPERLINK" in written
    assert sorted(load(tmp_path / event["kernel_table"]).table["name"]) == sorted(names)


# ----------------------------------------------------------------------------- 7. one huge string in a trace
def test_a_trace_keeps_no_string_longer_than_its_cap(tmp_path, capsys):
    """A 60 MB kernel name took `timeline` 64 s (its category patterns scan every name)."""
    from tinylab.analysis.formats.trace_events import MAX_STRING, read_events

    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1, "pid": 0, "tid": 0} for i in range(50)]
    events[10]["name"] = "A" * (8 << 20)
    events[11]["cat"] = "c" * (1 << 20)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = read_events(path)
    assert len(trace) == 50 and max(len(s) for s in trace.names + trace.cats if s) == MAX_STRING
    assert trace.names[trace.name[10]] == "A" * MAX_STRING
    code, out, err = tinylab(capsys, "timeline", str(path))
    assert code == 0 and len(out) < 20_000, err


# ----------------------------------------------------------------------------- 8. follow
def test_follow_refuses_a_looping_log_link_in_one_line(tmp_path):
    run = world_of(tmp_path / "runs", RUN, 1, 100.0)
    os.symlink("output.log", run.dir / "output.log")
    for extra in ((), ("--tail",)):
        proc = cli("follow", RUN, *extra, "--runs-dir", str(tmp_path / "runs"), timeout=30)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines()[-1].endswith("output.log: is a symbolic link; not followed")


def test_follow_shows_a_binary_log_without_its_control_bytes(tmp_path):
    from tinylab.runs.follow import follow

    run = world_of(tmp_path / "runs", RUN, 1, 100.0)
    (run.dir / "output.log").write_bytes(b"step 1\tok\n\x1b]0;pwn\x07\x1b[2J\x00\xff\xfe bin\r\nlast\n")
    out = io.StringIO()
    assert follow(run, out, poll_s=0.01) == "finished"
    assert out.getvalue() == "step 1\tok\n?]0;pwn??[2J?\ufffd\ufffd bin\r\nlast\n"


# ----------------------------------------------------------------------------- 9. absurd values
HUGE = "99999999999999999999"


@pytest.mark.parametrize("argv, fragment", [
    (["train", "--num-steps", HUGE], "argument --num-steps: must be an integer from 1 to 10000000, got '9999"),
    (["run", "--detach", "--num-steps", HUGE], "argument --num-steps: must be an integer from 1 to 10000000"),
    (["submit", "--dry-run", "--num-steps", HUGE], "argument --num-steps: must be an integer from 1 to 10000000"),
    (["train", "--num-steps", "6", "--profile-steps", "1000000"],
     "--profile-steps 1000000 is more than the run's 6 steps (--num-steps): ask for at most 6"),
    (["train", "--learning-rate", "nan"], "argument --learning-rate: must be a finite number > 0 and <= 10, got 'nan'"),
    (["train", "--seed", "-1"], "argument --seed: must be an integer from 0 to 4294967295"),
    (["submit", "--dry-run", "--time", "0:0:0"], "--time must be a Slurm time limit from 1 second"),
    (["submit", "--dry-run", "--device", "cuda:99"], "--device cuda:99: each node shows the job its 1 GPU(s)"),
    (["submit", "--dry-run", "--hidden-dim", "65536"], "this run needs at least"),
    (["submit", "--dry-run", "--batch-size", "100000000"], "argument --batch-size: must be an integer from 1 to 1048576"),
    (["submit", "--dry-run", "--nodes", "0"], "argument --nodes: must be an integer from 1 to 2048"),
    (["submit", "--dry-run", "--node-memory", "0"], "argument --node-memory: must be an integer from 1 to 8192"),
    (["timeline", "x", "--rank", "-1"], "argument --rank: must be an integer from 0 to 2047"),
    (["serve", "--port", "65536"], "argument --port: must be an integer from 0 to 65535"),
    (["kernels", "--jobs", "0"], "argument --jobs: must be an integer from 1 to 256"),
])
def test_absurd_values_are_refused_before_launch(tmp_path, capsys, monkeypatch, argv, fragment):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no slurm.toml of the user's
    sized = [*argv[:1], *(TINY_FLAGS[2:] if argv[0] in ("train", "run", "submit") else ()), *argv[1:]]
    if "--hidden-dim" in argv:  # the size under test, the preset's others
        sized = argv
    code, out, err = tinylab(capsys, *sized, "--runs-dir", str(tmp_path / "runs"))
    assert_one_line(code, err, fragment)
    assert not (tmp_path / "runs").exists() or not RunStore(tmp_path / "runs").list()


def test_a_remote_node_of_more_memory_is_named_with_a_flag(tmp_path, capsys, monkeypatch):
    """What does not fit this machine may fit the job's nodes: --node-memory says how much they have."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    big = ["submit", "--dry-run", "--device", "cpu", "--hidden-dim", "8192", "--num-layers", "8",
           "--runs-dir", str(tmp_path / "runs")]
    code, _, err = tinylab(capsys, *big)
    assert_one_line(code, err, "this run needs at least", "--node-memory names the job's nodes'")
    code, out, err = tinylab(capsys, *big, "--node-memory", "8192")
    assert code == 0 and "#SBATCH" in out, err


def numeric_actions(argv: list[str]):
    """(command, flag, help) of every flag of `argv`'s parser that takes a number."""
    from tinylab.cli import build_parser

    parser = build_parser(argv[0])
    sub = next(a for a in parser._actions if isinstance(a, type(parser._subparsers._group_actions[0])))
    command = sub.choices[argv[0]]
    for name in argv[1:]:
        command = next(a for a in command._actions if hasattr(a, "choices") and isinstance(a.choices, dict)
                       ).choices[name]
    for action in command._actions:
        if action.type is not None and getattr(action.type, "__name__", "") in ("int", "float", "integer", "number"):
            yield " ".join(argv), action.option_strings[0] if action.option_strings else action.dest, action


@pytest.mark.parametrize("argv", [["train"], ["run"], ["submit"], ["kernels"], ["timeline"], ["hotspots"],
                                  ["serve"], ["exercises", "show"], ["exercises", "check"], ["bench"]])
def test_every_numeric_flag_says_its_range_in_its_help(argv):
    import re

    for command, flag, action in numeric_actions(argv):
        assert action.type not in (int, float), f"{command} {flag}: a bare int/float takes any value"
        assert re.search(r"\d to \d|[<>]=? ?\d|\d or more", action.help or ""), f"{command} {flag}: {action.help!r}"


# ----------------------------------------------------------------------------- 10. serve's token
def test_the_access_log_masks_the_token(caplog):
    from tinylab.commands.serve import mask_token_in_access_log

    mask_token_in_access_log()
    mask_token_in_access_log()  # once a process, however often asked
    access = logging.getLogger("aiohttp.access")
    assert len(access.filters) == 1
    with caplog.at_level(logging.INFO, logger="aiohttp.access"):
        access.info('127.0.0.1 "GET /?token=s3cret-Tok_en HTTP/1.1" 200 "http://localhost:8000/?token=s3cret-Tok_en&x=1"')
        access.info('127.0.0.1 "GET /static/x?a=1&token=%s HTTP/1.1" 403', "s3cret")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ['127.0.0.1 "GET /?token=[secret] HTTP/1.1" 200 "http://localhost:8000/?token=[secret]&x=1"',
                     '127.0.0.1 "GET /static/x?a=1&token=[secret] HTTP/1.1" 403']


def test_the_served_token_goes_into_no_file_others_may_read(tmp_path, capsys):
    from tinylab.commands.serve import owner_only

    path = tmp_path / "serve.log"
    with open(path, "w") as fh:
        os.chmod(path, 0o644)  # `tinylab serve > serve.log` under umask 022
        owner_only(fh)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    owner_only(io.StringIO())  # no file behind it: nothing to do
    assert "mode 0600" in capsys.readouterr().err


def test_the_served_lab_logs_no_token_in_its_request_lines(monkeypatch, tmp_path, caplog):
    """Through the guarded app itself: a refused and an admitted request, each logged masked."""
    pytest.importorskip("textual_serve")
    import asyncio

    import textual_serve.server
    from aiohttp.test_utils import TestClient, TestServer

    from tinylab.commands.serve import mask_token_in_access_log
    from tinylab.tui.serve import bind, make_server

    class NoLab:
        def __init__(self, *_, **__):
            pass

    monkeypatch.setattr(textual_serve.server, "AppService", NoLab)
    listen = bind("localhost", 0, allow_remote=False)
    for sock in listen.socks:
        sock.close()
    server = make_server(str(tmp_path / "runs"), listen, "s3cret-token")
    mask_token_in_access_log()

    async def steps():
        app = await server._make_app()
        app.on_startup.clear()
        async with TestClient(TestServer(app, host="127.0.0.1", port=listen.port)) as client:
            return [(await client.get(p)).status for p in ("/?token=s3cret-tokex", "/?token=s3cret-token")]

    with caplog.at_level(logging.INFO, logger="aiohttp.access"):
        assert asyncio.run(steps()) == [403, 200]
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "aiohttp.access")
    assert logged.count("token=[secret]") == 2 and "s3cret" not in logged


# ----------------------------------------------------------------------------- 11. argparse's refusals
@pytest.mark.parametrize("argv, fragment, where", [
    (["train", "--bogus"], "unrecognized arguments: --bogus", "tinylab train --help"),
    (["train", "--num-steps", "x"], "argument --num-steps: must be an integer from 1 to 10000000, got 'x'",
     "tinylab train --help"),
    (["show"], "the following arguments are required: RUN", "tinylab show --help"),
    (["runs", "--status", "bogus"], "invalid choice: 'bogus'", "tinylab runs --help"),
    (["exercises", "show", "x", "--hints", "-1"], "must be an integer >= 0", "tinylab exercises show --help"),
    (["hotspots", "x", "--json", "--csv"], "not allowed with argument --json", "tinylab hotspots --help"),
])
def test_a_refused_command_line_is_one_line_and_a_pointer_to_help(capsys, argv, fragment, where):
    code, out, err = tinylab(capsys, *argv)
    assert_one_line(code, err, fragment, f"`{where}`")
    assert "usage:" not in err and out == ""


def test_help_itself_stays_whole():
    proc = cli("train", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: tinylab train") and proc.stderr == ""
    assert len(proc.stdout.splitlines()) > 60 and "--num-steps" in proc.stdout

"""`tinylab submit` and the run commands on a Slurm run, against stand-in Slurm commands
(tests/support/slurm_bin): the script (a golden file), the job record, queued -> running ->
finished, Slurm's failures, cancel, follow, and the one-line errors."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from support.runs import TINY_FLAGS, wait_for, write_events

from tinylab.cli import main
from tinylab.runs.launcher import SAFE_PATH
from tinylab.runs.record import short_id
from tinylab.runs.store import RunStore

GOLDEN = Path(__file__).parent / "golden"
SUMMARY = {"event": "summary", "samples_per_s": 400.0, "final_loss": 6.8, "params_trained": 20, "params_total": 20}
EXIT_0 = {"event": "exit", "returncode": 0, "signal": None}


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # never the user's own slurm.toml
    return tmp_path / "runs"


def tinylab(capsys, *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse refused a flag's value itself
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def submit(capsys, root: Path, *args: str) -> tuple[int, str, str]:
    return tinylab(capsys, "submit", "--runs-dir", str(root), *TINY_FLAGS, *args)


def status_of(capsys, root: Path) -> list[str]:
    code, out, err = tinylab(capsys, "runs", "--json", "--runs-dir", str(root))
    assert code == 0, err
    return [row["status"] for row in json.loads(out)]


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("tinylab: error: "), (code, err)
    for fragment in fragments:
        assert fragment in lines[0]


def test_the_script_of_two_nodes_of_four_gpus_is_the_golden_one(capsys, root, monkeypatch, tmp_path):
    """--dry-run, where there is no Slurm at all: the script is written into a new run folder and printed."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm"))
    code, out, err = tinylab(capsys, "submit", "--nodes", "2", "--gpus-per-node", "4", "--partition", "gpu",
                             "--account", "proj123", "--time", "01:30:00", "--dry-run", "--runs-dir", str(root))
    assert code == 0, err
    [run_dir] = RunStore(root).list()
    script = (run_dir.dir / "job.sbatch").read_text()
    assert out == script
    expected = (GOLDEN / "job-2x4.sbatch").read_text().replace("{run_dir}", str(run_dir.dir.resolve())) \
        .replace("{run_id}", run_dir.id).replace("{python}", shlex.join([sys.executable, *SAFE_PATH]))
    assert script == expected
    assert "not submitted" in err and f"sbatch {run_dir.dir / 'job.sbatch'}" in err
    assert not (run_dir.dir / "job.json").exists()
    cfg = run_dir.config()
    assert (cfg.nnodes, cfg.nproc_per_node, cfg.parallel) == (2, 4, "ddp")


def test_a_named_defaults_file_fills_what_the_flags_leave(capsys, root, tmp_path):
    defaults = tmp_path / "site.toml"
    defaults.write_text('partition = "mi300"\naccount = "fromfile"\ntime = "00:20:00"\n')
    code, out, err = submit(capsys, root, "--slurm-config", str(defaults), "--account", "fromflag", "--dry-run")
    assert code == 0, err
    assert "#SBATCH --partition=mi300\n" in out and "#SBATCH --time=00:20:00\n" in out
    assert "#SBATCH --account=fromflag\n" in out
    assert "#SBATCH --nodes=1\n" in out and "scontrol" not in out  # one node: torchrun --standalone, no srun
    assert "--gpus-per-node" not in out  # --device cpu (TINY_FLAGS): gloo ranks ask for no GPU


def test_submit_records_the_job_and_the_run_goes_queued_running_finished(capsys, root, fake_slurm):
    t0 = time.time()
    code, out, err = submit(capsys, root, "--nodes", "2", "--gpus-per-node", "2", "--time", "00:10:00")
    assert code == 0, err
    [run] = RunStore(root).list()
    assert out.strip() == f"run {run.id} submitted as Slurm job 1000 (2 x 2 ranks)"  # --device cpu
    [call] = fake_slurm.calls("sbatch")
    script = run.dir.resolve() / "job.sbatch"
    assert call["argv"] == ["--parsable", str(script)]
    job = json.loads((run.dir / "job.json").read_text())
    assert job["job_id"] == "1000" and job["script"] == str(script) and job["host"] == socket.gethostname()
    assert t0 <= job["submitted"] <= time.time()
    assert status_of(capsys, root) == ["queued"]
    fake_slurm.job("1000", squeue="RUNNING", sacct="RUNNING")
    assert status_of(capsys, root) == ["running"]
    code, out, err = tinylab(capsys, "show", run.id, "--runs-dir", str(root))
    assert "slurm    job 1000 (RUNNING)" in out and f"from {socket.gethostname()}" in out
    write_events(run.dir, [SUMMARY, EXIT_0])
    calls = len(fake_slurm.calls())
    assert status_of(capsys, root) == ["finished"]
    assert len(fake_slurm.calls()) == calls, "a run whose supervisor recorded its end asks Slurm nothing"


def test_a_job_slurm_ended_as_failed_names_slurms_state(capsys, root, fake_slurm):
    submit(capsys, root)
    [run] = RunStore(root).list()
    write_events(run.dir, [{"event": "step", "step": 0, "loss": 6.9, "step_ms": 10.0, "warmup": True}])
    fake_slurm.job("1000", squeue=None, sacct="TIMEOUT")
    code, out, err = tinylab(capsys, "runs", "--status", "failed", "--runs-dir", str(root))
    assert short_id(run.id) in out  # the form `runs` shows
    code, out, err = tinylab(capsys, "show", run.id, "--runs-dir", str(root))
    assert "status   failed" in out
    assert "error    SlurmJob: Slurm job 1000 ended TIMEOUT: it reached its time limit (--time)" in out
    assert "slurm    job 1000 (TIMEOUT)" in out


def test_a_completed_job_without_a_summary_is_lost(capsys, root, fake_slurm):
    submit(capsys, root)
    fake_slurm.job("1000", squeue=None, sacct="COMPLETED")
    assert status_of(capsys, root) == ["lost"]


def test_cancel_calls_scancel_with_the_job_id(capsys, root, fake_slurm):
    submit(capsys, root)
    [run] = RunStore(root).list()
    code, out, err = tinylab(capsys, "cancel", run.id, "--runs-dir", str(root))
    assert code == 0, err
    assert [c["argv"] for c in fake_slurm.calls("scancel")] == [["1000"]]
    assert out.strip() == f"run {run.id} cancelled (scancel of Slurm job 1000)"
    assert (run.dir / "cancel.json").is_file()
    code, out, err = tinylab(capsys, "cancel", run.id, "--runs-dir", str(root))
    assert_one_line_error(code, err, f"run {run.id} is not running (status: cancelled)")
    assert len(fake_slurm.calls("scancel")) == 1


def test_rm_of_a_queued_run_needs_force_which_cancels_it(capsys, root, fake_slurm):
    submit(capsys, root)
    [run] = RunStore(root).list()
    code, out, err = tinylab(capsys, "rm", run.id, "--runs-dir", str(root))
    assert_one_line_error(code, err, f"run {run.id} is queued: cancel it first or pass --force")
    assert run.dir.is_dir()
    code, out, err = tinylab(capsys, "rm", run.id, "--force", "--runs-dir", str(root))
    assert code == 0, err
    assert [c["argv"] for c in fake_slurm.calls("scancel")] == [["1000"]] and not run.dir.exists()


def test_where_no_slurm_answers_a_slurm_run_is_remote(capsys, root, fake_slurm, monkeypatch, tmp_path):
    """A laptop reading the shared run store: no squeue, no sacct, no scancel."""
    submit(capsys, root)
    [run] = RunStore(root).list()
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm"))
    assert status_of(capsys, root) == ["remote"]
    code, out, err = tinylab(capsys, "cancel", run.id, "--runs-dir", str(root))
    assert_one_line_error(code, err, f"run {run.id} is Slurm job 1000, and no Slurm answers here", "(scancel 1000)")


def test_follow_says_the_job_is_queued_then_started(capsys, root, fake_slurm):
    submit(capsys, root)
    [run] = RunStore(root).list()

    def slurm_starts_it_then_it_ends() -> None:
        # asked twice: for the first line, then by the first poll, which finds the job queued
        wait_for(lambda: len(fake_slurm.calls("squeue")) >= 2, 30, "follow to ask squeue")
        fake_slurm.job("1000", squeue="RUNNING", sacct="RUNNING")
        asked = len(fake_slurm.calls("squeue"))
        wait_for(lambda: len(fake_slurm.calls("squeue")) > asked, 30, "follow to ask squeue again")
        write_events(run.dir, [SUMMARY, EXIT_0])

    slurm = threading.Thread(target=slurm_starts_it_then_it_ends)
    slurm.start()
    try:
        code, out, err = tinylab(capsys, "follow", run.id, "--runs-dir", str(root))
    finally:
        slurm.join()
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0].startswith(f"following run {run.id} (queued)")
    assert lines[1] == "queued as Slurm job 1000: it starts when Slurm gives it its nodes"
    assert lines[2:] == ["Slurm started the job", f"run {run.id} finished"]


def test_without_sbatch_submit_is_one_line_and_leaves_no_run(capsys, root, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm"))
    code, out, err = submit(capsys, root, "--nodes", "2")
    assert_one_line_error(code, err, "sbatch is not on PATH", "--dry-run")
    assert not root.exists()


def test_a_job_sbatch_refuses_leaves_no_run(capsys, root, fake_slurm):
    fake_slurm.write(sbatch_error="invalid partition specified: nope")
    code, out, err = submit(capsys, root, "--partition", "nope")
    assert_one_line_error(code, err, "sbatch refused the job: sbatch: error: invalid partition specified: nope")
    assert RunStore(root).list() == []


@pytest.mark.parametrize("args, fragment", [
    (["--time", "1h"], "--time must be a Slurm time limit from 1 second to 4294967293 minutes: MINUTES, HH:MM:SS or "
                      "D-HH:MM:SS (e.g. 00:30:00), got '1h'"),
    (["--nodes", "0"], "argument --nodes: must be an integer from 1 to 2048, got '0'"),
    (["--gpus-per-node", "0"], "argument --gpus-per-node: must be an integer from 1 to 256, got '0'"),
    (["--partition", "gpu long"], "--partition must be a Slurm partition name"),
    (["--num-heads", "7"], "--num-heads 7 must divide --hidden-dim 64"),
    (["--parallel", "fsdp", "--version", "v4"], "--parallel fsdp cannot train v4"),
    (["--slurm-config", "nope.toml"], "--slurm-config nope.toml: no such file"),
])
def test_bad_input_is_one_line_and_leaves_no_run(capsys, root, args, fragment):
    code, out, err = submit(capsys, root, "--dry-run", *args)
    assert_one_line_error(code, err, fragment)
    assert "Traceback" not in err + out
    assert not root.exists()


def test_a_run_store_sbatch_cannot_name_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    code, out, err = submit(capsys, tmp_path / "my runs", "--dry-run")
    assert_one_line_error(code, err, "cannot go into an #SBATCH line")
    assert not (tmp_path / "my runs").exists()


def test_submit_help_says_the_store_must_be_shared(capsys):
    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "must be on a filesystem every node of the job sees at the same path" in text
    assert os.path.join("tinylab", "slurm.toml") in text

"""tinylab/runs/slurm.py against stand-in Slurm commands: the request (flags over the defaults file),
the state of a job (squeue, then sacct, kept a few seconds) and the status it gives a run, the
job script run by bash as Slurm would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.runs import tiny_config

from tinylab.runs import slurm
from tinylab.core.errors import UserError
from tinylab.core.eventlog import read_events
from tinylab.runs.engines import ENDPOINT_ENV
from tinylab.runs.launcher import SAFE_PATH, supervisor_argv
from tinylab.runs.store import Run, RunStore


# ----------------------------------------------------------------------------- the request
@pytest.mark.parametrize("value", ["30", "30:00", "01:30:00", "100:00:00", "2-00", "2-12:30", "1-00:00:00", "0:01"])
def test_slurm_time_forms_are_accepted(value):
    assert slurm.valid_time(value)


@pytest.mark.parametrize("value", ["1h", "", "01:60:00", "00:30:60", "1-24:00:00", "1-", "-1", "1:2:3:4", "30:61",
                                   "01:30:00\n#SBATCH --x",
                                   "99999999999999999999", "4294967295", "3000000-00:00:00",
                                   "0", "0:0:0", "00:00", "0-0:0:0"])  # Slurm reads 0 as no limit at all (issue 40)
def test_other_times_are_refused(value):
    assert not slurm.valid_time(value)


@pytest.fixture
def config_home(tmp_path, monkeypatch) -> Path:
    """$XDG_CONFIG_HOME in the test's folder: the user's own slurm.toml is never read."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "tinylab"


def test_flags_win_over_the_default_file(config_home):
    config_home.mkdir(parents=True)
    (config_home / "slurm.toml").write_text('partition = "gpu"\naccount = "proj1"\ntime = "01:00:00"\n')
    assert slurm.JobRequest.from_flags() == slurm.JobRequest("01:00:00", "gpu", "proj1")
    assert slurm.JobRequest.from_flags(time="00:10:00", account="other") == slurm.JobRequest("00:10:00", "gpu", "other")


def test_without_a_file_slurm_keeps_its_defaults(config_home):
    assert slurm.JobRequest.from_flags(partition="a,b") == slurm.JobRequest(None, "a,b", None)


def test_a_named_file_is_read_instead_of_the_default(config_home, tmp_path):
    config_home.mkdir(parents=True)
    (config_home / "slurm.toml").write_text('partition = "default"\n')
    mine = tmp_path / "mine.toml"
    mine.write_text('account = "mine"\n')
    assert slurm.JobRequest.from_flags(config_file=str(mine)) == slurm.JobRequest(None, None, "mine")


@pytest.mark.parametrize("text, fragment", [
    ('partition = "gpu"\nqos = "high"\n', "unknown key 'qos': the keys are partition, account, time"),
    ("time = 60\n", "time must be a string, got 60"),
    ('time = "1h"\n', "time must be a Slurm time limit"),
    ('account = "a b"\n', "account must be a Slurm account name"),
    ("partition = \n", "invalid TOML"),
])
def test_a_bad_defaults_file_is_one_line_naming_it(tmp_path, config_home, text, fragment):
    path = tmp_path / "slurm.toml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        slurm.JobRequest.from_flags(config_file=str(path))
    assert fragment in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_named_file_that_is_missing_is_an_error(tmp_path, config_home):
    with pytest.raises(UserError, match="--slurm-config .*nope.toml: no such file"):
        slurm.JobRequest.from_flags(config_file=str(tmp_path / "nope.toml"))


@pytest.mark.parametrize("flags, fragment", [
    (dict(time="2 hours"), "--time must be a Slurm time limit from 1 second to 4294967293 minutes: MINUTES, "
                           "HH:MM:SS or D-HH:MM:SS (e.g. 00:30:00), got '2 hours'"),
    (dict(partition="gpu\n#SBATCH --exclusive"), "--partition must be a Slurm partition name"),
    (dict(partition="a,,b"), "--partition must be a Slurm partition name"),
    (dict(account="x;rm"), "--account must be a Slurm account name of letters, digits"),
])
def test_bad_flags_are_one_line_errors(config_home, flags, fragment):
    with pytest.raises(UserError) as err:
        slurm.JobRequest.from_flags(**flags)
    assert fragment in str(err.value)


@pytest.mark.parametrize("nodes, gpus, fragment", [
    (0, 4, "--nodes must be an integer from 1 to 2048, got 0"),
    (2, 0, "--gpus-per-node must be an integer from 1 to 256, got 0"),
    (2, 257, "--gpus-per-node must be an integer from 1 to 256, got 257"),
])
def test_sizes_are_checked_by_their_flag_names(nodes, gpus, fragment):
    with pytest.raises(UserError, match=fragment):
        slurm.check_size(nodes, gpus)


def test_a_store_path_an_sbatch_line_cannot_hold_is_refused(tmp_path):
    slurm.check_store_path(tmp_path / "runs")
    for bad in ("my runs", "runs%j"):
        with pytest.raises(UserError, match="cannot go into an #SBATCH line"):
            slurm.check_store_path(tmp_path / bad)


# ----------------------------------------------------------------------------- the job record
def test_a_job_record_names_a_numeric_job_id():
    job = slurm.Job.from_record({"job_id": "42", "script": "/r/job.sbatch", "submitted": 1.5e9, "host": "login1"})
    assert job == slurm.Job("42", "/r/job.sbatch", 1.5e9, "login1")
    assert slurm.Job.from_record(job.record()) == job
    for bad in ("--help", "", 42, None, "12;cluster"):
        assert slurm.Job.from_record({"job_id": bad}) is None


def test_a_failure_is_named_from_slurms_state():
    assert slurm.Job("7", state="TIMEOUT").failure == "Slurm job 7 ended TIMEOUT: it reached its time limit (--time)"
    assert slurm.Job("7", state="CANCELLED").failure is None
    assert slurm.Job("7", state="COMPLETED").failure is None


def test_the_running_job_is_the_runs_own_only_by_its_name(tmp_path):
    run_dir = tmp_path / "20260101-000000-aaaa"
    env = {"SLURM_JOB_ID": "55", "SLURM_JOB_NAME": "tinylab-20260101-000000-aaaa", "SLURM_SUBMIT_HOST": "login1"}
    assert slurm.running_job(run_dir, env) == slurm.Job("55", str(run_dir / "job.sbatch"), None, "login1")
    assert slurm.running_job(run_dir, {**env, "SLURM_JOB_NAME": "interactive"}) is None  # an salloc shell
    assert slurm.running_job(run_dir, {}) is None


# ----------------------------------------------------------------------------- asking Slurm
@pytest.mark.parametrize("state, summarized, status", [
    ("PENDING", False, "queued"),
    ("REQUEUE_HOLD", False, "queued"),
    ("RUNNING", False, "running"),
    ("CONFIGURING", False, "running"),
    ("COMPLETING", True, "running"),
    ("CANCELLED", False, "cancelled"),
    ("CANCELLED", True, None),  # cancelled after its summary: the files say finished
    ("FAILED", False, "failed"),
    ("TIMEOUT", False, "failed"),
    ("OUT_OF_MEMORY", False, "failed"),
    ("NODE_FAIL", False, "failed"),
    ("PREEMPTED", False, "failed"),
    ("TIMEOUT", True, None),
    ("COMPLETED", False, None),  # the files say how it ended (lost without a summary)
    ("", False, None),  # Slurm no longer knows the job
    (None, False, "remote"),  # no Slurm here
    ("SOME_NEW_STATE", False, "remote"),
])
def test_status_of_a_slurm_state(state, summarized, status):
    assert slurm.status_of(state, summarized) == status


def test_squeue_answers_while_the_controller_holds_the_job_then_sacct(fake_slurm):
    fake_slurm.job("7", squeue="PENDING", sacct="PENDING")
    assert slurm.job_state("7") == "PENDING"
    assert [c["argv"] for c in fake_slurm.calls()] == [["-h", "-j", "7", "-o", "%T"]]
    fake_slurm.job("7", squeue=None, sacct="CANCELLED by 1000")
    assert slurm.job_state("7") == "CANCELLED"
    assert fake_slurm.calls()[-1] == {"tool": "sacct", "argv": ["-n", "-X", "-P", "-j", "7", "-o", "State"],
                                      "env": {}, "cwd": os.getcwd()}


def test_sacct_is_read_unabridged(fake_slurm):
    """sacct cuts its columns at 10 characters unless -P: OUT_OF_MEMORY would read OUT_OF_ME+."""
    fake_slurm.job("8", squeue=None, sacct="OUT_OF_MEMORY")
    assert slurm.job_state("8") == "OUT_OF_MEMORY"


def test_a_job_slurm_does_not_know_and_no_slurm_at_all(fake_slurm, monkeypatch, tmp_path):
    assert slurm.job_state("9") == ""  # squeue fails on the id, sacct has no record
    fake_slurm.write(accounting=False)
    assert slurm.job_state("9") is None  # both commands fail: nobody can tell
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert slurm.job_state("9") is None
    assert slurm.status_of(slurm.job_state("9"), False) == "remote"


def test_a_hung_squeue_costs_a_listing_one_timeout(fake_slurm, monkeypatch, tmp_path):
    """`tinylab runs` took 122 s when squeue hung: 30 s a command a Slurm run. Now a command that
    did not answer is killed (with what it started) and not asked again for a while."""
    import time

    from support.runs import make_run

    hung = tmp_path / "hung"
    hung.mkdir()
    for tool in ("squeue", "sacct"):
        (hung / tool).write_text("#!/bin/sh\nsleep 60 &\nsleep 60\n")
        (hung / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{hung}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(slurm, "QUERY_TIMEOUT_S", 0.5)
    for k in range(4):
        run = make_run(tmp_path / "runs", f"20260101-000000-000{k}", [])
        (run.dir / slurm.JOB_FILE).write_text(f'{{"job_id": "{100 + k}"}}')
    started = time.monotonic()
    statuses = [run.status() for run in RunStore(tmp_path / "runs").list()]
    assert time.monotonic() - started < 3.0  # one timeout each of squeue and sacct, not eight
    assert statuses == ["remote"] * 4  # nobody could say whether the jobs live


def test_answers_are_kept_a_few_seconds_and_an_ended_jobs_for_good(fake_slurm, monkeypatch):
    monkeypatch.setattr(slurm, "CACHE_S", 60.0)
    fake_slurm.job("7", squeue="RUNNING", sacct="RUNNING")
    assert [slurm.job_state("7") for _ in range(5)] == ["RUNNING"] * 5
    assert len(fake_slurm.calls("squeue")) == 1
    monkeypatch.setattr(slurm, "CACHE_S", 0.0)
    fake_slurm.job("7", squeue="COMPLETED", sacct="COMPLETED")
    assert slurm.job_state("7") == "COMPLETED"
    assert len(fake_slurm.calls("squeue")) == 2
    fake_slurm.job("7", squeue="RUNNING", sacct="RUNNING")  # cannot happen: an ended job is not asked again
    assert slurm.job_state("7") == "COMPLETED"
    assert len(fake_slurm.calls("squeue")) == 2


def test_sbatch_refusal_and_scancel_failure_are_one_line_errors(fake_slurm, tmp_path):
    script = tmp_path / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --partition=nope\ntrue\n")
    fake_slurm.write(sbatch_error="invalid partition specified: nope")
    with pytest.raises(UserError, match="sbatch refused the job: sbatch: error: invalid partition specified: nope"):
        slurm.sbatch(script)
    with pytest.raises(UserError, match="scancel 5 failed: .*Invalid job id specified"):
        slurm.scancel("5")


# ----------------------------------------------------------------------------- the script, run
def write_script(store: RunStore, nodes: int, gpus: int) -> Run:
    run = store.create(tiny_config(nnodes=nodes, nproc_per_node=gpus, parallel="ddp"))
    run_dir = run.dir.resolve()
    text = slurm.job_script(run_dir, run.config(), slurm.JobRequest("00:05:00"), supervisor_argv(run_dir))
    (run.dir / slurm.SCRIPT_FILE).write_text(text)
    return run


def run_script(run: Run, job_id: str, nodelist: str, timeout: float = 60, **env) -> subprocess.CompletedProcess:
    """The script as Slurm runs it on the job's first node: bash, with the job's variables set."""
    job_env = {**os.environ, "SLURM_JOB_ID": job_id, "SLURM_JOB_NAME": slurm.job_name(run.id),
               "SLURM_JOB_NODELIST": nodelist, "SLURM_CPUS_PER_TASK": "8", "SLURM_SUBMIT_HOST": "login1", **env}
    job_env.pop(ENDPOINT_ENV, None)
    return subprocess.run(["bash", str(run.dir / slurm.SCRIPT_FILE)], env=job_env, capture_output=True, text=True,
                          timeout=timeout, cwd="/")


def test_the_script_starts_torchrun_on_every_node_through_srun(fake_slurm, store):
    """Two nodes: the script finds the first node and the job's port, and the supervisor hands srun
    torchrun's c10d rendezvous there; a script submitted by hand records its job when it starts."""
    run = write_script(store, nodes=2, gpus=4)
    proc = run_script(run, "1234", "gpu[07-08]")
    assert proc.returncode == 0, proc.stderr
    [hosts] = fake_slurm.calls("scontrol")
    assert hosts["argv"] == ["show", "hostnames", "gpu[07-08]"]
    [srun] = fake_slurm.calls("srun")
    assert srun["env"][ENDPOINT_ENV] == "gpu07:29734"  # 29500 + 1234 % 1000
    assert srun["env"]["SRUN_CPUS_PER_TASK"] == "8"
    assert "PYTHONSAFEPATH" not in srun["env"]  # -P goes on each rank's argv, not to the tools around it
    assert srun["cwd"] == str(run.dir.resolve())
    argv = srun["argv"]
    assert argv[:6] == ["--nodes", "2", "--ntasks-per-node", "1", "--kill-on-bad-exit=1", sys.executable]
    assert argv[argv.index("torch.distributed.run") + 1:] == [
        "--nproc-per-node", "4", "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "gpu07:29734",
        "--rdzv-id", run.id, "--no-python", sys.executable, *SAFE_PATH, "-m", "tinylab.training.trainer", "--config",
        str(run.dir.resolve() / "config.json")]
    assert read_events(run.dir / "events.jsonl").last("exit")["returncode"] == 0
    assert run.job == slurm.Job("1234", str(run.dir.resolve() / slurm.SCRIPT_FILE), None, "login1")
    assert not (run.dir / "nodes.txt").exists()  # srun started the other node: nothing to do by hand


def test_a_two_node_job_trains(fake_slurm, store):
    """The script end to end, its two nodes both this machine (srun runs torchrun twice, gloo ranks
    on the CPU): the ranks meet at the first node's endpoint and the run finishes."""
    run = write_script(store, nodes=2, gpus=1)
    proc = run_script(run, "4321", "localhost,localhost", timeout=240, SLURM_STANDIN_SRUN="run",
                      OMP_NUM_THREADS="1")  # two ranks share this machine's cores
    log = run.output_log.read_text() if run.output_log.exists() else ""
    assert proc.returncode == 0, (proc.stdout + proc.stderr + log)[-4000:]
    fake_slurm.job("4321", squeue=None, sacct="COMPLETED")
    record = run.record()
    assert record.status == "finished", (proc.stdout + proc.stderr)[-4000:]
    assert [r.rank for r in record.ranks] == [0, 1] and record.ranks_in_sync
    assert record.summary.params_trained == record.summary.params_total

"""What the supervisor starts (no process is started here): torchrun alone on one node, behind
srun on every node of a Slurm job of several, with the rendezvous the job script exported."""

from __future__ import annotations

import sys

import pytest
from support.runs import tiny_config

from tinylab.core.errors import UserError
from tinylab.runs.engines import ENDPOINT_ENV
from tinylab.runs import supervisor


@pytest.fixture
def run_dir(tmp_path):
    path = tmp_path / "20260101-000000-aaaa"
    path.mkdir()
    return path


def test_a_slurm_job_of_two_nodes_starts_torchrun_through_srun(run_dir, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "1234")
    monkeypatch.setenv(ENDPOINT_ENV, "gpu07:29734")
    cfg = tiny_config(nnodes=2, nproc_per_node=4, parallel="ddp")
    argv = supervisor.launch_argv(run_dir, cfg, None)
    assert argv[:5] == ["srun", "--nodes", "2", "--ntasks-per-node", "1"]
    assert argv[5] == "--kill-on-bad-exit=1"
    assert argv[6] == sys.executable
    rest = argv[argv.index("torch.distributed.run") + 1:]
    assert rest[:rest.index("--no-python")] == ["--nproc-per-node", "4", "--nnodes", "2", "--rdzv-backend", "c10d",
                                                "--rdzv-endpoint", "gpu07:29734", "--rdzv-id", run_dir.name]


def test_one_node_in_a_slurm_job_is_plain_torchrun(run_dir, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "1234")
    argv = supervisor.launch_argv(run_dir, tiny_config(nproc_per_node=2, parallel="ddp"), None)
    assert argv[0] == sys.executable and "srun" not in argv
    assert "--standalone" in argv


def test_several_nodes_outside_slurm_take_the_configs_endpoint(run_dir, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)
    argv = supervisor.launch_argv(run_dir, tiny_config(nnodes=2, parallel="ddp", rdzv_endpoint="head:29500"), None)
    assert argv[0] == sys.executable
    assert argv[argv.index("--rdzv-endpoint") + 1] == "head:29500"
    with pytest.raises(UserError, match="needs --rdzv-endpoint HOST:PORT, or `tinylab submit`"):
        supervisor.launch_argv(run_dir, tiny_config(nnodes=2, parallel="ddp"), None)


# ------------------------------------------------------------------------------ torchrun killed alone
FAKE_TORCHRUN = '''
import json, os, signal, socket, subprocess, sys, time
run_dir = sys.argv[1]
rank_code = """
import json, os, socket, sys, time, psutil
run_dir, rank = sys.argv[1], int(sys.argv[2])
os.makedirs(os.path.join(run_dir, "ranks"), exist_ok=True)
with open(os.path.join(run_dir, "ranks", f"rank{rank}.json"), "w") as fh:
    json.dump({"rank": rank, "pid": os.getpid(), "start_time": psutil.Process().create_time(),
               "host": socket.gethostname()}, fh)
time.sleep(1.5)  # still training when torchrun is killed
if rank == 0:
    with open(os.path.join(run_dir, "events.jsonl"), "a") as fh:
        for k in range(2):
            fh.write(json.dumps({"event": "rank", "time": time.time(), "rank": k}) + "\\\\n")
        fh.write(json.dumps({"event": "summary", "time": time.time(), "samples_per_s": 10.0}) + "\\\\n")
"""
for rank in range(2):  # torchrun starts every rank in a session of its own
    subprocess.Popen([sys.executable, "-c", rank_code, run_dir, str(rank)], start_new_session=True)
while len(os.listdir(os.path.join(run_dir, "ranks")) if os.path.isdir(os.path.join(run_dir, "ranks")) else []) < 2:
    time.sleep(0.05)
os.kill(os.getpid(), signal.SIGKILL)
'''


def test_torchrun_killed_while_its_ranks_train_on_is_no_failure(tmp_path):
    """SIGKILL of torchrun made the supervisor record "RankDied ... without recording an error" for
    both ranks at once, while they trained on and wrote a summary: a finished run read as failed."""
    import subprocess

    from support.runs import make_run

    run = make_run(tmp_path, "20260101-000000-aaaa", [], parallel="ddp", nproc_per_node=2)
    fake = tmp_path / "torchrun.py"
    fake.write_text(FAKE_TORCHRUN)
    start = ("import sys; from pathlib import Path; from tinylab.runs import supervisor as s; "
             f"s.launch_argv = lambda *a: [sys.executable, {str(fake)!r}, {str(run.dir)!r}]; "
             f"raise SystemExit(s.supervise(Path({str(run.dir)!r})))")
    done = subprocess.run([sys.executable, "-c", start], capture_output=True, text=True, timeout=60)
    log = run.events()
    assert [e["type"] for e in log.of("error")] == [], done.stdout + done.stderr
    assert log.last("summary") is not None and run.status() == "finished"
    exit_event = log.last("exit")
    assert exit_event["returncode"] == 0 and "torchrun was killed by SIGKILL" in exit_event["note"]

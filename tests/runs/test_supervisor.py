"""What the supervisor starts (no process is started here): torchrun alone on one node, behind
srun on every node of a Slurm job of several, with the rendezvous the job script exported."""

from __future__ import annotations

import sys

import pytest
from support.runs import tiny_config

from tinylab.errors import UserError
from tinylab.training.parallel import ENDPOINT_ENV
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

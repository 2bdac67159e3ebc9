"""Slurm through its own commands: the job script `tinylab submit` writes, and sbatch, squeue,
sacct and scancel, each called with an argv list.

A run submitted to Slurm is a normal run folder plus `job.sbatch` (the script) and `job.json`
(the job id sbatch gave, when, and from which host). The script runs one supervisor on the job's
first node; for a job of several nodes the supervisor starts torchrun on every node through srun
(`srun_argv`, used by tinylab/runs/supervisor.py), and the nodes meet at the first one, whose
address the script puts in TINYLAB_RDZV_ENDPOINT. While there is no `exit` event, a run's status
comes from Slurm: squeue while the controller holds the job, then sacct; each answer is kept a
few seconds per job (a job that has ended keeps its answer), so a view refreshing every second
does not start a squeue per run per second.

Nothing here imports the run store: the store asks this module (tinylab/runs/store.py).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinylab.core import childproc, tomlfile
from tinylab.config import MAX_PER_NODE, MAX_WORLD, RunConfig
from tinylab.core.errors import UserError
from tinylab.runs.engines import ENDPOINT_ENV

SCRIPT_FILE = "job.sbatch"
JOB_FILE = "job.json"
#: Set by Slurm in every job: under it, the supervisor of a run of several nodes starts torchrun through srun.
JOB_ENV = "SLURM_JOB_ID"
#: CPU cores a rank asks for: its Python thread, the telemetry sampler, torchrun's agent and the supervisor.
CPUS_PER_GPU = 4
#: The first node listens for the others here, plus the job id modulo RDZV_PORTS: two jobs sharing a node rarely meet.
RDZV_PORT = 29500
RDZV_PORTS = 1000
#: How long an answer about a live job is kept (seconds); an ended job's answer is kept for good.
CACHE_S = 5.0
#: The longest sbatch or scancel may take to answer (a busy controller) before it counts as no answer.
CALL_TIMEOUT_S = 30.0
#: The same for the status queries (squeue, sacct): a listing asks one per Slurm run.
QUERY_TIMEOUT_S = 5.0
#: After a command did not answer in time, it is not asked again for this long: a hung squeue costs
#: a listing of many Slurm runs one timeout, not one a run.
SILENT_S = 60.0

QUEUED = frozenset({"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD"})
RUNNING = frozenset({"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED", "RESIZING", "SIGNALING",
                     "STAGE_OUT"})
#: Job states that end a run as failed, and what each means for a learner.
FAILED: dict[str, str] = {
    "FAILED": "the job's script exited non-zero",
    "TIMEOUT": "it reached its time limit (--time)",
    "OUT_OF_MEMORY": "a node ran out of host memory",
    "NODE_FAIL": "one of its nodes failed",
    "PREEMPTED": "a job of higher priority took its nodes",
    "BOOT_FAIL": "its nodes did not boot",
    "DEADLINE": "it reached its deadline",
    "SPECIAL_EXIT": "it ended in Slurm's special-exit state",
    "REVOKED": "it was revoked",
}
ENDED = frozenset({"COMPLETED", "CANCELLED", *FAILED})

#: Slurm counts a time limit in minutes in 32 bits, below its "no value" marker: sbatch refuses more.
MAX_TIME_MINUTES = 0xFFFFFFFE - 1
_TIME = re.compile(r"(?:(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?)")
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
#: What a path in an #SBATCH line may hold: sbatch splits those lines on blanks and expands `%`.
_DIRECTIVE_PATH = re.compile(r"[A-Za-z0-9_./+@:=,~\-]+")
_JOB_ID = re.compile(r"\d+")
CONFIG_KEYS = ("partition", "account", "time")


# ----------------------------------------------------------------------------- the request
@dataclass(frozen=True)
class JobRequest:
    """What a job asks of Slurm besides its size (the run's --nnodes x --nproc-per-node): each None
    leaves it to Slurm's defaults (the partition's time limit, the user's default account)."""

    time: str | None = None
    partition: str | None = None
    account: str | None = None

    @classmethod
    def from_flags(cls, time: str | None = None, partition: str | None = None, account: str | None = None,
                   config_file: str | None = None) -> "JobRequest":
        """The flags, over the defaults of `config_file` (or of default_config_path() when it exists)."""
        path = Path(config_file).expanduser() if config_file else default_config_path()
        defaults = read_defaults(path, explicit=bool(config_file))
        given = {"time": time, "partition": partition, "account": account}
        for key, value in given.items():
            if value is not None:
                _check(key, value, f"--{key}")
        return cls(**{key: given[key] if given[key] is not None else defaults.get(key) for key in CONFIG_KEYS})


def default_config_path() -> Path:
    """$XDG_CONFIG_HOME/tinylab/slurm.toml (~/.config/tinylab/slurm.toml when unset)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tinylab" / "slurm.toml"


def read_defaults(path: Path, explicit: bool) -> dict[str, str]:
    """partition, account and time from a TOML file, each checked; {} when the default file is absent."""
    from tinylab.core.safeio import UnsafeFile, read_bounded

    try:
        text = read_bounded(path, 64 << 10, follow_links=True).decode("utf-8")
    except FileNotFoundError:
        if explicit:
            raise UserError(f"--slurm-config {path}: no such file") from None
        return {}
    except (OSError, UnsafeFile, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the Slurm defaults {path}: {exc}") from None
    try:
        data = tomlfile.loads(text)
    except UserError:
        raise
    except Exception as exc:  # tomllib.TOMLDecodeError, tomli's: the message names the line
        raise UserError(f"{path}: invalid TOML: {exc}") from None
    for key, value in data.items():
        if key not in CONFIG_KEYS:
            raise UserError(f"{path}: unknown key {key!r}: the keys are {', '.join(CONFIG_KEYS)}")
        if not isinstance(value, str):
            raise UserError(f"{path}: {key} must be a string, got {value!r}")
        _check(key, value, f"{path}: {key}")
    return data


def _check(key: str, value: str, name: str) -> None:
    if key == "time":
        if not valid_time(value):
            raise UserError(f"{name} must be a Slurm time limit from 1 second to {MAX_TIME_MINUTES} minutes: "
                            f"MINUTES, HH:MM:SS or D-HH:MM:SS (e.g. 00:30:00), got {value!r}"[:300])
    elif not (_NAME.fullmatch(value) or (key == "partition" and all(_NAME.fullmatch(p) for p in value.split(",")))):
        several = " (several: comma-separated)" if key == "partition" else ""
        raise UserError(f"{name} must be a Slurm {key} name of letters, digits, '_', '-' and '.'{several}, "
                        f"got {value!r}")


def valid_time(value: str) -> bool:
    """One of sbatch's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (minutes and seconds below
    60 after a larger unit, hours below 24 after days), of 1 second or more: Slurm reads a limit of
    0 as none at all, the opposite of what `--time 0:0:0` looks like."""
    m = _TIME.fullmatch(value)
    if m is None or any(len(v) > 9 for v in m.groups() if v is not None):
        return False
    days, d_hours, d_minutes, d_seconds, first, second, third = m.groups()
    if days is not None:
        minutes = int(days) * 1440 + int(d_hours) * 60 + int(d_minutes or 0)
        ok = int(d_hours) < 24 and all(int(v) < 60 for v in (d_minutes, d_seconds) if v is not None)
    elif third is not None:  # H:M:S
        minutes = int(first) * 60 + int(second)
        ok = int(second) < 60 and int(third) < 60
    else:  # M or M:S
        minutes = int(first)
        ok = second is None or int(second) < 60
    given = any(int(v) for v in m.groups() if v is not None)
    return ok and given and minutes <= MAX_TIME_MINUTES


def check_size(nodes: Any, gpus_per_node: Any) -> None:
    """--nodes and --gpus-per-node, named as `tinylab submit` takes them."""
    for name, value, most in (("--nodes", nodes, MAX_WORLD), ("--gpus-per-node", gpus_per_node, MAX_PER_NODE)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
            raise UserError(f"{name} must be an integer from 1 to {most}, got {value!r}")


def check_store_path(root: Path) -> None:
    """The run store's path goes into the script's #SBATCH --output line, which takes no blanks or `%`."""
    where = str(root.resolve())
    if not _DIRECTIVE_PATH.fullmatch(where):
        raise UserError(f"the run store {where} cannot go into an #SBATCH line (blanks, '%', quotes and the like): "
                        "use --runs-dir with a path of letters, digits and _ . / + @ : = , ~ -")


# ----------------------------------------------------------------------------- the script
def job_name(run_id: str) -> str:
    return f"tinylab-{run_id}"


def job_script(run_dir: Path, cfg: RunConfig, request: JobRequest, supervisor: list[str]) -> str:
    """The sbatch script of a run: `run_dir` (absolute) on a filesystem every node sees, `supervisor`
    the argv that owns the run (tinylab/runs/launcher.py's supervisor_argv)."""
    nodes, gpus = cfg.nnodes, cfg.nproc_per_node
    sbatch = {
        "job-name": job_name(run_dir.name),
        "nodes": nodes,
        "ntasks-per-node": 1,
        "gpus-per-node": gpus if cfg.device != "cpu" else None,  # --device cpu: gloo ranks, no GPU asked for
        "cpus-per-task": CPUS_PER_GPU * gpus,
        "time": request.time,
        "partition": request.partition,
        "account": request.account,
        "output": run_dir / "output.log",
        "open-mode": "append",
    }
    unit = "rank" if cfg.device == "cpu" else "GPU"
    size = f"{nodes} node{'s' if nodes > 1 else ''} x {gpus} {unit}{'s' if gpus > 1 else ''}"
    lines = [
        "#!/bin/bash",
        f"# tinylab run {run_dir.name}: {size}, written by `tinylab submit`.",
        "# The run folder must be on a filesystem every node of the job sees at the same path (the ranks",
        "# write their events and profiles into it), and so must this Python with tinylab installed.",
        *(f"#SBATCH --{key}={value}" for key, value in sbatch.items() if value is not None),
        "# Slurm must not requeue the job: a second start would write into this same run folder",
        "#SBATCH --no-requeue",
        "",
        "set -eu",
        "export PYTHONUNBUFFERED=1",
        "# The network settings are the cluster's (NCCL_SOCKET_IFNAME, NCCL_IB_HCA and the like): the job",
        "# inherits the environment `tinylab submit` ran in, or set them here.",
    ]
    if nodes > 1:
        lines += [
            "# The nodes meet at the job's first node (where this script runs), on a port of this job's own.",
            'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
            ': "${head:?scontrol found no node in $SLURM_JOB_NODELIST}"',
            f'export {ENDPOINT_ENV}="$head:$(({RDZV_PORT} + SLURM_JOB_ID % {RDZV_PORTS}))"',
            "# srun does not pass --cpus-per-task on to its tasks (Slurm 22.05 and later) unless told to",
            'export SRUN_CPUS_PER_TASK="$SLURM_CPUS_PER_TASK"',
            "# One supervisor, on this node: it starts torchrun on every node through srun, and records how",
            "# the run ends.",
        ]
    else:
        lines.append("# The supervisor starts the run on this node and records how it ends.")
    lines += [f"cd {shlex.quote(str(run_dir))}", shlex.join(supervisor), ""]
    return "\n".join(lines)


def srun_argv(cfg: RunConfig) -> list[str]:
    """What starts torchrun once on every node of the job: one task a node, all stopped when one fails."""
    return ["srun", "--nodes", str(cfg.nnodes), "--ntasks-per-node", "1", "--kill-on-bad-exit=1"]


# ----------------------------------------------------------------------------- the job record
@dataclass(frozen=True)
class Job:
    """job.json: the Slurm job a run was submitted as; `state` is Slurm's answer when asked."""

    id: str
    script: str | None = None
    submitted: float | None = None
    host: str | None = None
    state: str | None = None

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "Job | None":
        """The job of a job.json object; None when it names no job id (a damaged file)."""
        job_id = data.get("job_id")
        if not isinstance(job_id, str) or not _JOB_ID.fullmatch(job_id):
            return None
        submitted, script, host = data.get("submitted"), data.get("script"), data.get("host")
        when = float(submitted) if isinstance(submitted, (int, float)) and not isinstance(submitted, bool) else None
        return cls(job_id, script if isinstance(script, str) else None, when, host if isinstance(host, str) else None)

    def record(self) -> dict[str, Any]:
        return {"job_id": self.id, "script": self.script, "submitted": self.submitted, "host": self.host}

    @property
    def failure(self) -> str | None:
        """Why Slurm ended the job, when its state is a failure."""
        if self.state not in FAILED:
            return None
        return f"Slurm job {self.id} ended {self.state}: {FAILED[self.state]}"


def running_job(run_dir: Path, env: dict[str, str] | os._Environ = os.environ) -> Job | None:
    """The job this process runs in, when it is the run's own (its name is the run's: the script's)."""
    if JOB_ENV not in env or env.get("SLURM_JOB_NAME") != job_name(run_dir.name) or not _JOB_ID.fullmatch(env[JOB_ENV]):
        return None
    return Job(env[JOB_ENV], str(run_dir / SCRIPT_FILE), None, env.get("SLURM_SUBMIT_HOST"))


# ----------------------------------------------------------------------------- the commands
def sbatch_missing() -> str | None:
    """Why sbatch cannot submit from here, or None."""
    if shutil.which("sbatch") is None:
        return ("sbatch is not on PATH (no Slurm here): submit from a Slurm login node, or add --dry-run to "
                "write the script without submitting it")
    return None


def sbatch(script: Path) -> str:
    """Submit the script; the job id, or UserError with sbatch's own complaint."""
    proc = _call(["sbatch", "--parsable", str(script)])
    if isinstance(proc, str):
        raise UserError(f"sbatch did not submit the job: {proc}")
    if proc.returncode != 0:
        raise UserError(f"sbatch refused the job: {_last_line(proc.stderr) or f'exit code {proc.returncode}'}")
    job_id = proc.stdout.strip().split(";")[0]  # --parsable: "ID" or "ID;CLUSTER"
    if not _JOB_ID.fullmatch(job_id):
        raise UserError(f"sbatch answered {proc.stdout.strip()[:80]!r}, not a job id")
    return job_id


def scancel(job_id: str) -> None:
    proc = _call(["scancel", job_id])
    if isinstance(proc, str):
        raise UserError(f"cannot cancel Slurm job {job_id} from here: {proc}")
    if proc.returncode != 0:
        raise UserError(f"scancel {job_id} failed: {_last_line(proc.stderr) or f'exit code {proc.returncode}'}")
    _answers.pop(job_id, None)


_answers: dict[str, tuple[float, str | None]] = {}


def job_state(job_id: str) -> str | None:
    """Slurm's state of a job (PENDING, RUNNING, COMPLETED, CANCELLED, FAILED, TIMEOUT ...): squeue's
    while the controller holds the job, else sacct's; "" when Slurm here does not know the job;
    None when no Slurm answers here (neither command on PATH, or both failing)."""
    now = time.monotonic()
    kept = _answers.get(job_id)
    if kept is not None and (kept[1] in ENDED or now - kept[0] < CACHE_S):
        return kept[1]
    state = _ask(job_id)
    _answers[job_id] = (now, state)
    return state


def status_of(state: str | None, summarized: bool) -> str | None:
    """A run's status from its job's state (job_state), or None where the run's own files decide:
    the job completed, Slurm no longer knows it, or it ended after the run wrote its summary."""
    if state is None:
        return "remote"  # no Slurm to ask here
    if state in QUEUED:
        return "queued"
    if state in RUNNING:
        return "running"
    if state and state not in ENDED:
        return "remote"  # a state this tinylab does not know: whether the job lives cannot be told
    if summarized:
        return None
    if state == "CANCELLED":
        return "cancelled"
    return "failed" if state in FAILED else None


def _ask(job_id: str) -> str | None:
    answered = False
    for argv in (["squeue", "-h", "-j", job_id, "-o", "%T"],
                 ["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"]):
        proc = _call(argv, QUERY_TIMEOUT_S)
        if isinstance(proc, str) or proc.returncode != 0:
            continue  # absent, or it failed (squeue of a job the controller forgot, accounting off)
        answered = True
        words = proc.stdout.split()  # sacct writes "CANCELLED by 1000"
        if words:
            return words[0].upper()
    return "" if answered else None


#: command -> when it last failed to answer in time (time.monotonic()), see SILENT_S.
_silent: dict[str, float] = {}


def _call(argv: list[str], timeout: float = CALL_TIMEOUT_S) -> subprocess.CompletedProcess | str:
    """The finished command, or why it could not be run (tinylab.core.childproc.run_bounded: killed with
    what it started after `timeout` seconds, its output bounded)."""
    name = argv[0]
    if shutil.which(name) is None:
        return f"{name} is not on PATH"
    since = _silent.get(name)
    if since is not None and time.monotonic() - since < SILENT_S:
        return f"{name} did not answer within {timeout:.0f} s {time.monotonic() - since:.0f} s ago"
    try:
        return childproc.run_bounded(argv, timeout)
    except subprocess.TimeoutExpired:
        _silent[name] = time.monotonic()
        return f"{name} did not answer within {timeout:.0f} s"
    except OSError as exc:
        return f"could not start {name}: {exc.strerror or exc}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""

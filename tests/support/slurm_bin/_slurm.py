"""Shared by the stand-in Slurm commands in this folder (stdlib only).

Each stand-in appends the argv it got (and the environment variables a test asks about) to
calls.jsonl in $SLURM_STANDIN_DIR, and answers from state.json there, which the test writes:

    {"next_id": 4242,
     "jobs": {"4242": {"squeue": "PENDING", "sacct": "PENDING"}},
     "accounting": true,             # false: sacct fails as with accounting storage disabled
     "sbatch_error": null}           # a message: sbatch refuses every job with it

`squeue` is what the controller reports while it holds the job (null once it has forgotten it:
squeue then fails with "Invalid job id specified", as real squeue does); `sacct` is the
accounting record's state (null: none yet). The commands accept the flags tinylab uses of the
real ones and fail like them on anything else.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(os.environ["SLURM_STANDIN_DIR"])
STATE = HERE / "state.json"
#: Environment variables recorded with each call (what the job script exports for srun).
SEEN_ENV = ("TINYLAB_RDZV_ENDPOINT", "SRUN_CPUS_PER_TASK", "SLURM_JOB_ID", "PYTHONSAFEPATH")


def log_call(tool: str) -> None:
    env = {k: os.environ[k] for k in SEEN_ENV if k in os.environ}
    with open(HERE / "calls.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"tool": tool, "argv": sys.argv[1:], "env": env, "cwd": os.getcwd()}) + "\n")


def load() -> dict:
    return json.loads(STATE.read_text()) if STATE.exists() else {"next_id": 1000, "jobs": {}}


def save(state: dict) -> None:
    tmp = STATE.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(STATE)


def fail(tool: str, message: str, code: int = 1) -> None:
    print(f"{tool}: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def options(argv: list[str], tool: str, flags: dict[str, bool]) -> tuple[dict[str, str | bool], list[str]]:
    """argv split into {option: value} (flags[name] says whether it takes a value) and the rest."""
    found: dict[str, str | bool] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if not arg.startswith("-"):
            rest.append(arg)
        elif name not in flags:
            fail(tool, f"unrecognized option '{arg}'")
        elif flags[name] and not eq:
            if i + 1 >= len(argv):
                fail(tool, f"option '{name}' requires an argument")
            i += 1
            found[name] = argv[i]
        else:
            found[name] = value if eq else True
        i += 1
    return found, rest

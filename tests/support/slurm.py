"""A Slurm of stand-ins for the tests: tests/support/slurm_bin first on PATH, answering from a
state file the test controls (tests/support/slurm_bin/_slurm.py describes it)."""

from __future__ import annotations

import json
from pathlib import Path


class FakeSlurm:
    def __init__(self, folder: Path):
        self.folder = folder

    @property
    def state(self) -> dict:
        path = self.folder / "state.json"
        return json.loads(path.read_text()) if path.exists() else {"next_id": 1000, "jobs": {}}

    def write(self, **changes) -> None:
        (self.folder / "state.json").write_text(json.dumps({**self.state, **changes}))

    def job(self, job_id: str, squeue: str | None = None, sacct: str | None = None) -> None:
        """What squeue (None: the controller has forgotten the job) and sacct say about a job."""
        self.write(jobs={**self.state["jobs"], job_id: {"squeue": squeue, "sacct": sacct}})

    def calls(self, tool: str | None = None) -> list[dict]:
        """Each call of a stand-in: its tool, argv, cwd and the environment variables it records."""
        path = self.folder / "calls.jsonl"
        found = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        return [c for c in found if tool is None or c["tool"] == tool]

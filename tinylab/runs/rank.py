"""One rank of a profiled run of several: `python -m tinylab.runs.rank RUN_DIR`, started by torchrun.

It replaces itself (exec: the pid torchrun watches stays the rank's) with the run's profiler
wrapper around the trainer, writing into profiles/<tool>/rank<k>: one output set per process, as
AMD's own multi-process guides run rocprofv3 and rocprof-sys under a launcher, so no tool merges
ranks behind the learner's back.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tinylab.config import RunConfig
from tinylab.profilers.registry import wrapper_adapter
from tinylab.runs.supervisor import wrapped_trainer_argv


def argv_for(run_dir: Path, rank: int) -> list[str]:
    cfg = RunConfig.from_json_file(str(run_dir / "config.json"))
    return wrapped_trainer_argv(run_dir, cfg, wrapper_adapter(cfg), rank)


def main() -> None:
    argv = argv_for(Path(sys.argv[1]), int(os.environ["RANK"]))
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()

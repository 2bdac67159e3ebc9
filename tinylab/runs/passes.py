"""Counter passes: one clean run record when a profiler runs the program once per counter group.

A GPU counts only a few hardware counters at once, so rocprof-compute runs the program 15-25 times
(and rocprofv3 -i counters.txt once per line), each a whole training that would append to the
run's one events.jsonl: a 6-step run profiled in 4 passes became 24 steps and four summaries. The
tool tells the program nothing about which run it is in, so each trainer start claims the next
pass number itself (passes.log: one line a start, appended under a lock). Pass 1 writes the run's
events as usual. A later pass writes its own events.pass<k>.jsonl, trains only the warm-up and
EXTRA_STEPS steps (the counters need the same kernels, not the whole run; rocprof-compute joins its
passes dispatch by dispatch, so the dispatches of the short window are the ones it keeps), and
announces itself in the run's events with a `pass` event, so readers show "counter pass k of N".
The supervisor stores how many passes ran in the profile event.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path

from tinylab.config import RunConfig
from tinylab.core.eventlog import EVENTS_FILE
from tinylab.core.events import PassEvent
from tinylab.profilers.base import profile_dir
from tinylab.profilers.registry import wrapper_adapter
from tinylab.core.errors import UserError
from tinylab.core.safeio import open_append, read_bounded

PASSES_FILE = "passes.log"
#: Measured steps a later pass trains after the warm-up.
EXTRA_STEPS = 2


@dataclass(frozen=True)
class CounterPass:
    number: int  # 1-based
    planned: int | None  # runs the tool will make, when known
    tool: str
    steps: int  # steps this pass trains

    @property
    def events_file(self) -> str:
        return EVENTS_FILE if self.number == 1 else f"events.pass{self.number}.jsonl"

    @property
    def label(self) -> str:
        return PassEvent(self.number, self.planned).label


def window_steps(cfg: RunConfig) -> int:
    """Steps a pass after the first trains: the warm-up and EXTRA_STEPS more, at most the run's."""
    return min(cfg.num_steps, cfg.warmup_steps + EXTRA_STEPS)


def claim(run_dir: Path, cfg: RunConfig, arch: str | None) -> CounterPass | None:
    """This trainer start's pass, or None when the run's profiler runs the program once."""
    adapter = wrapper_adapter(cfg)
    out_dir = profile_dir(run_dir, adapter.name) if adapter else None
    if adapter is None or out_dir is None or not adapter.reruns_program(out_dir):
        return None
    with os.fdopen(open_append(run_dir / PASSES_FILE), "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released on close
        fh.seek(0)
        number = len(fh.read().splitlines()) + 1
        fh.write(f"{number} pid={os.getpid()} time={time.time():.3f}\n")
    steps = cfg.num_steps if number == 1 else window_steps(cfg)
    return CounterPass(number, adapter.planned_passes(out_dir, arch), adapter.name, steps)


def passes_run(run_dir: Path) -> int:
    """How many times the trainer started in this run (0: it was never run in passes)."""
    try:
        return len(read_bounded(Path(run_dir) / PASSES_FILE, 1 << 20).splitlines())
    except (OSError, UserError):
        return 0


def describe(count: int, tool: str, cfg: RunConfig) -> str:
    """Why there were several runs, and what the record holds: for the profile's note."""
    later = f"; passes 2-{count} trained {window_steps(cfg)} steps each (events.pass<k>.jsonl)" if count > 1 else ""
    return (f"{tool} ran the program {count} time{'s' if count != 1 else ''}, one pass per group of hardware "
            f"counters (a GPU counts only a few at once): steps and summary are pass 1's{later}")

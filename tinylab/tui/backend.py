"""The lab's only door to the engine: the run store, the launcher, doctor, hotspots, compare, exercises.

Every method blocks (file scans, psutil, pandas, subprocesses), so screens call them from thread
workers and only render the results. The app and the tests build one Backend each; tests inject a
fake doctor report, fake exercises and a frozen clock here instead of patching modules.

Modules written alongside the lab (doctor, hotspots, compare, exercises) are imported when first
used: a missing one becomes a `Missing` error that the screen shows in place, never a crash.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tinylab.errors import UserError
from tinylab.runs.store import Run, RunStore


class Missing(UserError):
    """A part of tinylab that this build does not have (yet)."""


def optional_module(name: str, what: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise Missing(f"{what} is not available yet ({name}: {exc})") from None


@dataclass
class Backend:
    runs_dir: Path | str | None = None
    clock: Callable[[], float] = time.time
    doctor_result: dict[str, Any] | None = None
    exercises_api: Any = None
    poll_s: float = 0.3
    _doctor_cache: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _scenarios: list[Any] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.store = RunStore(self.runs_dir)

    # ------------------------------------------------------------------ runs
    def run(self, run_id: str) -> Run:
        return self.store.resolve(run_id)

    def infos(self) -> list[dict[str, Any]]:
        """info() of every run, oldest first; a run whose folder vanished mid-scan is skipped."""
        out = []
        for run in self.store.list():
            try:
                out.append(run.info())
            except OSError:
                continue
        return out

    def launch(self, cfg) -> Run:
        from tinylab.runs.launcher import launch

        return launch(self.store, cfg)

    def cancel(self, run_id: str) -> bool:
        from tinylab.runs.launcher import cancel

        return cancel(self.run(run_id))

    # ---------------------------------------------------------------- doctor
    def doctor(self, stop: Callable[[], bool] = lambda: False) -> dict[str, Any]:
        """`tinylab doctor --json`, once per app.

        In a child process: doctor imports torch and deepspeed to probe them, which would cost
        the lab seconds of GIL time and hundreds of MB for the rest of its life. `stop` is polled
        so that quitting the lab does not wait for the probes (the child is killed).
        """
        if self.doctor_result is not None:
            return self.doctor_result
        if self._doctor_cache is None:
            optional_module("tinylab.doctor", "doctor")
            with subprocess.Popen([sys.executable, "-m", "tinylab", "doctor", "--json"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
                while True:
                    try:
                        out, err = proc.communicate(timeout=0.1)
                        break
                    except subprocess.TimeoutExpired:
                        if stop():
                            proc.kill()
                            raise Missing("doctor was stopped") from None
            if proc.returncode != 0:
                last = (err.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
                raise UserError(f"tinylab doctor failed: {last}")
            self._doctor_cache = json.loads(out)
        return self._doctor_cache

    # -------------------------------------------------------------- analysis
    def kernel_table(self, run_id: str):
        """(DataFrame, format) of the run's newest kernel table, or None."""
        hotspots = optional_module("tinylab.analysis.hotspots", "the hotspot table")
        return hotspots.load_run_kernel_table(self.run(run_id).dir)

    def roofline_text(self, run_id: str, width: int) -> str:
        """The run's roofline as text, from ceilings already measured on its card (never measures:
        that needs torch and the GPU, which the lab does not load)."""
        from tinylab.analysis import roofline
        from tinylab.errors import UserError

        run = self.run(run_id)
        device = run.info()["device_name"]
        ceilings = roofline.cached_ceilings(self.store.root, device)
        if ceilings is None:
            return (f"No ceilings measured for {device or 'this device'} yet. On that GPU run "
                    f"`tinylab roofline {run_id}` once: it measures copy bandwidth and GEMM rates and keeps "
                    "them beside the runs, and this panel draws the roofline from then on.")
        try:
            result, title, has_table = roofline.for_run(run, ceilings)
        except UserError as exc:
            return str(exc)
        text = roofline.render(result, title, width=max(40, width), height=16)
        return text if has_table else text + "\nProfile the run to place its kernels too."

    def compare(self, a_id: str, b_id: str) -> dict[str, Any]:
        compare = optional_module("tinylab.analysis.compare", "run comparison")
        return compare.compare_runs(self.run(a_id), self.run(b_id))

    # ------------------------------------------------------------- exercises
    def exercises(self):
        """tinylab.exercises (load_scenarios, step_config, evaluate_checks, record_progress), or a fake."""
        if self.exercises_api is not None:
            return self.exercises_api
        return optional_module("tinylab.exercises", "the guided exercises")

    def scenarios(self) -> list[Any]:
        """Loaded and validated once per app: the files do not change under a learner."""
        if self._scenarios is None:
            self._scenarios = self.exercises().load_scenarios()
        return self._scenarios

    def scenario(self, scenario_id: str):
        for scenario in self.scenarios():
            if scenario.id == scenario_id:
                return scenario
        raise UserError(f"no exercise {scenario_id!r}")

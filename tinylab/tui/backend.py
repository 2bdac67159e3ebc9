"""The lab's door to the engine: tinylab.service.Lab, plus what only a long-lived screen needs.

Every method blocks (file scans, psutil, pandas, subprocesses), so screens call them from thread
workers and post the results as messages. On top of Lab it adds the clock the screens show ages
with, the poll interval of live views, and the doctor report, collected in a child process (see
`doctor`), which also tells the lab what the machine offers a run. Tests inject a frozen clock,
a fake doctor report and their own exercises folder here instead of patching modules.
"""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from tinylab.core import childproc
from tinylab.config import RunConfig
from tinylab.core.errors import UserError
from tinylab.service.doctor import DoctorReport
from tinylab.service.lab import Lab, NoCeilings
from tinylab.service.machine import Machine


class DoctorStopped(UserError):
    """The doctor child was stopped because the lab is closing."""


class _NoFileno:
    """sys.stderr as the lab captures it, less its fileno() (see _start_resource_tracker)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def fileno(self) -> int:
        raise OSError("no file descriptor")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker, which every process pool needs, without a stderr.

    While the app runs, Textual captures sys.stderr with an object whose fileno() is -1; the
    tracker passes that number to its child as a descriptor to keep, and the spawn fails with
    "bad value(s) in fds_to_keep". A fileno() that raises makes the tracker go without one.
    """
    from multiprocessing import resource_tracker

    saved = sys.stderr
    sys.stderr = _NoFileno(saved)
    try:
        resource_tracker.ensure_running()
    finally:
        sys.stderr = saved


class Backend(Lab):
    def __init__(self, runs_dir: Path | str | None = None, *, clock: Callable[[], float] = time.time,
                 doctor_result: DoctorReport | None = None, exercises_root: Path | None = None,
                 poll_s: float = 0.3) -> None:
        super().__init__(runs_dir, exercises_root=exercises_root, machine=self._machine_from_doctor)
        self.clock = clock
        self.poll_s = poll_s
        self.doctor_result = doctor_result
        self._probed: Machine | None = None  # only when the doctor child failed
        self._kernel_pool: Any = None  # the anatomy's Pool (tinylab.service.kernels), started by the first compile
        self._kernel_pool_lock = threading.Lock()

    def _machine_from_doctor(self) -> Machine:
        """The machine as the doctor child saw it (a CPU machine until it has answered)."""
        return Machine.from_doctor(self.doctor_result)

    @property
    def knows_machine(self) -> bool:
        """Whether the doctor report (what the machine offers) has arrived."""
        return self.doctor_result is not None

    @functools.cached_property
    def knows_device(self) -> bool:
        """Whether the device a run gets is known before the doctor answers: on a machine with no
        GPU device node it is the CPU (the doctor takes seconds; the form needs its sizes now)."""
        return self.knows_machine or not Machine.gpu_devices()

    @property
    def machine(self) -> Machine:
        # not cached: the doctor report arrives after the first frame
        if self._probed is None and self.doctor_result is None and self.knows_device:
            return self._host
        return self._probed or self._machine_from_doctor()

    @functools.cached_property
    def _host(self) -> Machine:
        """This machine before the doctor answers, where it is surely a CPU (no GPU device node):
        psutil's memory and CPUs, no torch import (Machine.probe)."""
        return Machine.probe()

    def waits_for_doctor(self, cfg: RunConfig) -> bool:
        """Whether checking `cfg` needs the doctor report, which takes 4-18 s on a busy machine: a
        profiler (which tools are here is the report's to say), or a host with a GPU device node
        (whether torch can use it, and its memory). A plain run on a CPU-only host needs nothing
        the report has, so it is checked, and launched, at once."""
        return (not self.knows_machine and self._probed is None
                and (bool(cfg.profilers) or not self.knows_device))

    def check(self, cfg: RunConfig, *, final: bool = True) -> RunConfig:
        """Lab.check, answered from the doctor report (fast enough for a form that checks on every
        key, with final=False); while a check waits for the report only the config itself is."""
        if self.waits_for_doctor(cfg):
            return cfg.validate()
        return super().check(cfg, final=final)

    def profiler_problem(self, name: str) -> str | None:
        if self.doctor_result is None:
            return super().profiler_problem(name)
        entry = self.doctor_result.profilers.get(name)
        if entry is None or entry.available:
            return None
        return f"{entry.reason or 'not found'}" + (f"; {entry.fix}" if entry.fix else "")

    def launch(self, cfg: RunConfig):
        """Called from a worker: the full check always runs first, from the doctor report (waited
        for when the check needs it: waits_for_doctor), or from a probe in this process when the
        doctor child failed."""
        if self.waits_for_doctor(cfg):
            try:
                self.doctor()
            except UserError:
                self._probed = self._probed or Machine.probe()
        return super().launch(cfg)

    def doctor(self, stop: Callable[[], bool] = lambda: False) -> DoctorReport:
        """`tinylab doctor --json`, once per app.

        In a child process: doctor imports torch and deepspeed to probe them, which would cost
        the lab seconds of GIL time and hundreds of MB for the rest of its life. `stop` is polled
        so that quitting the lab does not wait for the probes (the child is killed).
        """
        if self.doctor_result is not None:
            return self.doctor_result
        # -P and a folder of its own: a torch.py or models/ where the lab was opened is never imported
        with childproc.neutral_cwd() as cwd, subprocess.Popen(
                childproc.python("-m", "tinylab", "doctor", "--json"), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd) as proc:
            childproc.in_background(proc.pid)  # the first run may start beside it (a plain CPU run does)
            while True:
                try:
                    out, err = proc.communicate(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    if stop():
                        proc.kill()
                        proc.wait()
                        raise DoctorStopped("doctor was stopped") from None
        if proc.returncode != 0:
            last = (err.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
            raise UserError(f"tinylab doctor failed: {last}")
        self.doctor_result = DoctorReport.from_json(json.loads(out))
        return self.doctor_result

    def kernel_pool(self, jobs: int | None = None):
        """One worker pool for the lab's life, shared by its workers (a table, a stage, a sweep):
        its processes start with the first compile and stay warm; `close` stops them."""
        with self._kernel_pool_lock:
            if self._kernel_pool is None:
                from tinylab.service.kernels import Pool

                _start_resource_tracker()
                self._kernel_pool = Pool(jobs, quiet=True)
        return contextlib.nullcontext(self._kernel_pool)

    def close(self) -> None:
        """Stop what the lab left running in this process: compiles no screen waits for any more
        (a compile's worker processes would otherwise hold the lab's exit for a minute)."""
        with self._kernel_pool_lock:
            if self._kernel_pool is not None:
                self._kernel_pool.close(kill=True)
                self._kernel_pool = None

    def roofline_text(self, run_id: str, width: int) -> str:
        """The run's roofline as text (Lab.roofline), from ceilings already measured on its card:
        never measures (that needs torch and the GPU, which the lab does not load)."""
        run = self.run(run_id)
        record = run.record()
        device = record.device_name
        if not str(record.device or "").startswith("cuda"):
            return ("A roofline places a GPU's kernels against that GPU's measured limits (memory bandwidth, "
                    "matrix throughput). This run was on the CPU: its table holds CPU operators, which have no "
                    "roof here. Profile a run on a GPU to see one.")
        try:
            plot = self.roofline(run, measure=False, record=record)
        except NoCeilings:
            return (f"No ceilings measured for {device or 'this device'} yet. On that GPU run "
                    f"`tinylab roofline {run_id}` once: it measures copy bandwidth and GEMM rates and keeps "
                    "them beside the runs, and this panel draws the roofline from then on.")
        except UserError as exc:
            return str(exc)
        from tinylab.render.roofline import render

        text = render(plot.result, plot.title, width=max(40, width), height=16)
        return text if plot.has_table else text + "\nProfile the run to place its kernels too."

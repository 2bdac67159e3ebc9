"""`tinylab train`: launch one run, stream its progress, print its summary; Ctrl-C cancels it."""

from __future__ import annotations

import sys
from dataclasses import asdict

from tinylab.commands._common import add_runs_dir, lab_from, print_json
from tinylab.config import RunConfig
from tinylab.config.build import PRESETS
from tinylab.commands.runflags import SIZES, add_run_arguments, chosen_preset, config_from_args
from tinylab.service.runs import EXIT_CODES, follow


def add_arguments(p) -> None:
    add_run_arguments(p)
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout (progress goes to stderr)")


def run(args) -> int:
    return launch_and_follow(args, cancel_on_interrupt=True)


def configure(lab, args) -> tuple[RunConfig, str]:
    """The run's config from the flags, and a line saying which size preset it started from and
    how to switch (printed once the run has started: an error stays the only line)."""
    device_type = lab.machine.device_type(args.device)
    preset = chosen_preset(args, device_type)
    where = "the run is on the CPU" if device_type == "cpu" else "the run is on a GPU"
    switch = ", ".join(f"--preset {p}" for p in PRESETS if p != preset)
    how = f"{where}; {switch} to switch" if args.preset == "auto" else "--preset"
    mine = [f"--{k.replace('_', '-')}" for k in SIZES if getattr(args, k) is not None]
    return config_from_args(args, device_type), f"sizes: preset {preset} ({how})" + (
        f", with your {' '.join(mine)}" if mine else "")


def launch_and_follow(args, cancel_on_interrupt: bool) -> int:
    lab = lab_from(args, launches=True)
    log = sys.stderr if args.json else sys.stdout
    cfg, sizes = configure(lab, args)
    run = lab.launch(cfg)
    print(f"run {run.id}  ({run.dir})", file=log)
    print(sizes, file=log, flush=True)
    try:
        status = follow(run, out=log)
    except KeyboardInterrupt:
        if not cancel_on_interrupt:
            print(f"\nstopped following; run {run.id} keeps going: tinylab follow {run.id}", file=sys.stderr)
            return 0
        print(f"\ncancelling run {run.id} ...", file=sys.stderr, flush=True)
        lab.cancel(run)  # the run it launched, not its id looked up again
        status = run.status()
    record = run.record()
    if args.json:
        print_json({"id": run.id, "dir": str(run.dir), "status": status,
                    "summary": asdict(record.summary) if record.summary else None,
                    "error": asdict(record.error) if record.error else None})
    print(f"run {run.id} {status}  ({run.dir})", file=log, flush=True)
    if status == "failed" and record.error:
        print(f"error: {record.error.type}: {record.error.message}", file=sys.stderr)
    return EXIT_CODES[status]

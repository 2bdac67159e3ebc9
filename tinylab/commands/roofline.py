"""`tinylab roofline RUN`: the run's step and kernels against this device's measured ceilings."""

from __future__ import annotations

import json
from pathlib import Path

from tinylab.commands._common import add_runs_dir, lab_from, print_json
from tinylab.errors import UserError


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--ceilings", type=Path, default=None,
                   help="a `tinylab bench --roofline --out FILE` JSON to take the ceilings from "
                        "(default: measure them now on this GPU, cached in the runs dir)")
    p.add_argument("--json", action="store_true")


def load_ceilings(args, runs_root: Path, device_name: str | None) -> dict:
    from tinylab.analysis.roofline import cached_ceilings, ceilings_cache

    if args.ceilings:
        try:
            doc = json.loads(args.ceilings.read_text(encoding="utf-8"))
            return doc.get("ceilings", doc)
        except (OSError, ValueError) as exc:
            raise UserError(f"--ceilings {args.ceilings}: {exc}") from None
    cached = cached_ceilings(runs_root, device_name)
    if cached is not None:
        return cached
    import torch

    if not torch.cuda.is_available():
        raise UserError("a roofline needs ceilings measured on a GPU: run this on the GPU machine, "
                        "or pass --ceilings from `tinylab bench --roofline --out FILE`")
    if device_name and torch.cuda.get_device_name() != device_name:
        raise UserError(f"the run used {device_name} but this GPU is {torch.cuda.get_device_name()}: "
                        "measure on the same card or pass --ceilings")
    from tinylab.analysis.ceilings import measure_ceilings

    ceilings = measure_ceilings()
    runs_root.mkdir(parents=True, exist_ok=True)
    ceilings_cache(runs_root, device_name).write_text(json.dumps(ceilings), encoding="utf-8")
    return ceilings


def run(args) -> int:
    from tinylab.analysis import roofline

    lab = lab_from(args)
    run = lab.run(args.run)
    record = run.record()
    if not record.summary:
        raise UserError(f"run {run.id} has no summary ({record.status}): a roofline needs a finished run")
    ceilings = load_ceilings(args, lab.store.root, record.device_name)
    result, title, has_table = roofline.for_run(run, ceilings)
    if args.json:
        print_json(result)
        return 0
    print(roofline.render(result, title))
    if not has_table:
        print("no kernel table: profile the run (--profile pytorch, ncu, rocprofv3 ...) to place its kernels")
    return 0

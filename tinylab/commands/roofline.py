"""`tinylab roofline RUN`: the run's step and kernels against this device's measured ceilings."""

from __future__ import annotations

import json
from pathlib import Path

from tinylab.commands._common import add_runs_dir, print_json, store_from
from tinylab.errors import UserError

HELP = "ASCII roofline of a run against measured ceilings"


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--ceilings", type=Path, default=None,
                   help="a `tinylab bench --roofline --out FILE` JSON to take the ceilings from "
                        "(default: measure them now on this GPU, cached in the runs dir)")
    p.add_argument("--json", action="store_true")


def load_ceilings(args, device_name: str | None) -> dict:
    if args.ceilings:
        try:
            doc = json.loads(args.ceilings.read_text(encoding="utf-8"))
            return doc.get("ceilings", doc)
        except (OSError, ValueError) as exc:
            raise UserError(f"--ceilings {args.ceilings}: {exc}") from None
    store = store_from(args)
    cache = store.root / f"ceilings-{(device_name or 'unknown').replace(' ', '_')}.json"
    if cache.exists():
        return json.loads(cache.read_text(encoding="utf-8"))
    import torch

    if not torch.cuda.is_available():
        raise UserError("a roofline needs ceilings measured on a GPU: run this on the GPU machine, "
                        "or pass --ceilings from `tinylab bench --roofline --out FILE`")
    if device_name and torch.cuda.get_device_name() != device_name:
        raise UserError(f"the run used {device_name} but this GPU is {torch.cuda.get_device_name()}: "
                        "measure on the same card or pass --ceilings")
    from tinylab.analysis.ceilings import measure_ceilings

    ceilings = measure_ceilings()
    store.root.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(ceilings), encoding="utf-8")
    return ceilings


def run(args) -> int:
    from tinylab.analysis import roofline
    from tinylab.analysis.hotspots import load_run_kernel_table

    run = store_from(args).resolve(args.run)
    info = run.info()
    if not info["summary"]:
        raise UserError(f"run {run.id} has no summary ({info['status']}): a roofline needs a finished run")
    cfg = run.config()
    ceilings = load_ceilings(args, info["device_name"])
    gemm = ceilings.get("gemm_tflops", {})
    key = "tf32" if cfg.precision == "fp32" and cfg.tf32 else ("bf16" if cfg.precision != "fp32" else "fp32")
    if key not in gemm or not ceilings.get("copy_gbps"):
        raise UserError(f"the ceilings have no {key} GEMM rate or copy bandwidth")
    peak = gemm[key]["large"]
    loaded = load_run_kernel_table(run.dir)
    table = loaded[0] if loaded else None
    start = info.get("start") or {}
    result = roofline.place(cfg, table, info["summary"]["step_ms_median"], cfg.profile_steps,
                            int(start.get("param_elements") or 0), peak, ceilings["copy_gbps"])
    if args.json:
        print_json(result)
        return 0
    title = f"{run.id} {cfg.version} {cfg.precision} on {info['device_name']}"
    print(roofline.render(result, title))
    if table is None:
        print("no kernel table: profile the run (--profile pytorch, ncu, rocprofv3 ...) to place its kernels")
    return 0

"""`tinylab show RUN`: everything known about one run."""

from __future__ import annotations

import time

from tinylab.commands._common import add_runs_dir, print_json, store_from

HELP = "show one run: config, status, summary, artifacts, error"


def add_arguments(p) -> None:
    p.add_argument("run", metavar="RUN", help="run id, unique prefix, or 'last'")
    add_runs_dir(p)
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    info = store_from(args).resolve(args.run).info()
    if args.json:
        print_json(info)
        return 0
    print(f"run      {info['id']}")
    print(f"status   {info['status']}")
    print(f"folder   {info['dir']}")
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"])) if info["started"] else "-"
    print(f"started  {started}   pid {info['pid'] or '-'}   device {info['device_name'] or '-'} ({info['device'] or '-'})")
    cfg = info["config"]
    print("config   " + "  ".join(f"{k}={v}" for k, v in sorted(cfg.items()) if v not in (None, "", [])))
    last = info["last_step"]
    if last:
        print(f"progress step {last['step'] + 1}/{cfg.get('num_steps')}  loss {last['loss']}")
    s = info["summary"]
    if s:
        print("summary")
        for key in ("samples_per_s", "tokens_per_s", "step_ms_median", "step_ms_p10", "step_ms_p90",
                    "fwd_ms_median", "bwd_ms_median", "opt_ms_median", "peak_mem_mb", "initial_loss",
                    "final_loss", "params_trained", "params_total", "mfu"):
            print(f"  {key:<16} {_fmt(s.get(key))}")
    for prof in info["profiles"]:
        print(f"profile  {prof.get('tool')}: kernel table {prof.get('kernel_table') or '-'}"
              + (f"  ({prof['note']})" if prof.get("note") else ""))
        for name, path in (prof.get("artifacts") or {}).items():
            print(f"  {name:<16} {info['dir']}/{path}")
    if info["error"]:
        err = info["error"]
        print(f"error    {err.get('type')}: {err.get('message')}")
        if err.get("traceback"):
            print("  " + err["traceback"].rstrip().replace("\n", "\n  "))
    if info["exit"]:
        print(f"exit     code {info['exit'].get('returncode')}" + (f" ({info['exit']['signal']})" if info["exit"].get("signal") else ""))
    if info["corrupt_lines"]:
        print(f"warning  events.jsonl has {len(info['corrupt_lines'])} unreadable line(s): {info['corrupt_lines'][:5]}")
    return 0


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.4f}" if abs(v) < 100 else f"{v:,.1f}"
    return str(v)

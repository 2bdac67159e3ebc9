"""`tinylab runs`: the run store as a table (or JSON)."""

from __future__ import annotations

import time

from tinylab.commands._common import add_runs_dir, print_json, store_from

HELP = "list the runs in the run store"


def add_arguments(p) -> None:
    add_runs_dir(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.add_argument("--status", default=None, help="only runs with this status")


def run_row(info: dict) -> dict:
    cfg, summary = info["config"], info["summary"] or {}
    return {
        "id": info["id"],
        "started": info["started"],
        "status": info["status"],
        "version": info["version"],
        "config": key_config(cfg),
        "label": info["label"],
        "samples_per_s": summary.get("samples_per_s"),
        "peak_mem_mb": summary.get("peak_mem_mb"),
        "final_loss": summary.get("final_loss"),
        "device": info["device"],
    }


def key_config(cfg: dict) -> str:
    """The few settings that tell two runs apart, in one short string."""
    if not cfg:
        return "?"
    parts = [f"b{cfg.get('batch_size')} s{cfg.get('seq_len')} h{cfg.get('hidden_dim')} l{cfg.get('num_layers')}"]
    if cfg.get("precision", "fp32") != "fp32":
        parts.append(cfg["precision"])
    on = [k for k in ("qkv_fusion", "sdpa", "swiglu_fusion", "torch_compile", "cuda_graph") if cfg.get(k)]
    if cfg.get("version") == "v2" and on:
        parts.append("+".join(on))
    elif cfg.get("cuda_graph"):
        parts.append("graph")
    if cfg.get("recompute_ffn"):
        parts.append("recompute")
    if cfg.get("fault"):
        parts.append(f"fault={cfg['fault']}")
    if cfg.get("profilers"):
        parts.append("prof=" + ",".join(cfg["profilers"]))
    return " ".join(parts)


def run(args) -> int:
    store = store_from(args)
    rows = [run_row(r.info()) for r in store.list()]
    if args.status:
        rows = [r for r in rows if r["status"] == args.status]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no runs in {store.root}")
        return 0
    header = f"{'ID':<22} {'STARTED':<16} {'STATUS':<10} {'VER':<4} {'SAMPLES/S':>10} {'PEAK MB':>9}  CONFIG"
    print(header)
    for r in rows:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["started"])) if r["started"] else "-"
        sps = f"{r['samples_per_s']:,.1f}" if r["samples_per_s"] else "-"
        mem = f"{r['peak_mem_mb']:,.0f}" if r["peak_mem_mb"] else "-"
        label = f"  [{r['label']}]" if r["label"] else ""
        print(f"{r['id']:<22} {started:<16} {r['status']:<10} {r['version'] or '?':<4} {sps:>10} {mem:>9}  {r['config']}{label}")
    return 0

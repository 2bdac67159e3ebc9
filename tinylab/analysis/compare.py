"""A/B comparison of two runs, shared by `tinylab compare`, `tinylab report` and the TUI.

Headless on purpose (no Textual, pandas only when both runs have kernel tables): the result is a
plain dict, so the CLI prints it, `--json` dumps it and the TUI lays it out without recomputing.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from tinylab.errors import UserError
from tinylab.runs.store import Run

#: Config keys an A/B comparison is meant to vary; a difference in any other key gets a note.
UNDER_TEST = frozenset({
    "version", "qkv_fusion", "sdpa", "swiglu_fusion", "torch_compile", "compile_mode", "cuda_graph",
    "recompute_ffn", "precision", "tf32", "fault", "profilers", "label",
})

#: (summary key, label, unit, direction, format); direction +1: higher is better, -1: lower is.
METRICS: tuple[tuple[str, str, str, int, str], ...] = (
    ("samples_per_s", "samples/s", "samples/s", +1, ",.1f"),
    ("tokens_per_s", "tokens/s", "tokens/s", +1, ",.0f"),
    ("step_ms_median", "step median", "ms", -1, ".2f"),
    ("step_ms_p90", "step p90", "ms", -1, ".2f"),
    ("fwd_ms_median", "forward", "ms", -1, ".2f"),
    ("bwd_ms_median", "backward", "ms", -1, ".2f"),
    ("opt_ms_median", "optimizer", "ms", -1, ".2f"),
    ("peak_mem_mb", "peak memory", "MB", -1, ",.1f"),
    ("final_loss", "final loss", "", -1, ".4f"),
    ("mfu", "MFU", "fraction", +1, ".1%"),
)
_FORMATS = {key: fmt for key, _, _, _, fmt in METRICS}

#: Ratios this close to 1 mark neither run as better: run-to-run noise is larger than that.
SAME_WITHIN = 0.01


def compare_runs(a: Run, b: Run) -> dict[str, Any]:
    """Everything an A/B view shows; ratios are B/A, so > 1 means B's number is larger."""
    info_a, info_b = a.info(), b.info()
    notes: list[str] = []
    cfg_a, cfg_b = _ran_config(info_a), _ran_config(info_b)
    config_diff = [
        {"key": key, "a": cfg_a.get(key), "b": cfg_b.get(key), "under_test": key in UNDER_TEST}
        for key in sorted(set(cfg_a) | set(cfg_b))
        if cfg_a.get(key) != cfg_b.get(key)
    ]
    for side, cfg in (("A", cfg_a), ("B", cfg_b)):
        if not cfg:
            notes.append(f"run {side}'s config.json is missing or unreadable: its settings are unknown")
    outside = [d for d in config_diff if not d["under_test"]]
    if outside and cfg_a and cfg_b:
        listed = ", ".join(f"{d['key']} ({d['a']} vs {d['b']})" for d in outside)
        notes.append(f"configs differ in more than the toggles under test: {listed}; "
                     "the ratios mix those effects in")
    _device_note(info_a, info_b, notes)
    for side, info in (("A", info_a), ("B", info_b)):
        _status_notes(side, info, notes)
    return {
        "a": _side(info_a, cfg_a),
        "b": _side(info_b, cfg_b),
        "metrics": [_metric(key, label, unit, direction, info_a["summary"], info_b["summary"])
                    for key, label, unit, direction, _ in METRICS],
        "config_diff": config_diff,
        "notes": notes,
        "kernel_diff": _kernel_diff(a, b, notes),
    }


def _ran_config(info: dict[str, Any]) -> dict[str, Any]:
    """config.json overlaid with the start event's config, which records what really ran
    (e.g. v4's CUDA graph resolves to off on a CPU)."""
    start_cfg = (info["start"] or {}).get("config")
    return {**info["config"], **(start_cfg if isinstance(start_cfg, dict) else {})}


def _side(info: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
    from tinylab.commands.runs import key_config

    return {
        "id": info["id"],
        "version": info["version"],
        "status": info["status"],
        "label": info["label"],
        "device": info["device"],
        "device_name": info["device_name"],
        "key_config": key_config(cfg),
        "config": cfg,
    }


def number(value: Any) -> float | None:
    """A finite number from an event field, or None (a corrupt record must not break a view)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _metric(key: str, label: str, unit: str, direction: int, sa: dict | None, sb: dict | None) -> dict[str, Any]:
    va, vb = number((sa or {}).get(key)), number((sb or {}).get(key))
    ratio = vb / va if va is not None and vb is not None and va != 0 else None
    better = None
    if ratio is not None and abs(ratio - 1) >= SAME_WITHIN:
        better = "b" if (ratio > 1) == (direction > 0) else "a"
    return {"key": key, "label": label, "a": va, "b": vb, "ratio": ratio, "better": better, "unit": unit}


def _device_note(info_a: dict[str, Any], info_b: dict[str, Any], notes: list[str]) -> None:
    da, db = (info_a["device"], info_a["device_name"]), (info_b["device"], info_b["device_name"])
    if info_a["device"] and info_b["device"] and da != db:
        notes.append(f"the runs used different devices: A on {da[0]} ({da[1]}), B on {db[0]} ({db[1]}); "
                     "their timings do not compare")


def _status_notes(side: str, info: dict[str, Any], notes: list[str]) -> None:
    status = info["status"]
    if status == "running":
        notes.append(f"run {side} ({info['id']}) is still running: its numbers may change")
    elif status == "failed":
        err = info["error"] or {}
        why = f": {err.get('type')}: {err.get('message')}" if err else ""
        notes.append(f"run {side} ({info['id']}) failed{why}")
    elif status != "finished":
        notes.append(f"run {side} ({info['id']}) is {status}: it did not finish")
    summary = info["summary"]
    if summary is None:
        notes.append(f"run {side} ({info['id']}) has no summary: its metrics are blank")
        return
    trained, total = number(summary.get("params_trained")), number(summary.get("params_total"))
    if trained is not None and total and trained < total:
        notes.append(f"run {side} trained only {trained:.0f} of {total:.0f} parameter tensors: "
                     "a step that skips gradients is fast for the wrong reason")


def load_kernels(run: Run, notes: list[str], who: str) -> tuple[Any, str] | None:
    """The run's kernel table and its format, or None; an unreadable table is a note, not a crash."""
    if not any(p.get("kernel_table") for p in run.events().of("profile")):
        return None  # spares the common unprofiled run the pandas import
    try:
        from tinylab.analysis.hotspots import load_run_kernel_table

        return load_run_kernel_table(run.dir)
    except ImportError:  # the analysis stack (pandas) is optional for everything but kernel tables
        return None
    except (UserError, OSError, ValueError, KeyError) as exc:  # pandas' parse errors are ValueErrors
        notes.append(f"could not read the kernel table of {who}: {exc}")
        return None


def _kernel_diff(a: Run, b: Run, notes: list[str]) -> dict[str, Any] | None:
    noted = len(notes)
    tables = {side: load_kernels(run, notes, f"run {side}") for side, run in (("A", a), ("B", b))}
    present = [side for side, table in tables.items() if table is not None]
    if len(present) == 1 and len(notes) == noted:  # the other run has none (rather than a broken one)
        missing = "B" if present == ["A"] else "A"
        notes.append(f"only run {present[0]} has a kernel table: profile run {missing} too "
                     "(e.g. --profile pytorch) for a kernel diff")
    if len(present) < 2:
        return None
    from tinylab.analysis.hotspots import kernel_diff

    (table_a, fmt_a), (table_b, fmt_b) = tables["A"], tables["B"]
    if fmt_a != fmt_b:
        notes.append(f"the kernel tables come from different sources ({fmt_a} vs {fmt_b}): "
                     "kernel names may not line up")
    return kernel_diff(table_a, table_b, top=10)


# ------------------------------------------------------------------------------ text rendering
def format_value(key: str, value: float | None) -> str:
    return "-" if value is None else format(value, _FORMATS.get(key, ".4g"))


def metric_label(label: str, unit: str) -> str:
    """"step median (ms)", but "samples/s" alone: a unit the label already says is noise."""
    return label + (f" ({unit})" if unit and unit != "fraction" and unit not in label else "")


def metric_rows(result: dict[str, Any], b: str = "B") -> list[list[str]]:
    """[label (unit), A, B, B/A, verdict] per metric, as text; the report's tables use them too.
    The arrow is the direction of B's number against A's; `b` names run B (C, D... in reports)."""
    rows = []
    for m in result["metrics"]:
        ratio = f"{m['ratio']:.2f}x" if m["ratio"] is not None else "-"
        if m["better"]:
            verdict = f"{'▲' if m['ratio'] > 1 else '▼'} {b if m['better'] == 'b' else 'A'} better"
        elif m["ratio"] is not None:
            verdict = "= same"
        else:
            verdict = ""
        rows.append([metric_label(m["label"], m["unit"]), format_value(m["key"], m["a"]),
                     format_value(m["key"], m["b"]), ratio, verdict])
    return rows


def kernel_sections(diff: dict[str, Any], name: Callable[[str], str] = str,
                    b: str = "B") -> list[tuple[str, list[str], list[list[str]]]]:
    """The kernel diff as (title, header, rows) tables, the same three in every output format."""
    from tinylab.analysis.hotspots import format_ns

    def listed(items: list[dict[str, Any]]) -> list[list[str]]:
        return [[name(k["name"]), format_ns(k["total_ns"]), str(k["calls"])] for k in items]

    changed = [[name(k["name"]), format_ns(k["a_total_ns"]), format_ns(k["b_total_ns"]),
                f"{k['ratio']:.2f}x" if k["ratio"] is not None else "-", f"{k['a_calls']} -> {k['b_calls']}"]
               for k in diff["changed"]]
    return [
        ("in both, biggest changes in total time", ["kernel", "A", b, f"{b}/A", f"calls A -> {b}"], changed),
        (f"only in {b} (appeared)", ["kernel", "total", "calls"], listed(diff["appeared"])),
        ("only in A (gone)", ["kernel", "total", "calls"], listed(diff["disappeared"])),
    ]


def format_compare(result: dict[str, Any], name_width: int = 60) -> str:
    """The terminal view: who is who, the metric table, config differences, notes, kernel diff."""
    lines = []
    for side in ("a", "b"):
        s = result[side]
        label = f"  [{s['label']}]" if s["label"] else ""
        lines.append(f"{side.upper()}  {s['id']}  {s['version'] or '?'}  {s['status']}  {s['key_config']}{label}")
    lines.append("")
    lines += _table(["metric", "A", "B", "B/A", ""], metric_rows(result), right=(1, 2, 3))
    if result["config_diff"]:
        lines += ["", "config differences"]
        lines += _table(["key", "A", "B", ""], [[d["key"], show_value(d["a"]), show_value(d["b"]),
                                                 "under test" if d["under_test"] else "NOT under test"]
                                                for d in result["config_diff"]])
    if result["notes"]:
        lines += ["", "notes"] + [f"  - {n}" for n in result["notes"]]
    diff = result["kernel_diff"]
    if diff is not None:
        from tinylab.analysis.hotspots import (
            display_name,  # the terminal's short kernel names
        )

        lines += ["", "kernel diff (B vs A)"]
        for title, header, rows in kernel_sections(diff, lambda n: _cut(display_name(n), name_width)):
            lines.append(f"  {title}")
            lines += ["  " + line for line in _table(header, rows, right=(1, 2, 3))] if rows else ["    (none)"]
    return "\n".join(lines)


def show_value(value: Any) -> str:
    """A config value as text: lists joined, nothing as "-"."""
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    return "-" if value is None or value == "" else str(value)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(header: list[str], rows: list[list[str]], right: tuple[int, ...] = ()) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  " + "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header)] + [line(r) for r in rows]

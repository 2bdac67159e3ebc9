"""A/B comparison of two runs, shared by `tinylab compare`, `tinylab report` and the TUI.

Headless on purpose (no Textual, pandas only when both runs have kernel tables): the result is a
plain dict, so the CLI prints it, `--json` dumps it and the TUI lays it out without recomputing.
"""

from __future__ import annotations

from typing import Any, Callable

from tinylab.analysis.names import short_name
from tinylab.errors import UserError
from tinylab.events import SUMMARY_FIELDS, Summary, number
from tinylab.runs.record import RunRecord, key_config, printable
from tinylab.text import wrap_words

#: Config keys an A/B comparison is meant to vary; a difference in any other key gets a note. The
#: engine and the world size are among them: comparing 1 GPU with N is what scaling is about.
UNDER_TEST = frozenset({
    "version", "qkv_fusion", "sdpa", "swiglu_fusion", "torch_compile", "compile_mode", "cuda_graph",
    "recompute_ffn", "precision", "tf32", "fault", "profilers", "label", "parallel", "nproc_per_node", "nnodes",
})

#: The summary fields an A/B comparison shows: those with a better direction (see events.Summary).
METRICS = tuple(f for f in SUMMARY_FIELDS if f.direction)
_FORMATS = {f.key: f.fmt for f in METRICS}

#: Ratios this close to 1 mark neither run as better, whatever the runs' own spread.
SAME_WITHIN = 0.01
#: Metrics computed from step times: their differences are judged against the step-time spread.
TIMED = frozenset(f.key for f in METRICS if f.timed)


def step_noise(summary: Summary | None) -> float | None:
    """A run's own step-to-step spread (Summary.spread). A difference between two runs smaller
    than either run's spread is noise, not a win."""
    return summary.spread if summary is not None else None


def compare_runs(a: RunRecord, b: RunRecord, names: tuple[str, str] = ("A", "B")) -> dict[str, Any]:
    """Everything an A/B view shows; ratios are B/A, so > 1 means B's number is larger. `names` are
    the runs' letters in every note (a report compares A with C, D...: its notes name C, not B)."""
    name_a, name_b = names
    notes: list[str] = []
    cfg_a, cfg_b = a.ran_config, b.ran_config
    config_diff = [
        {"key": key, "a": cfg_a.get(key), "b": cfg_b.get(key), "under_test": key in UNDER_TEST}
        for key in sorted(set(cfg_a) | set(cfg_b))
        if cfg_a.get(key) != cfg_b.get(key)
    ]
    for side, cfg in ((name_a, cfg_a), (name_b, cfg_b)):
        if not cfg:
            notes.append(f"run {side}'s config.json is missing or unreadable: its settings are unknown")
    outside = [d for d in config_diff if not d["under_test"]]
    if outside and cfg_a and cfg_b:
        listed = ", ".join(f"{d['key']} ({d['a']} vs {d['b']})" for d in outside)
        notes.append(f"configs differ in more than the toggles under test: {listed}; "
                     "the ratios mix those effects in")
    _device_note(a, b, notes, names)
    for side, record in ((name_a, a), (name_b, b)):
        _status_notes(side, record, notes)
        if record.busy:
            notes.append(f"the machine was busy during {side} ({record.busy}): its timings measure the contention, "
                         "not the code; run it again on a quiet machine")
    spreads = [s for s in (step_noise(a.summary), step_noise(b.summary)) if s is not None]
    noise = max([SAME_WITHIN, *spreads])
    scaled = scaling(a, b)
    notes += _superlinear_note(scaled, a, b, names)
    kernels = _kernel_diff(a, b, notes, names)
    return {
        "names": {"a": name_a, "b": name_b},
        "busy": {"a": a.busy, "b": b.busy},  # why the machine was too busy for a run's timings, or None
        "a": _side(a, cfg_a),
        "b": _side(b, cfg_b),
        "noise": {"a": step_noise(a.summary), "b": step_noise(b.summary), "threshold": noise},
        "metrics": [_metric(f.key, f.label, f.unit, f.direction, a.summary, b.summary,
                            noise if f.key in TIMED else SAME_WITHIN) for f in METRICS],
        "config_diff": config_diff,
        "notes": notes,
        "scaling": scaled,
        "kernel_diff": kernels,
    }


#: A scaling efficiency this far above 1 is no measurement noise: the ranks did less work per core.
SUPERLINEAR = 1.1


def _superlinear_note(scaled: dict[str, Any] | None, a: RunRecord, b: RunRecord, names: tuple[str, str]) -> list[str]:
    if scaled is None or scaled["efficiency"] is None or scaled["efficiency"] <= SUPERLINEAR:
        return []
    base, other = names if scaled["baseline"] == "a" else names[::-1]
    cpu = " On a CPU torchrun gives each rank one thread (OMP_NUM_THREADS=1) while one process takes every core." \
        if str(a.device).startswith("cpu") and str(b.device).startswith("cpu") else ""
    return [f"scaling efficiency above 100%: each rank of {other} ran faster than {base} alone, so the runs did not do "
            f"the same work per core or per device.{cpu}"]


def scaling(a: RunRecord, b: RunRecord) -> dict[str, Any] | None:
    """Two runs of different world sizes: each one's ranks, samples/s (the whole run's) and samples/s
    per rank (per GPU), its collectives a step and their hidden share; and the scaling efficiency,
    the larger world's samples/s per rank over the smaller's (the baseline: the 1-rank run when
    there is one; 1.0 = every rank as fast as alone). None when the world sizes are the same."""
    if a.world_size == b.world_size:
        return None
    sides = {}
    for side, record in (("a", a), ("b", b)):
        s = record.summary
        total = s.samples_per_s if s else None
        sides[side] = {"world_size": record.world_size, "samples_per_s": total,
                       "samples_per_s_per_rank": total / record.world_size if total is not None else None,
                       "comm_ms": s.comm_ms if s else None, "comm_hidden": s.comm_hidden if s else None}
    base, other = ("a", "b") if a.world_size < b.world_size else ("b", "a")
    per_base, per_other = sides[base]["samples_per_s_per_rank"], sides[other]["samples_per_s_per_rank"]
    return {**sides, "baseline": base,
            "efficiency": per_other / per_base if per_base and per_other is not None else None,
            "speedup": sides[other]["samples_per_s"] / sides[base]["samples_per_s"]
            if per_base and per_other is not None else None,
            "ideal_speedup": sides[other]["world_size"] / sides[base]["world_size"]}


def _side(record: RunRecord, cfg: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": record.id,
        "version": record.version,
        "status": record.status,
        "problem": record.problem,  # why its record is damaged, or None
        "label": record.label,
        "device": record.device,
        "device_name": record.device_name,
        "world_size": record.world_size,
        "key_config": key_config(cfg),
        "config": cfg,
    }


def _metric(key: str, label: str, unit: str, direction: int, sa: Summary | None, sb: Summary | None,
            threshold: float) -> dict[str, Any]:
    """One row; `better` only when the ratio is further from 1 than `threshold` (noise never wins),
    further either way: 0.5x is as far from 1 as 2x, so a time and its rate get the same verdict."""
    va, vb = (float(v) if (v := number(s.get(key) if s else None)) is not None else None for s in (sa, sb))
    ratio = vb / va if va is not None and vb is not None and va != 0 else None
    distance = None if ratio is None else (max(ratio, 1 / ratio) - 1 if ratio > 0 else float("inf"))
    better = None
    noise = distance is not None and SAME_WITHIN <= distance < threshold
    if distance is not None and distance >= threshold:
        better = "b" if (ratio > 1) == (direction > 0) else "a"
    return {"key": key, "label": label, "a": va, "b": vb, "ratio": ratio, "better": better, "unit": unit,
            "within_noise": noise}


def _device_note(a: RunRecord, b: RunRecord, notes: list[str], names: tuple[str, str]) -> None:
    da, db = (a.device, a.device_name), (b.device, b.device_name)
    if a.device and b.device and da != db:
        notes.append(f"the runs used different devices: {names[0]} on {da[0]} ({da[1]}), {names[1]} on {db[0]} "
                     f"({db[1]}); their timings do not compare")


def _status_notes(side: str, record: RunRecord, notes: list[str]) -> None:
    status = record.status
    if record.problem:
        notes.append(f"run {side} ({record.id}) is damaged ({record.problem}): what it records may be wrong")
    if status == "running":
        notes.append(f"run {side} ({record.id}) is still running: its numbers may change")
    elif status == "failed":
        err = record.error
        why = f": {err.type}: {err.message}" if err else ""
        notes.append(f"run {side} ({record.id}) failed{why}")
    elif status != "finished":
        notes.append(f"run {side} ({record.id}) is {status}: it did not finish")
    summary = record.summary
    if summary is None:
        notes.append(f"run {side} ({record.id}) has no summary: its metrics are blank")
        return
    if summary.partly_trained:
        notes.append(f"run {side} trained only {summary.params_trained:.0f} of {summary.params_total:.0f} "
                     "parameter tensors: a step that skips gradients is fast for the wrong reason")


def load_kernels(record: RunRecord, notes: list[str], who: str) -> tuple[Any, str] | None:
    """The run's kernel table and its format, or None; an unreadable table is a note, not a crash."""
    if not record.has_kernel_table:
        return None  # spares the common unprofiled run the pandas import
    try:
        from tinylab.analysis.hotspots import load_run_kernel_table

        return load_run_kernel_table(record.dir, record.profiles)  # the record holds the run's profile events
    except ImportError:  # the analysis stack (pandas) is optional for everything but kernel tables
        return None
    except (UserError, OSError, ValueError, KeyError) as exc:  # pandas' parse errors are ValueErrors
        notes.append(f"could not read the kernel table of {who}: {exc}")
        return None


def _kernel_diff(a: RunRecord, b: RunRecord, notes: list[str], names: tuple[str, str]) -> dict[str, Any] | None:
    noted = len(notes)
    tables = {side: load_kernels(record, notes, f"run {side}") for side, record in zip(names, (a, b))}
    present = [side for side, table in tables.items() if table is not None]
    if len(present) == 1 and len(notes) == noted:  # the other run has none (rather than a broken one)
        missing = names[1] if present == [names[0]] else names[0]
        notes.append(f"only run {present[0]} has a kernel table: profile run {missing} too "
                     "(e.g. --profile pytorch) for a kernel diff")
    if len(present) < 2:
        return None
    from tinylab.analysis.hotspots import kernel_diff

    (table_a, fmt_a), (table_b, fmt_b) = tables[names[0]], tables[names[1]]
    if fmt_a != fmt_b:
        notes.append(f"the kernel tables come from different sources ({fmt_a} vs {fmt_b}): "
                     "kernel names may not line up")
    ranked = [side for side, (table, _) in tables.items() if table.attrs.get("ranks")]
    if ranked:
        notes.append(f"the kernel diff reads rank 0's table of {' and '.join(f'run {s}' for s in ranked)} "
                     "(ranks are never merged: `tinylab hotspots RUN --rank N` shows another)")
    return kernel_diff(table_a, table_b, top=10)


# ------------------------------------------------------------------------------ text rendering
def format_value(key: str, value: float | None) -> str:
    return "-" if value is None else format(value, _FORMATS.get(key, ".4g"))


def shows_unit(label: str, unit: str) -> bool:
    """Whether a metric's unit is written beside its label: not a fraction, nor a unit the label
    already says ("samples/s")."""
    return bool(unit) and unit != "fraction" and unit not in label


def metric_label(label: str, unit: str) -> str:
    """"step median (ms)", but "samples/s" alone: a unit the label already says is noise."""
    return label + (f" ({unit})" if shows_unit(label, unit) else "")


def metric_rows(result: dict[str, Any], b: str = "B") -> list[list[str]]:
    """[label (unit), A, B, B/A, verdict] per metric, as text; the report's tables use them too.
    The arrow is the direction of B's number against A's; `b` names run B (C, D... in reports)."""
    rows = []
    busy = ",".join(name for side, name in (("a", "A"), ("b", b)) if (result.get("busy") or {}).get(side))
    for m in result["metrics"]:
        ratio = ratio_text(m["ratio"])
        if m["better"]:
            verdict = f"{'▲' if m['ratio'] > 1 else '▼'} {b if m['better'] == 'b' else 'A'} better"
        elif m.get("within_noise") and busy and m["key"] in TIMED:
            verdict = f"≈ {busy} busy"  # the noise is the machine's: the notes say why
        elif m.get("within_noise"):
            verdict = "≈ noise"
        elif m["ratio"] is not None:
            verdict = "= same"
        else:
            verdict = ""
        rows.append([metric_label(m["label"], m["unit"]), format_value(m["key"], m["a"]),
                     format_value(m["key"], m["b"]), ratio, verdict])
    return rows


def ratio_text(ratio: float | None) -> str:
    """B/A as people read it, always with its x: 0.94x, 12.5x, 340x."""
    if ratio is None:
        return "-"
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.1f}x" if ratio < 100 else f"{ratio:,.0f}x"


def noise_note(result: dict[str, Any]) -> str | None:
    """A line on how noisy the runs' step times are, when that decides some rows."""
    noise = result.get("noise") or {}
    if not any(m.get("within_noise") for m in result["metrics"]):
        return None
    letters = result.get("names") or {"a": "A", "b": "B"}
    spreads = ", ".join(f"{letters[side]} ±{100 * noise[side]:.0f}%" for side in ("a", "b") if noise.get(side) is not None)
    busy = [letters[side] for side in ("a", "b") if (result.get("busy") or {}).get(side)]
    marked = f"≈ {','.join(busy)} busy: the machine was busy" if busy else "≈ noise, not a win"
    return (f"step times vary ({spreads} around their medians, p10-p90): differences inside ±"
            f"{100 * noise['threshold']:.0f}% are marked {marked}; repeat the runs or run more steps")


def kernel_sections(diff: dict[str, Any], name: Callable[[str], str] = str,
                    b: str = "B") -> list[tuple[str, list[str], list[list[str]]]]:
    """The kernel diff as (title, header, rows) tables, the same three in every output format."""
    from tinylab.analysis.hotspots import format_ns

    def listed(items: list[dict[str, Any]]) -> list[list[str]]:
        return [[name(k["name"]), format_ns(k["total_ns"]), str(k["calls"])] for k in items]

    changed = [[name(k["name"]), format_ns(k["a_total_ns"]), format_ns(k["b_total_ns"]),
                ratio_text(k["ratio"]), f"{k['a_calls']} -> {k['b_calls']}"]
               for k in diff["changed"]]
    return [
        ("in both, biggest changes in total time", ["kernel", "A", b, f"{b}/A", f"calls A -> {b}"], changed),
        (f"only in {b} (appeared)", ["kernel", "total", "calls"], listed(diff["appeared"])),
        ("only in A (gone)", ["kernel", "total", "calls"], listed(diff["disappeared"])),
    ]


def scaling_rows(result: dict[str, Any], b: str = "B") -> tuple[list[str], list[list[str]], str] | None:
    """The scaling block as (header, a row a run, the efficiency line); None for runs of one world
    size. Every face (compare, the report, the lab) shows it so."""
    sc = result.get("scaling")
    if sc is None:
        return None
    names = {"a": "A", "b": b}

    def num(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    rows = [[names[side], str(sc[side]["world_size"]), num(sc[side]["samples_per_s"], ",.1f"),
             num(sc[side]["samples_per_s_per_rank"], ",.1f"), num(sc[side]["comm_ms"], ".2f"),
             num(sc[side]["comm_hidden"], ".0%")] for side in ("a", "b")]
    base = names[sc["baseline"]]
    other = names["b" if sc["baseline"] == "a" else "a"]
    if sc["efficiency"] is None:
        line = "scaling efficiency: - (both runs need a summary with samples/s)"
    else:
        line = (f"scaling efficiency {sc['efficiency']:.0%} ({other}'s samples/s per rank / {base}'s); "
                f"{other} is {sc['speedup']:.2f}x as fast as {base}, ideally {sc['ideal_speedup']:.2f}x")
    return ["run", "ranks", "samples/s", "per rank", "collectives ms", "hidden"], rows, line


def format_compare(result: dict[str, Any], name_width: int = 60, width: int = 200) -> str:
    """The terminal view: who is who, the metric table, config differences, notes, kernel diff;
    its sentences wrapped at spaces to `width` columns."""
    lines = []
    for side in ("a", "b"):
        s = result[side]
        label = f"  [{s['label']}]" if s["label"] else ""
        status = f"{s['status']} (damaged)" if s.get("problem") else s["status"]
        lines += wrap_words(printable(f"{s['id']}  {s['version'] or '?'}  {status}  {s['key_config']}{label}"),
                            width, f"{side.upper()}  ", "    ")
    lines.append("")
    lines += text_table(["metric", "A", "B", "B/A", ""], metric_rows(result), right=(1, 2, 3))
    if noise_note(result):
        lines += wrap_words(f"({noise_note(result)})", width, "  ", "   ")
    scaled = scaling_rows(result)
    if scaled:
        header, rows, line = scaled
        lines += ["", "scaling (samples/s of the whole run, and per rank: one GPU each)"]
        lines += text_table(header, rows, right=(1, 2, 3, 4, 5))
        lines += wrap_words(line, width, "  ", "  ")
    if result["config_diff"]:
        lines += ["", "config differences"]
        lines += text_table(["key", "A", "B", ""], [[d["key"], show_value(d["a"]), show_value(d["b"]),
                                                 "under test" if d["under_test"] else "NOT under test"]
                                                for d in result["config_diff"]])
    if result["notes"]:
        lines += ["", "notes"] + [line for n in result["notes"] for line in wrap_words(printable(n), width, "  - ", "    ")]
    diff = result["kernel_diff"]
    if diff is not None:
        lines += ["", "kernel diff (B vs A)"]
        for title, header, rows in kernel_sections(diff, lambda n: _cut(short_name(n), name_width)):
            lines.append(f"  {title}")
            lines += ["  " + line for line in text_table(header, rows, right=(1, 2, 3))] if rows else ["    (none)"]
    return "\n".join(printable(line) for line in lines)  # labels, notes, errors: from the runs' files


def show_value(value: Any) -> str:
    """A config value as text: lists joined, nothing as "-"."""
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    return "-" if value is None or value == "" else str(value)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def text_table(header: list[str], rows: list[list[str]], right: tuple[int, ...] = ()) -> list[str]:
    """Columns padded to their widest cell (`right`: right-aligned), each line indented two spaces."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  " + "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header)] + [line(r) for r in rows]

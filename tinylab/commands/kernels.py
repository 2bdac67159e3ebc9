"""`tinylab kernels`: the Triton kernels of v3 and v4 compiled for AMD and NVIDIA GPUs on this
machine (no GPU needed): registers, LDS/shared memory, scratch, spills and occupancy per kernel
and target; one kernel's IR stage (`--stage`); a parameter sweep (`--sweep`).
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from tinylab.core.errors import UserError

#: The most compiling processes --jobs may ask for (each holds a Triton compiler).
MAX_JOBS = 256
# registers holds the widest AMD cell, "v255+a28 s106"; 80 columns leave the limit 11
_NAME_W, _TARGET_W, _REGS_W, _LDS_W, _SCRATCH_W, _SPILL_W, _OCC_W = 18, 6, 13, 6, 7, 7, 5


def add_arguments(p) -> None:
    from tinylab.commands._common import integer, setting_type
    from tinylab.config import PRECISIONS, RunConfig, range_text
    from tinylab.service.kernels import TARGETS

    d = RunConfig()
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="one kernel (attn_fwd) or variant (rmsnorm_bwd.2); default: every kernel")
    p.add_argument("--target", action="append", default=None, metavar="T",
                   help=f"compile for T (repeatable, or comma-separated): {', '.join(TARGETS)} "
                        "(default: every one the installed Triton knows)")
    p.add_argument("--stage", default=None, metavar="STAGE",
                   help="print one stage of NAME on one --target: ttir, ttgir, llir, then amdgcn (AMD) or ptx, sass (NVIDIA)")
    p.add_argument("--sweep", default=None, metavar="PARAM=V1,V2",
                   help="recompile NAME with PARAM (a block size, num_warps, num_stages; AMD: waves_per_eu, "
                        "kpack, matrix_instr_nonkdim) at each value and tabulate what moves")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--jobs", type=integer(1, MAX_JOBS), default=None, metavar="N",
                   help=f"compile in N processes (1 to {MAX_JOBS}; default: CPU count)")
    m = p.add_argument_group("model and precision whose launches are compiled (defaults: the workshop's)")
    for name in ("vocab_size", "hidden_dim", "num_heads", "num_kv_heads", "batch_size", "seq_len"):
        m.add_argument("--" + name.replace("_", "-"), type=setting_type(name), default=getattr(d, name),
                       help=f"({range_text(name)}; default %(default)s)")
    m.add_argument("--precision", default=d.precision, metavar="P", help=f"{', '.join(PRECISIONS)} (default {d.precision})")
    m.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=False,
                   help="allow TF32 matmuls for fp32 (off: strict fp32, exact-fp32 attention dots)")


def _config(args):
    from tinylab.service.kernels import kernel_config

    names = ("vocab_size", "hidden_dim", "num_heads", "num_kv_heads", "batch_size", "seq_len", "precision", "tf32")
    return kernel_config(**{n: getattr(args, n) for n in names})


def _parse_sweep(text: str) -> tuple[str, list[int]]:
    param, _, values = text.partition("=")
    try:
        parsed = [int(v) for v in values.split(",") if v.strip()]
    except ValueError:
        parsed = []
    if not param or not parsed:
        raise UserError(f"--sweep {text!r}: expected PARAM=V1,V2,... with integer values, e.g. BLOCK_N=32,64,128")
    return param.strip(), parsed


def _progress():
    """A progress line on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        return None

    def show(p) -> None:
        line = f"{p.phase} {p.done}/{p.total}  {p.what}"[:79]
        sys.stderr.write("\r" + line.ljust(79))
        sys.stderr.flush()

    return show


def _row(name: str, target: str, report) -> str:
    head = f"{name:<{_NAME_W}} {target:<{_TARGET_W}} "
    if not report.ok:
        return (head + f"FAILED: {report.error}")[:80]
    cells = report.cells()
    widths = (_REGS_W, _LDS_W, _SCRATCH_W, _SPILL_W, _OCC_W)
    body = " ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths)))
    return f"{head}{body} {cells[-1]}"


def _header(first: str) -> str:
    cells = ("registers", "LDS", "scratch", "spills", "occ")
    widths = (_REGS_W, _LDS_W, _SCRATCH_W, _SPILL_W, _OCC_W)
    body = " ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths)))
    return f"{first:<{_NAME_W}} {'target':<{_TARGET_W}} {body} limit"


def _legend() -> list[str]:
    return [
        "registers: v VGPRs +a AGPRs a lane, s SGPRs a wave (AMD); r a thread (NVIDIA)",
        "LDS/shared bytes per workgroup; scratch bytes per lane/thread; spills: registers",
        "(AMD v/s) or bytes stored (NVIDIA); occ: waves/SIMD of 8 (AMD), warps/SM of 64",
    ]


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, 80, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False)


def render_table(anatomy, details: bool) -> str:
    from importlib.metadata import version

    c = anatomy.config
    lines = [
        f"Triton kernels of v3 and v4: hidden {c.hidden_dim}, {c.num_heads} heads ({c.num_kv_heads} kv), "
        f"seq {c.seq_len}, batch {c.batch_size}, {c.precision}{' tf32' if c.tf32 and c.precision == 'fp32' else ''}",
        f"triton {version('triton')}; " + " ".join(f"{t.name}={t.gpu}" for t in anatomy.targets),
    ]
    lines = [ln[:80] for ln in lines]
    for name, why in anatomy.skipped.items():
        lines.append(f"skipped {name}: {why}"[:80])
    lines += ["", _header("kernel")]
    for v in anatomy.variants:
        for i, (t, report) in enumerate(v.reports.items()):
            lines.append(_row(v.name if i == 0 else "", t, report))
    lines += [""] + _legend()
    numbered = [v for v in anatomy.variants if "." in v.name or details]
    if numbered:
        lines += ["", "variants (what sets them apart; where the step launches them;",
                  "an integer argument is 1, ×16 (a multiple of 16, which Triton exploits) or n):"]
        for v in numbered:
            lines += _wrap(f"{v.name}: {v.summary or '-'}", "  ")
            lines += _wrap(f"in {', '.join(v.scenarios)}", "    ")
            if details:
                for t, launch in v.launches.items():
                    params = " ".join(f"{k}={val}" for k, val in launch.config.items())
                    lines += _wrap(f"{t}: grid {'x'.join(map(str, launch.grid))} {params}", "    ")
    return "\n".join(lines)


def render_sweep(variant: str, param: str, points) -> str:
    lines = [f"{variant}: {param} swept (* = the value the step launches)", "", _header(param)]
    for p in points:
        label = f"{p.value}{'*' if p.shipped else ''}"
        lines.append(_row(label, p.target, p.report))
    return "\n".join(lines + [""] + _legend())


def _page(text: str) -> None:
    if sys.stdout.isatty():
        import pydoc

        pydoc.pager(text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def run(args) -> int:
    from tinylab.commands._common import lab_from, print_json

    cfg = _config(args)
    targets = [t.strip() for arg in args.target or [] for t in arg.split(",") if t.strip()] or None
    if (args.stage or args.sweep) and not args.name:
        raise UserError(f"{'--stage' if args.stage else '--sweep'} needs a kernel NAME, e.g. tinylab kernels attn_fwd")
    if args.stage and args.sweep:
        raise UserError("--stage and --sweep do not go together: pick one")
    if args.stage and (targets is None or len(targets) != 1):
        raise UserError("--stage shows one target's code: add one --target, e.g. --target gfx942")
    sweep_param = _parse_sweep(args.sweep) if args.sweep else None
    progress = _progress()
    try:
        study = lab_from(args).kernel_study(cfg, targets, args.name, stage=args.stage, sweep=sweep_param,
                                            jobs=args.jobs, progress=progress)
    finally:
        if progress:
            sys.stderr.write("\r" + " " * 79 + "\r")
    anatomy, text, points = study.anatomy, study.stage_text, study.points
    if args.stage:
        if args.json:
            print_json({"kernel": args.name, "target": targets[0], "stage": args.stage, "text": text})
        else:
            _page(text)
        return 0
    if sweep_param:
        name = anatomy.variant(args.name).name
        if args.json:
            print_json({"kernel": name, "param": sweep_param[0], "points": [
                {"value": p.value, "target": p.target, "shipped": p.shipped, "report": p.report.to_json()} for p in points]})
        else:
            print(render_sweep(name, sweep_param[0], points))
        return 1 if any(not p.report.ok for p in points) else 0
    if args.json:
        print_json(anatomy.to_json())
    else:
        print(render_table(anatomy, details=args.name is not None))
    return 1 if any(not r.ok for v in anatomy.variants for r in v.reports.values()) else 0

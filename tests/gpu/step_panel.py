"""The Run screen's Step panel of profiled GPU runs, as a learner sees it at 80x24 (and 120x40).

Opens the lab headless over a run store (by default the one tests/gpu/timeline_roofline.py leaves
beside $OUT), shows the Step panel of each run whose label is given, and saves a screenshot
per run and size: the eager-vs-graph contrast (v1's idle lane against v4's busy one) is read from
them side by side.

    python3 tests/gpu/step_panel.py [--runs-dir DIR] [LABEL ...]      (default: v1-fp32 v4-fp32)
Writes step_<label>_<cols>x<rows>.svg under $OUT (default ./gpu_out) and prints, per run, the
panel's first lines as the screen shows them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tinylab.runs.store import RunStore  # noqa: E402
from tinylab.tui.app import create_app  # noqa: E402

OUT = Path(os.environ.get("OUT", "gpu_out"))
SIZES = ((80, 24), (120, 40))


async def shoot(store: Path, run_id: str, label: str, size: tuple[int, int]) -> str:
    """Screenshot the run's Step panel at `size`; returns the anatomy text's first lines."""
    app = create_app(store, animate=False)
    async with app.run_test(size=size) as pilot:
        app.open_run(run_id)
        start = time.monotonic()
        while not app.screen.query("#step-pane"):
            if time.monotonic() - start > 60:
                raise SystemExit(f"{label}: no Step panel after 60 s")
            await pilot.pause(0.2)
        app.screen.query_one("#run-panes").show("step-pane")
        await pilot.pause(2)
        app.save_screenshot(str(OUT / f"step_{label}_{size[0]}x{size[1]}.svg"))
        return str(app.screen.query_one("#anatomy").render())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("labels", nargs="*", default=["v1-fp32", "v4-fp32"])
    ap.add_argument("--runs-dir", type=Path, default=OUT.resolve().parent / "timeline_runs")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    by_label = {run.config_dict.get("label"): run.id for run in RunStore(args.runs_dir).list()}
    for label in args.labels:
        if label not in by_label:
            print(f"{label}: no such run in {args.runs_dir} (have: {', '.join(sorted(by_label))})")
            continue
        for size in SIZES:
            text = asyncio.run(shoot(args.runs_dir, by_label[label], label, size))
            print(f"\n== {label} at {size[0]}x{size[1]}\n" + "\n".join(text.splitlines()[:8]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The lab driven headless on a GPU node, as a learner would use it (about 2 minutes):

1. opens the lab at 120x40 over a fresh run store; the doctor report must find the GPU and the
   form must start from the workshop preset;
2. launches v4 in bf16 (keys: the versions list, the precision select, enter), waits for the run to
   finish on the Run screen, screenshots it;
3. launches v1 with the PyTorch profiler (keys: p, space, enter), waits, opens its Hotspots (k),
   screenshots the kernel table;
4. marks the two runs on the Runs screen and opens Compare (m, m, v), screenshots it.

    python3 tests/gpu/lab_headless.py          (repo root, a GPU; textual installed or carried)
Writes lab_run.svg, lab_hotspots.svg, lab_compare.svg under $OUT (default ./gpu_out) and prints a
short table last.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tinylab.tui.app import create_app  # noqa: E402

OUT = Path(os.environ.get("OUT", "gpu_out"))
SIZE = (120, 40)


async def wait(pilot, predicate, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        await pilot.pause(0.2)
    return time.monotonic() - start


def name(pilot) -> str:
    return type(pilot.app.screen).__name__


async def main() -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    OUT.mkdir(parents=True, exist_ok=True)
    store = Path(tempfile.mkdtemp(prefix="tinylab-lab-"))
    app = create_app(store, animate=False)
    async with app.run_test(size=SIZE) as pilot:
        took = await wait(pilot, lambda: app.doctor_report is not None or app.doctor_error is not None, 120, "doctor")
        gpu = app.doctor_report.gpu if app.doctor_report else None
        rows.append(("doctor", f"{gpu.name if gpu else None} ({took:.1f} s); error: {app.doctor_error}"))
        lab = pilot.app.screen
        await pilot.pause(0.5)
        rows.append(("form preset", str(lab.query_one("#size").value)))

        # on a machine without a GPU (a dry run of this script) v2 in fp32 stands in for v4 in bf16
        version, precision, downs = ("v4", "bf16", 3) if gpu else ("v2", "fp32", 1)
        lab.query_one("#versions").focus()
        await pilot.press(*["down"] * downs)
        lab.query_one("#precision").value = precision
        lab.query_one("#versions").focus()
        await pilot.pause(0.3)
        rows.append((f"{version} check", str(lab.query_one("#check").render())[:100]))
        await pilot.press("enter")
        await wait(pilot, lambda: name(pilot) == "RunScreen", 60, "the Run screen")
        run = pilot.app.screen
        took = await wait(pilot, lambda: run.status != "running", 300, f"the {version} run")
        rows.append((f"{version} {precision} run",
                     f"{run.status} in {took:.0f} s: {str(run.query_one('#outcome').render())[:140]}"))
        pilot.app.save_screenshot(str(OUT / "lab_run.svg"))

        await pilot.press("escape")
        await wait(pilot, lambda: name(pilot) == "LabScreen", 10, "the Lab")
        lab.query_one("#versions").focus()
        await pilot.press(*["up"] * downs)  # v1
        lab.query_one("#precision").value = "fp32"
        lab.query_one("#versions").focus()
        await pilot.press("p", "space")
        await pilot.pause(0.3)
        rows.append(("v1 check", str(lab.query_one("#check").render())[:100]))
        await pilot.press("enter")
        await wait(pilot, lambda: name(pilot) == "RunScreen", 60, "the Run screen")
        run = pilot.app.screen
        took = await wait(pilot, lambda: run.status != "running", 300, "the v1 run")
        rows.append(("v1 profiled run", f"{run.status} in {took:.0f} s"))
        await pilot.press("k")
        await wait(pilot, lambda: name(pilot) == "HotspotsScreen", 30, "Hotspots")
        await pilot.pause(3)
        pilot.app.save_screenshot(str(OUT / "lab_hotspots.svg"))
        rows.append(("hotspots", " ".join(str(pilot.app.screen.query_one("#hot-head").render()).split())[:140]))

        await pilot.press("r")
        await wait(pilot, lambda: name(pilot) == "RunsScreen" and pilot.app.screen.query_one("#runs").row_count >= 2,
                   30, "the runs")
        await pilot.press("m", "down", "m", "v")
        await wait(pilot, lambda: name(pilot) == "CompareScreen", 30, "Compare")
        await pilot.pause(2)
        pilot.app.save_screenshot(str(OUT / "lab_compare.svg"))
        rows.append(("compare", "shown"))
    return rows


if __name__ == "__main__":
    result = asyncio.run(main())
    print(f"\n{'step':<16} result")
    for step, text in result:
        print(f"{step:<16} {text}")

"""The lab's first screen must not pay for torch, pandas or plotext (they load when a screen needs them)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import asyncio, sys
from tinylab.service.doctor import DoctorReport
from tinylab.tui.app import create_app

async def main():
    app = create_app(sys.argv[1], doctor=DoctorReport.from_json({"profilers": {}}))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        assert type(app.screen).__name__ == "LabScreen"
    print("LOADED", sorted(m for m in ("torch", "pandas", "plotext", "textual_plotext", "triton") if m in sys.modules))

asyncio.run(main())
"""


def test_first_screen_imports_no_heavy_modules(tmp_path):
    out = subprocess.run([sys.executable, "-c", CODE, str(tmp_path / "runs")], capture_output=True, text=True,
                         timeout=120)
    assert "LOADED []" in out.stdout, out.stdout + out.stderr

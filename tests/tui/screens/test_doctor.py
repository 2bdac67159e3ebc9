"""The Doctor screen (tinylab/tui/screens/doctor.py) at 80x24."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ..conftest import SIZE, make_app, screen_name, wait_for
from ..fakes import fake_doctor

pytestmark = pytest.mark.asyncio


async def test_every_reason_shows_whole_at_80_columns_and_missing_is_not_reverse_video(tmp_path: Path):
    """At 80 columns the reasons were cut ("deepspeed is not installe") and "✗ missing" was a
    reverse-video block."""
    long = "rocprof-compute not found on PATH (looked in /opt/rocm/bin and every folder of $PATH)"
    doctor = fake_doctor()
    doctor.profilers["rocprof-compute"] = replace(doctor.profilers["rocprof-compute"], reason=long)
    async with make_app(tmp_path / "runs", doctor=doctor).run_test(size=SIZE) as pilot:
        await pilot.press("d")
        await wait_for(pilot, lambda: screen_name(pilot) == "DoctorScreen", what="the Doctor")
        table = pilot.app.screen.query_one("#profilers")
        await wait_for(pilot, lambda: table.row_count == len(doctor.profilers), what="the profilers")
        await pilot.pause()
        assert "kind" not in table.columns  # narrow: the fix panel names it
        width = table.columns["reason"].width
        for name, entry in doctor.profilers.items():
            row = table.rows[name]
            cell = table.get_row(name)[table.get_column_index("reason")]
            needed = len(cell.wrap(pilot.app.console, width)) if entry.reason else 1
            assert width >= 30 and row.height >= needed, (name, width, row.height, needed)
        status = [table.get_row_at(row)[table.get_column_index("status")] for row in range(table.row_count)]
        assert all("reverse" not in str(cell.style) for cell in status)


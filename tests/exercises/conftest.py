"""Progress always goes to a temporary file in these tests, never to the user's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinylab.exercises import PROGRESS_ENV


@pytest.fixture(autouse=True)
def progress_file(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "progress" / "progress.json"
    monkeypatch.setenv(PROGRESS_ENV, str(path))
    return path

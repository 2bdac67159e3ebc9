"""The DeepSpeed adapter's availability probe (its hook and output: tests/profilers/test_inprocess.py)."""

from __future__ import annotations

import importlib.util

import pytest
from support.foreign import plant

from tinylab.profilers import deepspeed


def test_the_probe_never_imports_from_the_callers_folder(tmp_path, monkeypatch):
    """`python -c "import deepspeed"` imported a deepspeed.py (or torch.py) from the folder
    `tinylab doctor` was started in."""
    if importlib.util.find_spec("deepspeed") is None:
        pytest.skip("deepspeed is not installed: the probe starts no child")
    sentinel = plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    found = deepspeed.DeepSpeedAdapter().available()
    assert not sentinel.exists(), sentinel.read_text()
    assert found.reason is None or "import deepspeed failed" in found.reason

"""The rocprof-sys wrapper adapter (tinylab/profilers/rocprof_sys.py) against the stand-in executables
(tests/profilers/bin), which accept only the real tools' documented flags and write their real output
formats: wrap_argv() is accepted and runs the program, collect() reads what it wrote."""

from __future__ import annotations

import pytest
from support.adapters import CONFIG, EXPECTED, run_wrapped, totals

from tinylab.profilers.registry import get_adapter


def test_rocprof_sys(standins, tmp_path):
    adapter = get_adapter("rocprof-sys")
    out, proc = run_wrapped(adapter, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert adapter.wrap_argv(out, CONFIG)[1:] == ["--profile", "--trace", "--output", str(out), "--"]
    result = adapter.collect(out)
    assert result.format == "rocprof-sys-json"
    assert {k: v for k, v in totals(result.table).items()} == pytest.approx({k: (v[0], v[1]) for k, v in EXPECTED.items()})
    assert "ui.perfetto.dev" in result.note and any(n.endswith(".proto") for n in result.artifacts)

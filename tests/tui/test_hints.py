"""The Artifacts panel's "how to open it" hint, by file name."""

from __future__ import annotations

import pytest

from tinylab.tui.screens.hotspots import open_hint


@pytest.mark.parametrize(("path", "says", "never"), [
    ("profiles/pytorch/memory_timeline.json.gz", "tinylab timeline RUN", "ui.perfetto.dev"),  # no trace
    ("profiles/pytorch/trace.json.gz", "ui.perfetto.dev", "timeline RUN"),
    ("profiles/nsys/report.nsys-rep", "nsys-ui", "perfetto"),
])
def test_each_artifact_gets_a_way_to_open_it_that_works(path, says, never):
    hint = open_hint(path)
    assert says in hint and never not in hint

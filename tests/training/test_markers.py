"""tinylab/core/markers.py: the step ranges the trainer marks, read back as each profiler names them."""

from __future__ import annotations

import pytest

from tinylab.core.markers import parse_step_range, step_range


@pytest.mark.parametrize(("step", "warmup"), [(0, True), (3, False), (1234, False)])
def test_a_step_range_reads_back(step, warmup):
    assert parse_step_range(step_range(step, warmup)) == (step, warmup)


@pytest.mark.parametrize(("name", "got"), [
    (":tinylab step 3", (3, False)),  # Nsight Systems: torch's ranges are in the default domain
    ("NVTX:tinylab warm-up step 0", (0, True)),
    ("  tinylab step 7 ", (7, False)),
    ("forward", None),
    ("tinylab step", None),
    ("tinylab step 3 forward", None),  # a range inside a step is not a step
])
def test_names_as_profilers_write_them(name, got):
    assert parse_step_range(name) == got

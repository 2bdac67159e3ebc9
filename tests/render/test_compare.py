"""`tinylab compare`'s text (tinylab.render.compare): every ratio and verdict in the table, nothing
of a run's files printed raw, ratios with their x, and prose that wraps to the terminal."""

from __future__ import annotations

import json
import re

import pytest
from support.runs import clone_run

from tinylab.analysis.compare import compare_runs
from tinylab.render.compare import format_compare, noise_note, ratio_text


def test_text_table_shows_every_ratio(finished_pair):
    result = compare_runs(finished_pair.v1.record(), finished_pair.v2.record())
    text = format_compare(result)
    assert "B/A" in text and finished_pair.v1.id in text and finished_pair.v2.id in text
    for m in result.metrics:
        line = next(line for line in text.splitlines() if line.strip().startswith(m.label))
        if m.ratio is not None:
            assert ratio_text(m.ratio) in line
        if m.better:
            assert f"{m.better.upper()} better" in line
    assert "config differences" in text and "qkv_fusion" in text


def test_the_text_view_prints_no_control_character_of_a_run_file(finished_pair, tmp_path):
    b = clone_run(finished_pair.v2, tmp_path, config={"label": "x\x1b[2J"}, drop=("summary", "exit"))
    with open(b.dir / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"event": "error", "type": "E\x1b]0;t\x07", "message": "m\nfake line"}) + "\n")
    text = format_compare(compare_runs(finished_pair.v1.record(), b.record()))
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)
    assert "failed: E?]0;t?: m?fake line" in text


@pytest.mark.parametrize("ratio, text", [(0.944, "0.94x"), (10.4, "10.4x"), (123.4, "123x"), (None, "-")])
def test_ratios_keep_their_x(ratio, text):
    assert ratio_text(ratio) == text


def test_the_header_notes_and_noise_note_fit_80_columns(finished_pair, tmp_path):
    """At 80 columns the run lines, the noise note and the notes wrap at spaces; the words and their
    order are those of the unwrapped text."""
    noisy = clone_run(finished_pair.v1, tmp_path / "a", config={"seq_len": 16, "num_steps": 9, "label": "a long label " * 3},
                      edit=lambda e: e.update(step_ms_median=100.0, step_ms_p10=50.0, step_ms_p90=700.0)
                      if e["event"] == "summary" else None)
    result = compare_runs(noisy.record(), finished_pair.v2.record())
    assert result.notes and noise_note(result)
    narrow, wide = format_compare(result, width=80), format_compare(result, width=1000)
    prose = lambda text: [l for l in text.split("\n\nconfig differences")[0].splitlines()  # noqa: E731
                          if not l.startswith("  metric") and "x  " not in l]
    assert max(map(len, narrow.splitlines()[:2])) <= 80 and len(prose(narrow)) > len(prose(wide))
    assert all(len(line) <= 80 for line in prose(narrow)), narrow
    assert " ".join(" ".join(prose(narrow)).split()) == " ".join(" ".join(prose(wide)).split())
    notes = narrow.split("\nnotes\n")[1].split("\n\n")[0].splitlines()
    assert all(len(line) <= 80 for line in notes) and len(notes) > len(result.notes)

"""`tinylab advise`: the real command line, its JSON (exactly the nine keys an item) and its errors."""

from __future__ import annotations

import json
import os

from support.advice import A, bad_init_run
from support.runs import cli

KEYS = ["rule", "severity", "condition", "measured", "threshold", "impact", "action", "lesson", "evidence"]


def test_advise_prints_json_with_exactly_the_nine_keys_and_text_at_80_columns(tmp_path):
    bad_init_run(tmp_path / "runs")
    out = cli("advise", A, "--json", "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    items = json.loads(out.stdout)
    assert [list(i) for i in items] == [KEYS] and items[0]["rule"] == "bad-init"
    assert items[0]["measured"]["value"] == 40.0
    text = cli("advise", "last", "--runs-dir", str(tmp_path / "runs"), env={**os.environ, "COLUMNS": "80"})
    assert text.returncode == 0, text.stderr
    assert "✗ error  bad-init" in text.stdout and max(map(len, text.stdout.splitlines())) <= 80
    assert f"tinylab advise {A} --try bad-init" in text.stdout


def test_a_bad_reference_is_one_line_and_exit_code_2(tmp_path):
    (tmp_path / "runs").mkdir()
    out = cli("advise", "nope", "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "nope" in out.stderr

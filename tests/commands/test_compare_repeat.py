"""`tinylab compare A B --repeat N|auto` (tinylab/commands/compare.py): its flags' one-line errors,
which launch nothing; the JSON's pooled ids and repeat object; and a real identical tiny pair
repeated twice, which pools 3 runs a side and names no winner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.repeat import FakeLaunches, written_run
from support.runs import TINY_FLAGS, cli, wait_for_status

from tinylab.cli import main
from tinylab.runs.store import TERMINAL, Run
from tinylab.service.lab import Lab


@pytest.fixture
def pair(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    a, b = written_run(root, 100.0), written_run(root, 104.0)
    fake = FakeLaunches.of(a, b, [98.0, 103.0], [101.0, 99.0]).patch(monkeypatch, Lab)
    return root, a, b, fake


@pytest.mark.parametrize("flags, error", [
    (["--repeat", "0"], "argument --repeat: must be a positive integer or 'auto', got '0'"),
    (["--repeat", "twice"], "argument --repeat: must be a positive integer or 'auto', got 'twice'"),
    (["--repeat", "auto", "--max-runs", "1"], "argument --max-runs: must be an integer >= 2, got '1'"),
    (["--repeat", "2", "--max-runs", "4"], "--max-runs is the budget of --repeat auto: add --repeat auto"),
    (["--max-runs", "4"], "--max-runs is the budget of --repeat auto"),
])
def test_bad_repeat_flags_are_one_line_errors_and_launch_nothing(pair, capsys, flags, error):
    root, a, b, fake = pair
    try:
        code = main(["compare", a.id, b.id, "--runs-dir", str(root), *flags])
    except SystemExit as exit_:  # argparse's own refusal
        code = exit_.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and error in err[0], err
    assert fake.launched == [] and len(list(root.iterdir())) == 2


def test_the_json_lists_the_pooled_ids_and_the_repeat(pair, capsys):
    root, a, b, fake = pair
    assert main(["compare", a.id, b.id, "--runs-dir", str(root), "--repeat", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    launched = doc["repeat"]["launched"]
    assert [r["side"] for r in launched] == ["b", "a", "a", "b"] and all(r["status"] == "finished" for r in launched)
    assert doc["pooled"] == {"a": [a.id] + [r["id"] for r in launched if r["side"] == "a"],
                             "b": [b.id] + [r["id"] for r in launched if r["side"] == "b"]}
    assert doc["repeat"]["ended"].startswith("done: 2 more runs a side; ")
    lines = err.splitlines()  # the progress goes to stderr under --json
    assert lines[0].startswith(f"repeating A ({a.id}) and B ({b.id}) interleaved, at most 4 runs (B A A B)")
    assert lines[1].startswith("repeat 1/4: B ") and len([li for li in lines if li.startswith("repeat ")]) == 4


def test_an_identical_tiny_pair_repeated_twice_pools_three_runs_a_side_and_names_no_winner(tmp_path):
    """Real runs: the same tiny CPU config and seed twice (at once: what is timed here is the
    repeats), then `--repeat 2` (4 more runs, one at a time)."""
    root = str(tmp_path / "runs")
    # 60 steps: long enough for load samples, so the suite's other worker (another test's busy
    # loops, say) is measured and widens the interval; 4 steps were unmeasured, and a pair that
    # met the loops on one side was named "A better" in CI
    flags = ["--runs-dir", root, "--num-steps", "60", "--warmup-steps", "3", *TINY_FLAGS]
    runs = []
    for _ in range(2):
        proc = cli("run", "--detach", "--json", *flags)
        assert proc.returncode == 0, proc.stderr
        runs.append(Run(Path(json.loads(proc.stdout)["dir"])))
    assert [wait_for_status(run, TERMINAL, timeout=120) for run in runs] == ["finished"] * 2
    ids = [run.id for run in runs]
    proc = cli("compare", *ids, "--runs-dir", root, "--repeat", "2", "--json", timeout=240)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [len(doc["pooled"][side]) for side in "ab"] == [3, 3], doc["repeat"]
    assert doc["pooled"]["a"][0] == ids[0] and doc["pooled"]["b"][0] == ids[1]
    rows = {m["key"]: m for m in doc["metrics"]}
    for key in ("samples_per_s", "step_ms_median"):
        assert rows[key]["better"] is None and rows[key]["interval"]["runs"] == [3, 3], rows[key]
    progress = [li for li in proc.stderr.splitlines() if li.startswith("repeat ")]
    assert [li.split()[2] for li in progress] == ["B", "A", "A", "B"], proc.stderr

"""proton's .hatchet tree: the v3 run recorded on an H100 (tests/fixtures/proton, SOURCE.txt).

Expected numbers come from the fixture itself, walked with plain json code here, never from
tinylab's reader.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from support.formats import rows, write
from support.paths import FIX

from tinylab.analysis import formats
from tinylab.analysis.formats.proton import load_hatchet
from tinylab.analysis.hotspots import load_kernel_table
from tinylab.core.errors import UserError

TREE = FIX / "proton" / "proton.hatchet"
INSTRUMENTED = FIX / "proton" / "instrument_attn_fwd.hatchet"


def _walk(node, phase=None, out=None, phases=None):
    """(name -> [calls, time ns, flops, bytes]), (phase -> time ns) by a plain walk."""
    out = defaultdict(lambda: [0, 0, 0.0, 0.0]) if out is None else out
    phases = defaultdict(int) if phases is None else phases
    name, metrics = node["frame"]["name"], node["metrics"]
    phase = name if name in ("forward", "backward", "optimizer") else phase
    if "device_id" in metrics:
        row = out[name]
        row[0] += metrics["count"]
        row[1] += metrics["time (ns)"]
        row[2] += metrics.get("flops", 0.0)
        row[3] += metrics.get("bytes", 0.0)
        if phase:
            phases[phase] += metrics["time (ns)"]
    for child in node["children"]:
        _walk(child, phase, out, phases)
    return out, phases


def test_the_v3_tree_becomes_the_kernel_table():
    expected, _ = _walk(json.loads(TREE.read_text())[0])
    table, fmt = load_kernel_table(TREE)
    assert fmt == "proton"
    got = rows(table)
    assert got.keys() == expected.keys()
    for name, (calls, total, _, _) in expected.items():
        assert (got[name]["calls"], got[name]["total_ns"]) == (calls, total)
    # the rope kernel runs in the forward and (as its inverse) in the backward: one row of both
    assert got["_rope_kernel"]["calls"] == 48 and got["_rmsnorm_fwd_kernel"]["calls"] == 51
    assert table["min_ns"].isna().all()  # a tree keeps totals: no made-up minimum or maximum
    assert got["_attn_fwd_kernel"]["category"] == "attention"


def test_the_note_names_backend_triton_steps_and_phases():
    _, phases = _walk(json.loads(TREE.read_text())[0])
    note = load_kernel_table(TREE)[0].attrs["note"]
    assert "proton cupti backend, triton 3.6.0" in note and "steps 5..7" in note
    for phase in ("forward", "backward", "optimizer"):
        assert f"{phase} {phases[phase] / 1e6:.3f} ms" in note
    assert "launch metadata for 8 kernels" in note


def test_without_the_session_file_the_note_says_so(tmp_path):
    shutil.copy(TREE, tmp_path / "proton.hatchet")
    note = load_kernel_table(tmp_path / "proton.hatchet")[0].attrs["note"]
    assert "backend and triton not recorded (no proton-session.json beside the tree)" in note


def test_launch_metadata_counts_per_kernel():
    expected, _ = _walk(json.loads(TREE.read_text())[0])
    kernels = load_hatchet(TREE).kernels
    triton = {name for name, (_, _, flops, _) in expected.items() if flops}
    assert triton == {"_rmsnorm_fwd_kernel", "_rmsnorm_bwd_kernel", "_rope_kernel", "_swiglu_fwd_kernel",
                      "_swiglu_bwd_kernel", "_attn_fwd_kernel", "_attn_bwd_dq_kernel", "_attn_bwd_dkdv_kernel"}
    for name in triton:
        assert (kernels[name]["flops"], kernels[name]["bytes"]) == (expected[name][2], expected[name][3])
    assert not any(kernels[name].get("has_flops") for name in expected if name not in triton)


def test_a_profile_folder_reads_the_tree_not_the_session_file():
    parsed = formats.load(FIX / "proton")
    assert parsed.format == "proton" and parsed.note.startswith("read proton.hatchet")


def test_an_instrumentation_tree_has_regions_and_no_kernel_table():
    with pytest.raises(UserError, match="an instrumentation profile: cycles of regions inside _attn_fwd_kernel"):
        formats.load(INSTRUMENTED)
    data = json.loads(INSTRUMENTED.read_text())[0]["children"][0]["children"]
    assert load_hatchet(INSTRUMENTED).regions == {"_attn_fwd_kernel": {r["frame"]["name"]: r["metrics"]["cycles"]
                                                                       for r in data}}


@pytest.mark.parametrize("text, problem", [
    ('[{"frame": {"name": "ROOT"}, "metrics": {}, "children": []}]', "holds no kernel"),
    ('[{"frame": {"name": "ROOT"}, "metrics": {}, "children": [', "not valid JSON"),
])
def test_bad_trees_fail_in_one_line(tmp_path, text, problem):
    path = write(tmp_path, "p.hatchet", text)
    with pytest.raises(UserError, match=problem) as info:
        formats.load(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_a_crafted_deep_tree_is_refused(tmp_path):
    node: dict = {"frame": {"name": "k"}, "metrics": {"count": 1, "time (ns)": 5, "device_id": "0"}, "children": []}
    for _ in range(300):
        node = {"frame": {"name": "s"}, "metrics": {}, "children": [node]}
    path = tmp_path / "deep.hatchet"
    path.write_text(json.dumps([node]))
    with pytest.raises(UserError, match="deeper than 200"):
        load_hatchet(path)
    with pytest.raises(UserError):
        formats.load(path)


def test_a_linked_session_file_is_not_followed(tmp_path):
    shutil.copy(TREE, tmp_path / "proton.hatchet")
    secret = tmp_path / "elsewhere.json"
    secret.write_text('{"backend": "stolen", "triton": "9"}')
    (tmp_path / "proton-session.json").symlink_to(secret)
    note = load_kernel_table(tmp_path / "proton.hatchet")[0].attrs["note"]
    assert "stolen" not in note and "not recorded" in note


def test_the_fixture_is_small():
    assert TREE.stat().st_size < 64 << 10 and Path(INSTRUMENTED).stat().st_size < 8 << 10

"""The lab's Backend: its doctor child."""

from __future__ import annotations

from support.foreign import plant

from tinylab.tui.backend import Backend


def test_the_doctor_child_never_imports_from_the_labs_folder(tmp_path, monkeypatch):
    """Opening the lab in a folder holding a torch.py (or models/, or a tinylab/ of one's own) ran
    that code in the doctor child (`python -m tinylab doctor` puts the folder first on sys.path)."""
    sentinel = plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    report = Backend(tmp_path / "runs").doctor()
    assert not sentinel.exists(), sentinel.read_text()
    assert report.profilers["pytorch"].available and report.packages["torch"]

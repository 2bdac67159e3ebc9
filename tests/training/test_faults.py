"""tinylab/training/faults.py: every fault the config accepts is in the catalogue, and says where its code lives."""

from __future__ import annotations

from pathlib import Path

from tinylab.config import FAULTS
from tinylab.training.faults import CATALOGUE

REPO = Path(__file__).resolve().parents[2]


def test_every_fault_has_an_entry_for_the_same_versions():
    assert set(CATALOGUE) == set(FAULTS)
    for name, fault in CATALOGUE.items():
        assert fault.versions == FAULTS[name]
        assert fault.observable_on in ("cpu", "gpu")


def test_each_entry_names_a_file_of_the_project():
    for fault in CATALOGUE.values():
        path = fault.where.split()[0]
        assert (REPO / path).is_file(), f"{fault.name}: {fault.where}"

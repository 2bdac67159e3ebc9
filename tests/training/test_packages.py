"""Another project's `models`/`kernels` package earlier on sys.path: doctor warns, the trainer refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tinylab.training.packages import SHIPPED, foreign_packages
from tinylab.runs.launcher import SAFE_PATH


def test_the_shipped_packages_are_tinylabs_own():
    assert foreign_packages() == {}


def test_a_shadowing_package_is_reported_by_doctor_and_refused_by_the_trainer(tmp_path):
    shadow = tmp_path / "shadow"
    (shadow / "models").mkdir(parents=True)
    (shadow / "models" / "__init__.py").write_text("raise SystemExit('foreign models imported')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    doctor = subprocess.run([sys.executable, "-m", "tinylab", "doctor", "--json"], capture_output=True, text=True,
                            timeout=120, env=env, cwd=tmp_path)
    assert doctor.returncode == 0, doctor.stderr
    warnings = json.loads(doctor.stdout)["warnings"]
    assert len(warnings) == 1 and f"'models' resolves to {shadow / 'models'}" in warnings[0]
    config = tmp_path / "run" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"device": "cpu", "hidden_dim": 64, "num_layers": 1, "num_heads": 4,
                                  "num_kv_heads": 4, "seq_len": 16, "batch_size": 2, "num_steps": 2,
                                  "warmup_steps": 1}))
    trainer = subprocess.run([sys.executable, *SAFE_PATH, "-m", "tinylab.training.trainer", "--config", str(config)],
                             capture_output=True, text=True, timeout=120, env=env, cwd=config.parent)
    assert trainer.returncode == 2, trainer.stderr
    assert "another project's package shadows it" in trainer.stderr and "foreign models imported" not in trainer.stderr
    assert set(SHIPPED) >= {"models", "kernels"}

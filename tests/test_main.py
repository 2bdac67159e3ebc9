"""`python -m tinylab` from a learner's folder never imports that folder's exercises/, models/ or kernels/."""

from __future__ import annotations

import os
import subprocess
import sys

from support.runs import REPO


def test_python_m_tinylab_ignores_the_callers_packages(tmp_path):
    sentinel = tmp_path / "foreign-code-ran"
    for name in ("exercises", "models", "kernels"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"open({str(sentinel)!r}, 'a').write({name!r})\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "tinylab", "exercises", "list"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env=env)
    assert not sentinel.exists(), sentinel.read_text()
    assert proc.returncode == 0 and "straggler" in proc.stdout, proc.stderr[-2000:]

"""On-disk cache of plans and compiled kernels, so a second `tinylab kernels` is instant.

Entries are keyed by content (launches.plan_key for plans; compile.compile_key for a kernel:
its source hash, parameters, target and the Triton version), never invalidated, only missed.
Several processes may write the same entry at once (CI workers, a CLI beside the lab): every
entry is written under a temporary name and renamed into place, which POSIX makes atomic, so a
reader sees a whole entry or none, and the first writer wins.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

from tinylab.core.safeio import gunzip_bounded, read_bounded


def default_root() -> Path:
    """$XDG_CACHE_HOME/tinylab/anatomy (~/.cache/tinylab/anatomy when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tinylab" / "anatomy"


#: The most a cached stage or binary may hold, compressed or not (a large kernel's assembly is a few MB).
BLOB_LIMIT = 256 << 20


class Cache:
    """Small JSON documents (``json/<key>.json``: plans, which targets Triton knows) and
    compiled kernels (``kernels/<key>/``: ``report.json`` and one gzip file per IR stage or
    binary) under ``root``."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else default_root()

    def _tmp(self) -> Path:
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        return self.root / "tmp"

    # ------------------------------------------------------------------------------- json
    def get_json(self, key: str) -> dict | None:
        try:
            return json.loads((self.root / "json" / f"{key}.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def put_json(self, key: str, doc: dict) -> None:
        final = self.root / "json" / f"{key}.json"
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._tmp(), suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        os.replace(tmp, final)

    # ---------------------------------------------------------------------------- kernels
    def get_report(self, key: str) -> dict | None:
        try:
            return json.loads((self.root / "kernels" / key / "report.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def get_blob(self, key: str, name: str) -> bytes | None:
        """A stored stage or binary of a compiled kernel, as bytes (bounded: a regular file that
        gunzips to at most BLOB_LIMIT)."""
        path = self.root / "kernels" / key / f"{name}.gz"
        try:
            return gunzip_bounded(read_bounded(path, BLOB_LIMIT), BLOB_LIMIT, str(path))
        except FileNotFoundError:
            return None

    def get_stage(self, key: str, stage: str) -> str | None:
        blob = self.get_blob(key, stage)
        return None if blob is None else blob.decode("utf-8")

    def add_stage(self, key: str, stage: str, content: str | bytes) -> None:
        """Add a stage made later to a kernel's entry: SASS, from the stored cubin; or every stage
        of an entry whose report was kept alone (the report stays: it is the same compile's)."""
        data = content.encode("utf-8") if isinstance(content, str) else content
        fd, tmp = tempfile.mkstemp(dir=self._tmp(), suffix=".gz")
        with os.fdopen(fd, "wb") as fh:
            fh.write(gzip.compress(data, 1))
        os.replace(tmp, self.root / "kernels" / key / f"{stage}.gz")

    def put_kernel(self, key: str, report: dict, stages: dict[str, str | bytes]) -> None:
        """Store a compile's report, IR stages and binaries as one directory, renamed into
        place whole."""
        final = self.root / "kernels" / key
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self._tmp()))
        for name, content in stages.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            # level 1: a fifth of the size of the text at a third of level 6's time
            (tmp / f"{name}.gz").write_bytes(gzip.compress(data, 1))
        (tmp / "report.json").write_text(json.dumps(report), encoding="utf-8")
        try:
            os.rename(tmp, final)
        except OSError:  # another writer got there first: its entry is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)

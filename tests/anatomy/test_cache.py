"""The on-disk cache: where it lives, what it returns, and many writers at once."""

import multiprocessing
from pathlib import Path

from tinylab.anatomy.cache import Cache, default_root


def test_root_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_root() == tmp_path / "tinylab" / "anatomy"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_root() == Path.home() / ".cache" / "tinylab" / "anatomy"


def test_round_trips_and_misses(tmp_path):
    cache = Cache(tmp_path)
    assert cache.get_json("p") is None and cache.get_report("k") is None and cache.get_stage("k", "ptx") is None
    cache.put_json("p", {"v3": [1, 2]})
    cache.put_kernel("k", {"regs": 3}, {"ptx": "// ptx text é"})
    assert cache.get_json("p") == {"v3": [1, 2]}
    assert cache.get_report("k") == {"regs": 3}
    assert cache.get_stage("k", "ptx") == "// ptx text é"
    assert cache.get_stage("k", "sass") is None


def _write(root: str, n: int) -> None:
    cache = Cache(Path(root))
    cache.put_kernel("same", {"writer": n}, {"amdgcn": f"text of writer {n}\n" * 1000})
    cache.put_json("same", {"writer": n})


def test_concurrent_writers_leave_one_whole_entry(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write, args=(str(tmp_path), n)) for n in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = Cache(tmp_path)
    writer = cache.get_report("same")["writer"]
    assert cache.get_stage("same", "amdgcn") == f"text of writer {writer}\n" * 1000  # report and stages of one writer
    assert cache.get_json("same")["writer"] in range(6)
    assert not any((tmp_path / "tmp").iterdir()), "losing writers clean up their temporary entries"

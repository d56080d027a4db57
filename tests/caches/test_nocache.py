"""``NoCache`` (``--no-cache``) answers the stat cache's interface and remembers nothing; only a
stat cache with a file is ``persistent`` (a clean index is built for it alone)."""

from __future__ import annotations

import os
import time

from driftscan.caches import racy
from driftscan.caches.statcache import NoCache, StatCache
from driftscan.environment import resolve_target
from driftscan.environment.verify import verify


def _files(root):
    return {os.path.join(d, n): os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(root) for n in names}


def test_no_cache_hashes_everything_and_leaves_the_stat_cache_alone(tmp_path, wheelhouse, monkeypatch):
    from fixtures import venvs
    from fixtures.harness import offline

    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "six==1.17.0")
    monkeypatch.setattr(racy, "RACY_NS", 0)  # ctime cannot be set back: trust what was written before the run
    target = resolve_target(str(venv))
    cache_dir = tmp_path / "cache"

    warm = StatCache.for_target(str(venv), str(cache_dir))
    first = verify(target, jobs=2, stat_cache=warm)
    warm.save()
    assert warm.persistent and warm.misses > 0
    kept = _files(cache_dir)
    assert warm.path in kept  # the digests of the aged files, kept for the next run

    none = NoCache()
    second = verify(target, jobs=2, stat_cache=none)
    none.save()
    assert not none.persistent
    assert none.entries == {} and none.clean_index() is None
    assert none.hits == 0 and none.misses == warm.misses  # every file hashed again, as on the first run
    assert [(c.path, c.kind) for c in second.checks] == [(c.path, c.kind) for c in first.checks]
    assert second.files_checked == first.files_checked
    assert _files(cache_dir) == kept  # the stat cache on disk untouched


def test_an_in_memory_stat_cache_is_not_persistent_and_writes_nothing(tmp_path):
    memory = StatCache(None)
    path = tmp_path / "f"
    path.write_bytes(b"x")
    st = os.stat(path)
    memory.store(str(path), st, "sha256", b"\1" * 32, time.time_ns() + 10 ** 10)
    assert not memory.persistent
    assert memory.lookup(str(path), st, "sha256") == b"\1" * 32  # remembered for this run
    memory.set_clean_index({"files_checked": 1})
    assert memory.clean_index() is None  # no file to keep an index in
    memory.save()
    assert os.listdir(tmp_path) == ["f"]
    nothing = NoCache()
    nothing.store(str(path), st, "sha256", b"\1" * 32, time.time_ns() + 10 ** 10)
    assert nothing.lookup(str(path), st, "sha256") is None

"""The stat cache skips re-hashing unchanged files, and never hides an edit."""

from __future__ import annotations

import os
import time

from driftscan.caches.racy import RACY_NS
from driftscan.caches.statcache import StatCache
from driftscan.environment import resolve_target
from driftscan.environment.verify import verify


def run(venv, cache_dir):
    cache = StatCache.for_target(str(venv), str(cache_dir))
    result = verify(resolve_target(str(venv)), jobs=2, stat_cache=cache)
    cache.save()
    return result, cache


def age(path, seconds=10):
    """Make a file look older than the racy window, as any file installed a while ago is."""
    old = time.time() - seconds
    os.utime(path, (old, old))


def age_tree(root):
    for dirpath, _, names in os.walk(root):
        for name in names:
            if not os.path.islink(os.path.join(dirpath, name)):
                age(os.path.join(dirpath, name))


def test_warm_run_hashes_nothing_and_edits_are_still_caught(tmp_path, wheelhouse):
    from fixtures import venvs
    from fixtures.harness import offline

    venv = venvs.make_pip_venv(tmp_path / "v")
    venvs.pip_install(venv, *offline(wheelhouse), "six==1.17.0", "requests==2.32.3")
    age_tree(venv)
    cache_dir = tmp_path / "cache"
    # ctime cannot be set back: entries written now are racily clean until RACY_NS has passed.
    first, cold = run(venv, cache_dir)
    assert first.checks == () and cold.hits == 0 and cold.misses > 0
    time.sleep(RACY_NS / 1e9 + 0.2)
    _, rehashed = run(venv, cache_dir)  # still racy at first write: hashed again, stored with a later time
    _, warm = run(venv, cache_dir)
    assert warm.misses == 0 and warm.hits == rehashed.hits + rehashed.misses
    assert not str(cache_dir).startswith(str(venv))

    site = venvs.site_packages_of(venv)
    six = site / "six.py"
    st = six.stat()
    data = six.read_bytes()
    six.write_bytes(data.replace(b"import", b"imporT", 1))  # same size
    os.utime(six, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime: only ctime tells
    assert six.stat().st_size == st.st_size and six.stat().st_mtime_ns == st.st_mtime_ns
    result, _ = run(venv, cache_dir)
    assert [os.path.basename(c.path) for c in result.checks] == ["six.py"]


def test_racy_entries_are_not_trusted(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    st = os.stat(path)
    cache = StatCache(str(tmp_path / "c.json"))
    cache.store(str(path), st, "sha256", b"\x01" * 32, hashed_at=st.st_mtime_ns + 1)
    assert cache.lookup(str(path), st, "sha256") is None  # hashed within the racy window
    cache.store(str(path), st, "sha256", b"\x01" * 32, hashed_at=max(st.st_mtime_ns, st.st_ctime_ns) + RACY_NS + 1)
    assert cache.lookup(str(path), st, "sha256") == b"\x01" * 32
    assert cache.lookup(str(path), st, "sha512") is None  # another algorithm is another question


def test_damaged_or_foreign_cache_file_is_ignored(tmp_path):
    bad = tmp_path / "c.bin"
    bad.write_text("{not json")
    assert StatCache(str(bad)).lookup(str(bad), os.stat(bad), "sha256") is None
    bad.write_text('{"format": "something-else", "files": {"x": [1]}}')
    assert StatCache(str(bad))._entries == {}

    good = StatCache(str(bad))
    st = os.stat(bad)
    good.store(str(bad), st, "sha256", b"\1" * 32, hashed_at=max(st.st_mtime_ns, st.st_ctime_ns) + RACY_NS + 1)
    good.save()
    assert StatCache(str(bad)).lookup(str(bad), st, "sha256") == b"\1" * 32  # it round-trips...
    data = bad.read_bytes()
    for damaged in (data[:-7], data[:-1] + bytes([data[-1] ^ 1]), data[:30]):  # ...until damaged
        bad.write_bytes(damaged)
        assert StatCache(str(bad))._entries == {}


def test_unwritable_cache_dir_is_skipped(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = StatCache(str(blocker / "sub" / "c.json"))
    cache.store("p", os.stat(blocker), "sha256", b"\0" * 32, 0)
    cache.save()  # no exception: a cache that cannot be written is only a slower next run


def test_no_cache_flag_neither_reads_nor_writes_the_cache(copy_fixture):
    from fixtures.harness import run_cli, settle

    site = copy_fixture("malformed")
    settle(site)  # else nothing would be remembered, --no-cache or not
    cache_file = StatCache.for_target(str(site)).path
    assert cache_file.startswith(os.environ["DRIFTSCAN_CACHE_DIR"])
    assert run_cli("audit", "--site-packages", str(site), "--no-cache").returncode == 3
    assert not os.path.exists(cache_file)
    assert run_cli("audit", "--site-packages", str(site)).returncode == 3
    assert os.path.exists(cache_file)


def test_parsed_records_are_remembered_until_the_record_changes(copy_fixture, tmp_path, monkeypatch):
    from driftscan.environment import dists
    from fixtures.harness import settle

    site = copy_fixture("malformed")
    settle(site)
    cache_dir = tmp_path / "cache"
    target = resolve_target(None, [str(site)])

    def audit_once():
        cache = StatCache.for_target(str(site), str(cache_dir))
        result = verify(target, jobs=1, stat_cache=cache)
        cache.save()
        return sorted((c.kind.value, c.path) for c in result.checks), sorted((e.path, e.message) for e in result.errors)

    first = audit_once()
    assert first[1], "the malformed fixture has RECORD issues, which must come back from the cache too"
    parses = []
    real_parse = dists.parse_record
    monkeypatch.setattr(dists, "parse_record", lambda *a, **k: parses.append(a) or real_parse(*a, **k))
    assert audit_once() == first
    assert parses == []  # every RECORD came from the cache

    record = next(site.glob("*.dist-info/RECORD"))
    record.write_text(record.read_text() + "added_by_hand.py,,\n")
    again = audit_once()
    assert len(parses) == 1 and parses[0][0].endswith("added_by_hand.py,,\n")
    assert again != first

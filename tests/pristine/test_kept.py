"""driftscan.pristine.kept: verified originals kept in the user cache, content-addressed, checked
again on every read; ``OriginalFinder`` looking in ``--wheels`` directories."""

from __future__ import annotations

import hashlib
import os

import pytest

from driftscan.pristine.kept import OriginalFinder, keep, kept, kept_path, matches
from fixtures.wheelfiles import installed, wheel_file
from fixtures.wheels import record_hash

ORIGINAL = b"X = 1\n"
HASH = record_hash(ORIGINAL)  # RECORD's spelling: sha256=<urlsafe base64>


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_matches_checks_the_digest():
    assert matches(HASH, ORIGINAL)
    assert matches("sha256=" + hashlib.sha256(ORIGINAL).hexdigest(), ORIGINAL)  # hex is accepted too
    assert not matches(HASH, b"X = 2\n")
    assert not matches(None, ORIGINAL) and not matches("", ORIGINAL) and not matches("sha256=bad", ORIGINAL)


def test_kept_path_is_named_by_the_verified_digest(private_cache):
    assert kept_path(HASH) == str(private_cache / "originals" / f"sha256-{hashlib.sha256(ORIGINAL).hexdigest()}")
    assert kept_path("nonsense") is None and kept_path(None) is None


def test_keep_then_kept(private_cache):
    assert kept(HASH) is None
    assert keep(HASH, ORIGINAL)
    assert kept(HASH) == ORIGINAL
    assert os.path.isfile(kept_path(HASH))
    assert keep(HASH, ORIGINAL)  # already kept


def test_keep_refuses_bytes_that_are_not_the_original(private_cache):
    assert not keep(HASH, b"X = 2\n")
    assert not keep("sha256=bad", ORIGINAL)
    assert not (private_cache / "originals").exists()


def test_a_damaged_or_forged_cache_entry_is_not_used():
    assert keep(HASH, ORIGINAL)
    with open(kept_path(HASH), "wb") as f:
        f.write(b"X = 666\n")
    assert kept(HASH) is None
    os.unlink(kept_path(HASH))
    os.symlink("/etc/hostname", kept_path(HASH))  # a link is not followed
    assert kept(HASH) is None


def test_finder_finds_the_original_in_a_wheels_directory_and_keeps_it(tmp_path):
    house = tmp_path / "house"
    wheel = wheel_file(house, "pkg", "1.0", {"pkg/core.py": ORIGINAL, "pkg/__init__.py": ""})
    like = installed(tmp_path / "site", "pkg", "1.0", {})
    finder = OriginalFinder(wheels=[str(house)])
    try:
        data, where, tried = finder.find("pkg", "1.0", "pkg/core.py", HASH, like)
        assert data == ORIGINAL and where == f"--wheels {wheel}"
        assert tried == ["--fetch (not asked for)"]
        assert kept(HASH) == ORIGINAL
        # another file of the release is read from the same wheel
        data, _, _ = finder.find("pkg", "1.0", "pkg/__init__.py", record_hash(b""), like)
        assert data == b""
        # the release was looked for once a run: a wheel added to the directory since is not listed
        wheel_file(house, "pkg", "1.0.0", {"pkg/new.py": b"N\n"})
        data, _, tried = finder.find("pkg", "1.0", "pkg/new.py", record_hash(b"N\n"), like)
        assert data is None and tried[-1] == f"--wheels {wheel} (no member pkg/new.py with the checkpoint's hash)"
    finally:
        finder.close()


def test_finder_says_what_it_tried(tmp_path):
    house = tmp_path / "house"
    wheel = wheel_file(house, "pkg", "1.0", {"pkg/core.py": b"X = 2\n"})
    finder = OriginalFinder(wheels=[str(house)])
    data, where, tried = finder.find("pkg", "1.0", "pkg/core.py", HASH)
    assert data is None and where == ""
    assert tried == ["--fetch (not asked for)",
                     f"--wheels {wheel} (no member pkg/core.py with the checkpoint's hash)"]
    assert kept(HASH) is None
    data, _, tried = OriginalFinder().find("pkg", "1.0", "pkg/core.py", HASH)
    assert data is None and tried == ["--wheels (not given)", "--fetch (not asked for)"]
    assert OriginalFinder().find("pkg", "1.0", "pkg/core.py", "md5") == (
        None, "", ["the checkpoint gives no usable hash_before"])


def test_finder_reports_a_corrupt_wheel(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    (house / "pkg-1.0-py3-none-any.whl").write_bytes(b"garbage")
    data, _, tried = OriginalFinder(wheels=[str(house)]).find("pkg", "1.0", "pkg/core.py", HASH)
    assert data is None
    assert f"--wheels {house / 'pkg-1.0-py3-none-any.whl'} (rejected: not a zip file" in tried[0]


def test_finder_close_removes_its_work_directory():
    finder = OriginalFinder()
    work = finder._workdir()
    assert os.path.isdir(work)
    finder.close()
    assert not os.path.exists(work)


# -- the kept store as a source of find_pristine ------------------------------------------------

def _search(tmp_path, dist, **kw):
    from driftscan.pristine import PristineOptions, find_pristine

    for name in ("no-uv", "no-pip"):
        (tmp_path / name).mkdir(exist_ok=True)
    return find_pristine([(dist, list(dist.entries))],
                         PristineOptions(uv_cache=str(tmp_path / "no-uv"), pip_cache=str(tmp_path / "no-pip"), **kw))


def test_kept_originals_are_a_source_after_the_caches(tmp_path, private_cache):
    from driftscan.pristine import SourceKind

    files = {"pkg/__init__.py": b"", "pkg/core.py": ORIGINAL}
    dist = installed(tmp_path / "site", "pkg", "1.0", files)
    for content in files.values():
        assert keep(record_hash(content), content, "--wheels /gone/pkg-1.0-py3-none-any.whl")
    with _search(tmp_path, dist) as found:
        lookup = found.get(dist)
        assert lookup.copy.source is SourceKind.KEPT and lookup.copy.path == str(private_cache / "originals")
        assert lookup.reason == "kept by driftscan, first found in --wheels /gone/pkg-1.0-py3-none-any.whl"
        core = next(e for e in dist.entries if e.path == "pkg/core.py")
        assert lookup.original(core).read(core) == ORIGINAL
    # A wheel at hand comes first: the store is tried after --wheels and the caches.
    house = tmp_path / "house"
    wheel = wheel_file(house, "pkg", "1.0", files)
    with _search(tmp_path, dist, wheels=(str(house),)) as found:
        assert found.get(dist).copy.source is SourceKind.WHEELS and found.get(dist).copy.path == str(wheel)


def test_a_kept_file_edited_in_the_cache_is_rejected_with_why(tmp_path, private_cache):
    from driftscan.pristine import SourceKind

    dist = installed(tmp_path / "site", "pkg", "1.0", {"pkg/core.py": ORIGINAL})
    assert keep(HASH, ORIGINAL, "a checkpoint")
    with open(kept_path(HASH), "wb") as f:
        f.write(b"X = 9\n")  # same size, other bytes
    with _search(tmp_path, dist) as found:
        lookup = found.get(dist)
        assert lookup.copy is None
        [rejected] = lookup.rejected
        assert rejected.source is SourceKind.KEPT
        assert rejected.reason == (f"pkg/core.py: the kept copy {kept_path(HASH)} is edited or damaged "
                                   "(its content does not match RECORD's sha256): not used")
    os.unlink(kept_path(HASH))
    os.symlink("/etc/hostname", kept_path(HASH))  # a link in the store is not followed
    with _search(tmp_path, dist) as found:
        [rejected] = found.get(dist).rejected
        assert rejected.source is SourceKind.KEPT and "not used" in rejected.reason


def test_nothing_kept_is_a_note_not_a_rejection(tmp_path, private_cache):
    dist = installed(tmp_path / "site", "pkg", "1.0", {"pkg/core.py": ORIGINAL})
    with _search(tmp_path, dist) as found:
        lookup = found.get(dist)
        assert lookup.copy is None and lookup.rejected == ()
        assert f"driftscan's kept originals {private_cache / 'originals'} (none of its files kept)" in lookup.reason

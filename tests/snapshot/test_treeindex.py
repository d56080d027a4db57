"""snapshot/treeindex.py: the diff index is served only for the same snapshot, root and limit, and
its walk is reused only while every directory and trusted file keeps its recorded signature."""

from __future__ import annotations

import os
import time

import pytest

from driftscan.caches.racy import RACY_NS
from driftscan.formats.manifest import Manifest, ManifestEntry, scan_dirs
from driftscan.snapshot import treeindex
from driftscan.snapshot.treeindex import dir_signature

LIMIT = 1 << 20


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))


def make_tree(root):
    (root / "sub" / "deeper").mkdir(parents=True)
    for rel in ("config.json", "sub/a.txt", "sub/deeper/b.txt", "racy.txt"):
        (root / rel).write_text(rel)
    (root / "link").symlink_to("config.json")
    past = time.time() - 3600  # any change made now gives a new mtime, however coarse the clock
    for path in (root / "config.json", root / "sub/a.txt", root / "sub/deeper/b.txt", root / "racy.txt",
                 root / "sub" / "deeper", root / "sub", root):
        os.utime(path, (past, past))
    return root


def manifest_of(root, identity=("/snaps/s.json", 10, 20, 30, 40, 50, 0)) -> Manifest:
    """A manifest whose entries carry each file's current signature (as a snapshot writes it)."""
    files = {}
    for rel in ("config.json", "sub/a.txt", "sub/deeper/b.txt", "racy.txt"):
        st = os.lstat(root / rel)
        files[rel] = ManifestEntry("0" * 32, st.st_size, st.st_mode, st.st_mtime_ns, None, None, st.st_ctime_ns)
    files["gone.txt"] = ManifestEntry("1" * 32, 1, 0o100644, 1, None, None, 1)
    return Manifest(str(root / "s.json"), str(root), "now", files, started_ns=time.time_ns(), identity=identity)


def full_walk(root):
    found, problems, dirs = {}, [], {}
    scan_dirs(str(root), [(str(root), "")], found, problems, dirs=dirs)
    assert problems == []
    return found, dirs


def save(manifest, root, dirs, *, started=None, trusted=("config.json", "sub/a.txt", "sub/deeper/b.txt"),
         others=("racy.txt", "link")):
    # The walk started well after every directory last changed: outside the racy window.
    started = time.time_ns() + 2 * RACY_NS if started is None else started
    treeindex.save(manifest, str(root), LIMIT, dirs, started, list(trusted), list(others), False, ["gone.txt"])


@pytest.fixture
def indexed(tmp_path):
    root = make_tree(tmp_path / "tree")
    manifest = manifest_of(root)
    _, dirs = full_walk(root)
    save(manifest, root, dirs)
    return root, manifest


def test_the_index_of_a_full_walk_loads_as_written(indexed):
    root, manifest = indexed
    index = treeindex.load(manifest, str(root), LIMIT)
    assert index is not None
    assert index.dirs == ["", "sub/", "sub/deeper/"]  # the root first, parents before children
    assert index.dir_sigs == [dir_signature(os.stat(root)), dir_signature(os.stat(root / "sub")),
                              dir_signature(os.stat(root / "sub" / "deeper"))]
    assert index.trusted == ["config.json", "sub/a.txt", "sub/deeper/b.txt"]
    assert index.others == ["racy.txt", "link"] and index.missing == ["gone.txt"] and index.consistency is False
    entry = manifest.files["sub/a.txt"]
    assert list(index.trusted_sigs[4:8]) == [entry.size, entry.mtime_ns, entry.ctime_ns, entry.mode]


def test_an_unchanged_tree_is_walked_from_the_index(indexed):
    root, manifest = indexed
    walked = treeindex.walk(str(root), treeindex.load(manifest, str(root), LIMIT))
    assert walked.trusted == 3  # settled without being listed
    assert set(walked.entries) == {"racy.txt", "link"}  # the others, each with its lstat
    assert walked.entries["link"].st_ino == os.lstat(root / "link").st_ino


def test_a_trusted_file_edited_in_place_is_handed_back_with_its_lstat(indexed):
    root, manifest = indexed
    with open(root / "sub" / "a.txt", "a") as f:  # an edit in place changes no directory
        f.write("more")
    walked = treeindex.walk(str(root), treeindex.load(manifest, str(root), LIMIT))
    assert walked.trusted == 2
    assert set(walked.entries) == {"sub/a.txt", "racy.txt", "link"}
    assert walked.entries["sub/a.txt"].st_size == len("sub/a.txt") + 4


@pytest.mark.parametrize("change", ["add", "remove", "rename", "mkdir"])
def test_a_changed_directory_means_a_full_walk(indexed, change):
    root, manifest = indexed
    index = treeindex.load(manifest, str(root), LIMIT)
    deeper = root / "sub" / "deeper"
    if change == "add":
        (deeper / "new.txt").write_text("new")
    elif change == "remove":
        (deeper / "b.txt").unlink()
    elif change == "rename":
        os.rename(deeper / "b.txt", deeper / "c.txt")
    else:
        (root / "sub" / "new").mkdir()
    assert treeindex.walk(str(root), index) is None


def test_a_vanished_directory_means_a_full_walk(indexed):
    root, manifest = indexed
    index = treeindex.load(manifest, str(root), LIMIT)
    (root / "sub" / "deeper" / "b.txt").unlink()
    (root / "sub" / "deeper").rmdir()
    assert treeindex.walk(str(root), index) is None


def test_the_index_is_kept_for_one_snapshot_root_and_limit(indexed):
    root, manifest = indexed
    assert treeindex.load(manifest, str(root), LIMIT * 2) is None
    assert treeindex.load(manifest, str(root) + "-other", LIMIT) is None
    rewritten = manifest_of(root, identity=("/snaps/s.json", 10, 21, 31, 40, 50, 0))  # same file, new mtime
    assert treeindex.load(rewritten, str(root), LIMIT) is None
    later = Manifest(manifest.path, manifest.root, manifest.created, manifest.files,
                     started_ns=manifest.started_ns + 1, identity=manifest.identity)
    assert treeindex.load(later, str(root), LIMIT) is None


def test_no_identity_no_index(tmp_path):
    root = make_tree(tmp_path / "tree")
    manifest = manifest_of(root, identity=None)
    _, dirs = full_walk(root)
    save(manifest, root, dirs)
    assert treeindex.load(manifest, str(root), LIMIT) is None
    assert not (tmp_path / "cache").exists()  # nothing was written


def test_a_directory_changed_within_the_racy_window_is_not_indexed(tmp_path):
    root = make_tree(tmp_path / "tree")
    manifest = manifest_of(root)
    _, dirs = full_walk(root)
    save(manifest, root, dirs, started=time.time_ns())  # the directories were written just now
    assert treeindex.load(manifest, str(root), LIMIT) is None


def test_a_walk_without_the_root_or_with_an_unstatable_directory_is_not_indexed(tmp_path):
    root = make_tree(tmp_path / "tree")
    manifest = manifest_of(root)
    _, dirs = full_walk(root)
    save(manifest, root, {k: v for k, v in dirs.items() if k})
    assert treeindex.load(manifest, str(root), LIMIT) is None
    save(manifest, root, {**dirs, "sub/": None})
    assert treeindex.load(manifest, str(root), LIMIT) is None


def _index_file(tmp_path):
    [path] = list((tmp_path / "cache" / "diffindex").iterdir())
    return path


@pytest.mark.parametrize("damage", ["flip", "truncate", "header"])
def test_a_damaged_index_is_a_miss(indexed, tmp_path, damage):
    root, manifest = indexed
    path = _index_file(tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-1] ^= 0xFF  # the checksum no longer matches
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[:len(treeindex.FORMAT)] = b"driftscan-diff-index-0\n"
    path.write_bytes(bytes(data))
    assert treeindex.load(manifest, str(root), LIMIT) is None


def test_an_index_file_is_private(indexed, tmp_path):
    assert _index_file(tmp_path).stat().st_mode & 0o077 == 0

"""environment/content.py: the digest of each drifted file's current content, in RECORD notation."""

from __future__ import annotations

import os

import pytest

from driftscan.core.values import Area, DriftKind, FileCheck
from driftscan.environment import content
from driftscan.environment.content import record_digest, with_content_hashes
from fixtures.wheels import record_hash


@pytest.fixture
def root(tmp_path):
    (tmp_path / "root").mkdir()
    return tmp_path / "root"


def check(path, root, kind=DriftKind.MODIFIED, **kw):
    return FileCheck(kind, str(path), str(root), **kw)


def test_modified_and_added_files_get_the_digest_of_their_content(root):
    (root / "a.py").write_bytes(b"edited\n")
    (root / "b.py").write_bytes(b"")
    out = with_content_hashes((check(root / "a.py", root, actual={"size": 7}),
                               check(root / "b.py", root, DriftKind.ADDED)))
    assert out[0].actual == {"size": 7, "hash": record_hash(b"edited\n")}  # comparable with expected["hash"]
    assert out[1].actual["hash"] == record_hash(b"")


def test_only_regular_python_files_of_the_hashed_kinds(root):
    (root / "a.py").write_bytes(b"x")
    untouched = (
        check(root / "a.py", root, DriftKind.MISSING),
        check(root / "a.py", root, DriftKind.TYPE_CHANGED),
        check(root / "a.py", root, area=Area.MODEL),
        check(root / "a.py", root, actual={"type": "symlink"}),
        check(root / "a.py", root, actual={"hash": "sha256=kept"}),
        check(root / "gone.py", root),  # vanished since verify saw it: the drift stands as found
    )
    assert with_content_hashes(untouched) == untouched


def test_a_symlink_is_not_followed_and_nothing_outside_the_root_is_read(root, tmp_path):
    (tmp_path / "secret").write_bytes(b"secret")
    os.symlink(tmp_path / "secret", root / "link.py")
    (root / "inside.py").write_bytes(b"x")
    checks = (check(root / "link.py", root),  # says "file", is a link now
              check(root / "inside.py", tmp_path / "elsewhere"))  # its root is not where it is
    assert with_content_hashes(checks) == checks


def test_a_file_over_the_cap_keeps_size_and_mtime_only(root, monkeypatch):
    (root / "big.bin").write_bytes(b"0123456789")
    monkeypatch.setattr(content, "MAX_HASHED", 9)
    one = (check(root / "big.bin", root),)
    assert with_content_hashes(one) == one


def test_record_digest_reads_exactly_size_bytes(root):
    (root / "f").write_bytes(b"abc" * 100_000)
    fd = os.open(root / "f", os.O_RDONLY)
    try:
        assert record_digest(fd, 300_000) == record_hash(b"abc" * 100_000)
    finally:
        os.close(fd)

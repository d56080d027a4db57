"""driftscan.pristine.directurl: the wheel direct_url.json names, read with suspicion."""

from __future__ import annotations

import dataclasses
import hashlib
import os

import pytest

from driftscan.pristine.base import Rejected, SourceKind
from driftscan.pristine.directurl import archive_hashes, open_direct_url, wheel_path
from driftscan.pristine.wheel import ZipCopy
from fixtures.wheelfiles import installed, wheel_file

FILES = {"pkg/core.py": "X = 1\n"}


def test_wheel_path_accepts_a_local_absolute_wheel_url():
    assert wheel_path({"url": "file:///tmp/w/pkg-1.0-py3-none-any.whl"}) == ("/tmp/w/pkg-1.0-py3-none-any.whl", "")
    assert wheel_path({"url": "file://localhost/tmp/a%20b/pkg.whl"}) == ("/tmp/a b/pkg.whl", "")
    assert wheel_path({"url": "FILE:///x.whl", "archive_info": {}}) == ("/x.whl", "")


@pytest.mark.parametrize("value, why", [
    (None, "no direct_url.json"),
    ([1], "is not an object but list"),
    ({"url": 3}, "has no url string"),
    ({"url": "file:///src", "dir_info": {"editable": True}}, "names a directory or a repository"),
    ({"url": "git+https://h/r", "vcs_info": {}}, "names a directory or a repository"),
    ({"url": "file:///x\n.whl"}, "control characters"),
    ({"url": "file:///" + "a" * 5000 + ".whl"}, "too long"),
    ({"url": "https://example.invalid/x.whl"}, "not a local file:// URL (scheme 'https')"),
    ({"url": "/tmp/x.whl"}, "(scheme 'none')"),
    ({"url": "file://evil.example/x.whl"}, "names a host, a query or a fragment"),
    ({"url": "file:///x.whl?y=1"}, "names a host, a query or a fragment"),
    ({"url": "file:relative/x.whl"}, "not an absolute path"),
    ({"url": "file:///x%00.whl"}, "not an absolute path"),
    ({"url": "file:///dev/zero"}, "not a wheel (.whl)"),
])
def test_wheel_path_refusals(value, why):
    path, reason = wheel_path(value)
    assert path is None and why in reason


def test_archive_hashes():
    sha = hashlib.sha256(b"w").hexdigest()
    assert archive_hashes({}) == ({}, None)
    assert archive_hashes({"archive_info": {"hashes": {"SHA256": sha}}}) == ({"sha256": bytes.fromhex(sha)}, None)
    assert archive_hashes({"archive_info": {"hash": f"sha256={sha}"}}) == ({"sha256": bytes.fromhex(sha)}, None)
    # md5 proves nothing: left out, so the wheel is verified file by file instead
    assert archive_hashes({"archive_info": {"hashes": {"md5": hashlib.md5(b"w").hexdigest()}}}) == ({}, None)
    assert archive_hashes({"archive_info": {"hash": "sha256"}}) == (None, "direct_url.json's archive hash is not "
                                                                          "algorithm=digest")
    for bad in ("zz" * 32, sha[:-2], sha + "00"):
        digests, why = archive_hashes({"archive_info": {"hashes": {"sha256": bad}}})
        assert digests is None and why == "direct_url.json's archive sha256 is not a hex digest"


def direct(path, **archive) -> dict:
    return {"url": f"file://{path}", "archive_info": archive}


def test_the_named_wheel_is_used_when_its_archive_hash_matches(tmp_path):
    wheel = wheel_file(tmp_path / "w", "pkg", "1.0", FILES)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES, direct_url=direct(wheel, hashes={"sha256": sha}))
    copy, note = open_direct_url(dist)
    try:
        assert isinstance(copy, ZipCopy) and note == ""
        assert copy.source is SourceKind.DIRECT_URL and copy.path == str(wheel) and copy.note is None
        assert copy.read(dist.entries[0]) == b"X = 1\n"
    finally:
        copy.close()
    again, _ = open_direct_url(dist)  # the digest is remembered for this unchanged file
    again.close()


def test_a_replaced_wheel_is_rejected(tmp_path):
    wheel = wheel_file(tmp_path / "w", "pkg", "1.0", FILES)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES, direct_url=direct(wheel, hashes={"sha256": sha}))
    wheel_file(tmp_path / "w", "pkg", "1.0", {"pkg/core.py": "X = 2\n"})  # rewritten in place
    rejected, note = open_direct_url(dist)
    assert isinstance(rejected, Rejected) and note == ""
    assert rejected.source is SourceKind.DIRECT_URL and rejected.path == str(wheel)
    assert rejected.reason.startswith("the wheel's sha256 differs from the one direct_url.json recorded at install")


def test_without_archive_hash_the_wheel_is_used_with_a_note(tmp_path):
    wheel = wheel_file(tmp_path / "w", "pkg", "1.0", FILES)
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES, direct_url=direct(wheel))
    copy, _ = open_direct_url(dist)
    try:
        assert isinstance(copy, ZipCopy) and "recorded no archive hash" in copy.note
    finally:
        copy.close()


def test_refusals_of_the_named_file(tmp_path):
    wheel = wheel_file(tmp_path / "w", "pkg", "1.0", FILES)
    os.symlink(wheel, tmp_path / "link.whl")
    os.mkfifo(tmp_path / "fifo.whl")
    (tmp_path / "text.whl").write_text("not a zip")
    dist = installed(tmp_path / "site", "pkg", "1.0", FILES)
    cases = {
        tmp_path / "link.whl": "reached through a symlink: not opened",
        tmp_path / "fifo.whl": "not usable: ",
        tmp_path / "text.whl": "not a zip file",
    }
    for path, why in cases.items():
        found, note = open_direct_url(dataclasses.replace(dist, direct_url=direct(path)))
        assert isinstance(found, Rejected) and why in found.reason, (path, found)
    gone, why = open_direct_url(dataclasses.replace(dist, direct_url=direct(tmp_path / "gone.whl")))
    assert gone is None and why == f"the wheel direct_url.json names is gone ({tmp_path / 'gone.whl'})"
    bad = dataclasses.replace(dist, direct_url=direct(wheel, hash="sha256=nothex"))
    found, _ = open_direct_url(bad)
    assert isinstance(found, Rejected) and found.reason == "direct_url.json's archive sha256 is not a hex digest"
    nothing, why = open_direct_url(dist)
    assert nothing is None and why == "no direct_url.json"

"""environment/fast/prehash.py: the largest files hashed in a forked child while RECORDs are read;
a digest is used only while the file's signature is unchanged."""

from __future__ import annotations

import hashlib
import os

import pytest

from driftscan.caches import racy
from driftscan.environment.fast import prehash
from driftscan.environment.fast.prehash import Prehasher, usable
from driftscan.fs.containment import Containment
from driftscan.caches.racy import RACY_NS as REAL_RACY_NS
from fixtures.envtree import install

OLD = 1_600_000_000  # seconds: files older than the racy window


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setattr(prehash, "LARGE", 64)  # "large" is 64 bytes here
    monkeypatch.setattr(racy, "RACY_NS", 0)  # (a ctime cannot be set back: no racy window)
    site = tmp_path / "site"
    install(site, "big", "1.0", {"big/a.so": b"A" * 200, "big/b.so": b"B" * 100, "big/small.py": b"tiny",
                                 "big/wrong-size.so": b"C" * 100})
    (site / "big/wrong-size.so").write_bytes(b"C" * 101)  # another size: a drift the parent settles unread
    for name in os.listdir(site / "big"):
        os.utime(site / "big" / name, (OLD, OLD))
    return site


@pytest.mark.parametrize("mode", ["fork", "inline"])
def test_the_large_files_digests(site, monkeypatch, mode):
    monkeypatch.setenv("DRIFTSCAN_FORK", mode)
    hasher = Prehasher((str(site),))
    done = hasher.finish()
    if mode == "inline":  # no child: nothing hashed early, the parent hashes as usual
        assert done == {}
        return
    assert set(done) == {str(site / "big/a.so"), str(site / "big/b.so")}
    sig, algorithm, digest, _ = done[str(site / "big/a.so")]
    assert algorithm == "sha256" and digest == hashlib.sha256(b"A" * 200).digest()
    assert usable(os.lstat(site / "big/a.so"), done[str(site / "big/a.so")], "sha256") == digest


def test_a_digest_is_unusable_once_the_file_changed(site, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    done = Prehasher((str(site),)).finish()
    result = done[str(site / "big/b.so")]
    (site / "big/b.so").write_bytes(b"b" * 100)  # same size, new content
    assert usable(os.lstat(site / "big/b.so"), result, "sha256") is None
    assert usable(os.lstat(site / "big/a.so"), done[str(site / "big/a.so")], "md5") is None  # another algorithm
    assert usable(os.lstat(site / "big/a.so"), None, "sha256") is None


def test_a_file_changed_just_now_is_not_hashed(site, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    monkeypatch.setattr(racy, "RACY_NS", REAL_RACY_NS)
    (site / "big/a.so").write_bytes(b"A" * 200)  # inside the racy window: its digest could be stale
    assert str(site / "big/a.so") not in Prehasher((str(site),)).finish()


def test_nothing_outside_the_containment_and_no_symlink_is_hashed(site, tmp_path, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    outside = tmp_path / "outside.so"
    outside.write_bytes(b"B" * 100)
    os.utime(outside, (OLD, OLD))
    os.unlink(site / "big/b.so")
    os.symlink(outside, site / "big/b.so")
    done = Prehasher((str(site),)).finish()
    assert str(site / "big/b.so") not in done and str(site / "big/a.so") in done
    assert Prehasher((str(site),), Containment([str(tmp_path / "elsewhere")])).finish() == {}


def test_take_stops_the_child_and_finish_returns_what_it_completed(site, monkeypatch):
    monkeypatch.setenv("DRIFTSCAN_FORK", "fork")
    hasher = Prehasher((str(site),))
    taken, busy = hasher.take()
    done = hasher.finish()
    assert set(taken) <= set(done) <= {str(site / "big/a.so"), str(site / "big/b.so")}
    assert busy is None or busy in {str(site / "big/a.so"), str(site / "big/b.so")}

"""caches.location: driftscan's caches live in the user's cache directory, and a cache that cannot
be written is skipped, never an error."""

from __future__ import annotations

import os
import sys

import pytest

from driftscan.caches.location import user_cache_dir, write_cache_file


def test_explicit_cache_dir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == str(tmp_path / "mine")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG layout")
def test_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.delenv("DRIFTSCAN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == str(tmp_path / "xdg" / "driftscan")
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # set but empty: as if unset
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir() == str(tmp_path / "home" / ".cache" / "driftscan")


def test_write_creates_directories_and_replaces(tmp_path):
    path = tmp_path / "a" / "b" / "entry"
    write_cache_file(str(path), b"one")
    assert path.read_bytes() == b"one"
    write_cache_file(str(path), b"two")
    assert path.read_bytes() == b"two"
    assert os.listdir(path.parent) == ["entry"], "no temporary file left beside it"


def test_unwritable_cache_is_skipped_silently(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    write_cache_file(str(blocker / "sub" / "entry"), b"x")  # no exception
    assert blocker.read_text() == "not a directory"
    target = tmp_path / "dir-in-the-way"
    target.mkdir()
    write_cache_file(str(target), b"x")  # os.replace onto a directory fails: skipped, temp removed
    assert target.is_dir()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".cache-")] == []


def test_nothing_below_the_cache_directory_is_followed_but_the_directory_itself_is(monkeypatch, tmp_path):
    """The cache directory is the user's choice (a link to another disk is followed); a link below
    it fails the write, with the reason, and nothing is written where it leads."""
    real = tmp_path / "disk" / "cache"
    real.mkdir(parents=True)
    (tmp_path / "cache").symlink_to(real)
    monkeypatch.setenv("DRIFTSCAN_CACHE_DIR", str(tmp_path / "cache"))
    assert write_cache_file(str(tmp_path / "cache" / "statcache" / "x.bin"), b"one") is None
    assert (real / "statcache" / "x.bin").read_bytes() == b"one"
    tree = tmp_path / "tree"
    tree.mkdir()
    (real / "dumps").symlink_to(tree)
    why = write_cache_file(str(tmp_path / "cache" / "dumps" / "a" / "l.list"), b"two")
    assert why is not None and "symlink" in why and "not written" in why, why
    assert os.listdir(tree) == []

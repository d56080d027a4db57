"""fs.confined: reads and writes below a directory, never through a symlink on the way."""

from __future__ import annotations

import os
import stat

import pytest

from driftscan.fs.confined import lstat_below, parts_of, read_below, rel_below, replace_below, unlink_below


def fill_with(data: bytes):
    def fill(out) -> bool:
        out.write(data)
        return True
    return fill


@pytest.mark.parametrize("rel", ["/etc/passwd", "a/../../b", "", "a/\0b"])
def test_a_path_that_is_not_plain_and_relative_is_refused(rel):
    with pytest.raises(ValueError):
        parts_of(rel)


def test_rel_below_is_lexical(tmp_path):
    assert rel_below(str(tmp_path), str(tmp_path / "a" / "b")) == "a/b"
    assert rel_below(str(tmp_path / "a"), str(tmp_path / "ab")) is None


def test_read_below_reads_a_regular_file(tmp_path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "x").write_bytes(b"data")
    assert read_below(str(tmp_path), "files/x", 10) == b"data"
    with pytest.raises(OSError, match="larger than 3 bytes"):
        read_below(str(tmp_path), "files/x", 3)


def test_read_below_follows_no_symlinked_directory_nor_file(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "key").write_bytes(b"secret")
    base = tmp_path / "cp"
    base.mkdir()
    (base / "files").symlink_to(outside)
    (base / "key").symlink_to(outside / "key")
    with pytest.raises(OSError, match="symlink"):
        read_below(str(base), "files/key", 100)
    with pytest.raises(OSError, match="symlink"):
        read_below(str(base), "key", 100)


def test_replace_below_writes_with_the_mode_asked_and_creates_parents(tmp_path):
    assert replace_below(str(tmp_path), "a/b/c.txt", fill_with(b"new"), 0o644, create_dirs=True) is None
    assert (tmp_path / "a/b/c.txt").read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(tmp_path / "a/b/c.txt").st_mode) == 0o644
    assert os.listdir(tmp_path / "a/b") == ["c.txt"]


def test_replace_below_fails_through_a_swapped_directory_and_writes_nothing_there(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "env"
    base.mkdir()
    (base / "pkg").symlink_to(outside)
    why = replace_below(str(base), "pkg/help.py", fill_with(b"x"), 0o644, create_dirs=True)
    assert why is not None and "symlink" in why
    assert os.listdir(outside) == []


def test_replace_below_replaces_a_final_symlink_instead_of_following_it(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "f").symlink_to(target)
    assert replace_below(str(tmp_path / "env"), "f", fill_with(b"new"), 0o644) is None
    assert target.read_bytes() == b"keep"
    assert not (tmp_path / "env" / "f").is_symlink() and (tmp_path / "env" / "f").read_bytes() == b"new"


def test_a_fill_that_does_not_verify_leaves_the_file_as_it_was(tmp_path):
    (tmp_path / "f").write_bytes(b"old")
    why = replace_below(str(tmp_path), "f", lambda out: False, 0o644)
    assert why == "the content to write did not verify"
    assert (tmp_path / "f").read_bytes() == b"old" and os.listdir(tmp_path) == ["f"]


def test_unlink_below_checks_the_open_file_and_follows_no_directory(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "m.py").write_bytes(b"x")
    base = tmp_path / "env"
    base.mkdir()
    (base / "pkg").symlink_to(outside)
    assert "symlink" in (unlink_below(str(base), "pkg/m.py") or "")
    assert (outside / "m.py").exists()
    (base / "own.py").write_bytes(b"mine")
    assert unlink_below(str(base), "own.py", lambda fd: "changed") == "changed"
    assert unlink_below(str(base), "own.py", lambda fd: None) is None
    assert not (base / "own.py").exists()
    assert stat.S_ISDIR(lstat_below(str(tmp_path), "outside").st_mode)


def test_append_below_creates_appends_and_never_follows_a_link(tmp_path):
    from driftscan.fs.confined import append_below

    base = tmp_path / "base"
    base.mkdir()
    append_below(str(base), "j/journal", b"one\n", create_dirs=True)
    append_below(str(base), "j/journal", b"two\n")
    assert (base / "j" / "journal").read_bytes() == b"one\ntwo\n"
    assert stat.S_IMODE(os.stat(base / "j" / "journal").st_mode) == 0o600
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (base / "k").symlink_to(elsewhere)
    with pytest.raises(OSError, match="symlink"):
        append_below(str(base), "k/journal", b"x\n", create_dirs=True)
    (elsewhere / "target").write_bytes(b"kept\n")
    (base / "j" / "linked").symlink_to(elsewhere / "target")
    with pytest.raises(OSError, match="symlink"):
        append_below(str(base), "j/linked", b"x\n")
    assert os.listdir(elsewhere) == ["target"] and (elsewhere / "target").read_bytes() == b"kept\n"

"""driftscan.git.files: the real ``.git``'s files read as data, refusing what is not a regular file."""

from __future__ import annotations

import os
import stat

import pytest

from driftscan.git.errors import GitRefused
from driftscan.git.files import describe, read_optional


def test_an_absent_file_is_none_and_a_regular_one_its_bytes(tmp_path):
    assert read_optional(str(tmp_path / "absent"), 100, "HEAD") is None
    (tmp_path / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    assert read_optional(str(tmp_path / "HEAD"), 100, "HEAD") == b"ref: refs/heads/main\n"


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "HEAD")
    with pytest.raises(GitRefused, match="the repository is not read"):
        read_optional(str(tmp_path / "HEAD"), 100, "HEAD")


def test_a_symlink_is_refused_not_followed(tmp_path):
    (tmp_path / "target").write_text("[core]\n")
    os.symlink(tmp_path / "target", tmp_path / "config")
    with pytest.raises(GitRefused, match=f"^{tmp_path / 'config'}: "):
        read_optional(str(tmp_path / "config"), 100, "git config")


def test_a_file_bigger_than_its_cap_is_refused(tmp_path):
    (tmp_path / "packed-refs").write_bytes(b"x" * 101)
    with pytest.raises(GitRefused, match="101 bytes, more than the 100 bytes a packed-refs may have"):
        read_optional(str(tmp_path / "packed-refs"), 100, "packed-refs")


def test_describe(tmp_path):
    os.symlink("/elsewhere", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert describe(str(tmp_path / "link"), os.lstat(tmp_path / "link")) == "a symlink (to /elsewhere)"
    fifo = os.lstat(tmp_path / "fifo")
    assert describe(str(tmp_path / "fifo"), fifo) == f"not a regular file ({stat.filemode(fifo.st_mode)})"
    assert stat.filemode(fifo.st_mode).startswith("p")
    assert describe(str(tmp_path), os.lstat(tmp_path)).startswith("not a regular file (d")


def test_a_control_file_git_would_block_on_is_found_anywhere_but_in_git_dirs(tmp_path):
    from driftscan.git.files import blocking_control_file

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / ".gitignore").write_text("*.tmp\n")
    (tmp_path / ".gitattributes").mkdir()  # git's open fails at once: harmless
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / ".git" / ".gitignore")  # not the work tree's
    os.mkfifo(tmp_path / "a" / "b" / "other.fifo")  # a name git never opens
    assert blocking_control_file(str(tmp_path)) is None
    os.mkfifo(tmp_path / "a" / "b" / ".gitmodules")
    assert blocking_control_file(str(tmp_path)) == f"{tmp_path / 'a/b/.gitmodules'} is a FIFO, which git would block on opening"

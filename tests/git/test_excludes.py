"""driftscan.git.excludes: ignore files other than ``.gitignore``, handed to git as data in the
private ``info/exclude`` (git itself reads no global config)."""

from __future__ import annotations

import os

import pytest

from driftscan.git.errors import GitWouldBlock
from driftscan.git.excludes import exclude_file


@pytest.fixture
def user(tmp_path, monkeypatch):
    """An auditing user with no git configuration of their own (yet)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


def test_nothing_to_exclude_is_none(user, tmp_path):
    assert exclude_file(None, {}, str(tmp_path)) is None
    assert exclude_file(b"", {}, str(tmp_path)) is None


def test_the_repository_s_own_then_its_excludes_file_then_the_user_s(user, tmp_path):
    top = tmp_path / "tree"
    top.mkdir()
    (top / "ignore-these").write_text("*.scratch")
    (user / ".config" / "git").mkdir(parents=True)
    (user / ".config" / "git" / "ignore").write_text("*.swp")
    assert exclude_file(b"*.log", {"core.excludesfile": "ignore-these"}, str(top)) == b"*.log\n*.scratch\n*.swp"


def test_a_repository_excludes_file_outside_its_tree_is_not_read(user, tmp_path):
    top = tmp_path / "tree"
    top.mkdir()
    (tmp_path / "secret").write_text("password")
    assert exclude_file(None, {"core.excludesfile": str(tmp_path / "secret")}, str(top)) is None
    os.symlink(tmp_path / "secret", top / "link")
    assert exclude_file(None, {"core.excludesfile": "link"}, str(top)) is None


def test_a_repository_excludes_file_that_is_a_fifo_in_its_tree_refuses_it(user, tmp_path):
    """Never opened (it would block); dropping it would list what it ignores as added files."""
    top = tmp_path / "tree"
    top.mkdir()
    os.mkfifo(top / "fifo")
    with pytest.raises(GitWouldBlock, match="fifo"):
        exclude_file(None, {"core.excludesfile": "fifo"}, str(top))
    os.mkfifo(tmp_path / "outside.fifo")  # outside the tree: not read at all, as any file there
    assert exclude_file(None, {"core.excludesfile": str(tmp_path / "outside.fifo")}, str(top)) is None


def test_the_user_s_core_excludes_file_is_honoured(user, tmp_path):
    (user / "my-ignores").write_text("*.bak")
    (user / ".gitconfig").write_text("[core]\n\texcludesFile = ~/my-ignores\n")
    assert exclude_file(None, {}, str(tmp_path)) == b"*.bak"
    # ~/.gitconfig wins over $XDG_CONFIG_HOME/git/config
    (user / ".config" / "git").mkdir(parents=True)
    (user / "other").write_text("*.other")
    (user / ".config" / "git" / "config").write_text(f"[core]\n\texcludesFile = {user / 'other'}\n")
    assert exclude_file(None, {}, str(tmp_path)) == b"*.bak"
    (user / ".gitconfig").unlink()
    assert exclude_file(None, {}, str(tmp_path)) == b"*.other"

"""driftscan.git.refs: HEAD, refs, packed-refs and the reflog read here as data, never by git."""

from __future__ import annotations

import os

import pytest

from driftscan.git.errors import NotARepository
from driftscan.git.refs import copy_refs, read_reflog, resolve_head, valid_ref
from fixtures.gitrepos import commit, git, init_repo

A, B = "a" * 40, "b" * 64  # a sha1 and a sha256 object id


def test_valid_ref():
    for name in ("refs/heads/main", "refs/tags/v1.0", "refs/remotes/origin/feature/x-y_z"):
        assert valid_ref(name), name
    for name in ("HEAD", "refs/heads/../../config", "refs/heads/.hidden", "refs/heads/a.lock", "refs/heads/a/",
                 "refs/heads/a.", "refs/heads/a@{1}", "refs/heads/a b", "refs/heads/a~1", "refs/heads/a:b",
                 "refs/heads/a\nb", "refs/heads//a", "refs/heads/a*", "refs/heads/[a]", "refs/heads/a\\b", "refs/"):
        assert not valid_ref(name), name


def test_resolve_head_detached_loose_and_packed(tmp_path):
    assert resolve_head(str(tmp_path), f"{A}\n".encode()) == (A, None)
    assert resolve_head(str(tmp_path), B.encode()) == (B, None)
    (tmp_path / "refs" / "heads").mkdir(parents=True)
    (tmp_path / "refs" / "heads" / "main").write_text(A + "\n")
    assert resolve_head(str(tmp_path), b"ref: refs/heads/main\n") == (A, "refs/heads/main")
    (tmp_path / "packed-refs").write_text(f"# pack-refs with: peeled\n{B} refs/heads/packed\n^{A}\n")
    assert resolve_head(str(tmp_path), b"ref: refs/heads/packed\n") == (B, "refs/heads/packed")
    # unborn: the branch HEAD names has no commit yet
    assert resolve_head(str(tmp_path), b"ref: refs/heads/unborn\n") == (None, "refs/heads/unborn")


def test_resolve_head_follows_symbolic_refs_a_few_times_only(tmp_path):
    heads = tmp_path / "refs" / "heads"
    heads.mkdir(parents=True)
    (heads / "one").write_text("ref: refs/heads/two\n")
    (heads / "two").write_text(A)
    assert resolve_head(str(tmp_path), b"ref: refs/heads/one") == (A, "refs/heads/one")
    (heads / "two").write_text("ref: refs/heads/one\n")  # a loop
    assert resolve_head(str(tmp_path), b"ref: refs/heads/one") == (None, "refs/heads/one")


def test_an_invalid_head_is_no_repository(tmp_path):
    for data in (b"garbage", b"ref: refs/heads/../../../etc/passwd", b"ref: HEAD", b"a" * 39):
        with pytest.raises(NotARepository, match="is not a valid HEAD"):
            resolve_head(str(tmp_path), data)


def test_read_reflog_of_a_real_repository(tmp_path):
    root = init_repo(tmp_path / "r", {"a.txt": "1"})
    first = git(root, "rev-parse", "HEAD")
    second = commit(root, {"a.txt": "2"}, "second")
    entries = read_reflog(str(root / ".git"))
    assert [(e.old, e.new) for e in entries] == [("0" * 40, first), (first, second)]
    assert entries[0].time == 1704067200  # GIT_COMMITTER_DATE 2024-01-01T00:00:00Z


def test_read_reflog_skips_what_is_not_a_reflog_line(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "HEAD").write_text(f"garbage\n{A} {A} t <t@x> 17 +0000\tcommit: x\n{A} {A} t <t> x +0\n")
    [entry] = read_reflog(str(tmp_path))
    assert (entry.old, entry.new, entry.time) == (A, A, 17)
    assert read_reflog(str(tmp_path / "nothing")) == []
    (tmp_path / "logs" / "HEAD").unlink()
    os.mkfifo(tmp_path / "logs" / "HEAD")
    assert read_reflog(str(tmp_path)) == []  # refused, not blocked on


def test_copy_refs_writes_direct_refs_packed_and_symbolic_ones_loose(tmp_path):
    real = tmp_path / "real"
    (real / "refs" / "heads").mkdir(parents=True)
    (real / "refs" / "tags").mkdir()
    (real / "refs" / "remotes" / "origin").mkdir(parents=True)
    (real / "packed-refs").write_text(f"# header\n{A} refs/tags/v1\n{A} refs/heads/main\n{A} refs/bad..\n"
                                      f"{A} refs/heads/x y\n")
    (real / "refs" / "heads" / "main").write_text(B + "\n")  # a loose ref wins over its packed line
    (real / "refs" / "heads" / "wip.lock").write_text(A)
    (real / "refs" / "heads" / "junk").write_text("not an id")
    (real / "refs" / "remotes" / "origin" / "HEAD").write_text("ref: refs/remotes/origin/main\n")
    (tmp_path / "outside").write_text(A)
    os.symlink(tmp_path / "outside", real / "refs" / "tags" / "linked")
    into = tmp_path / "private"
    into.mkdir()
    copy_refs(str(real), str(into))
    assert (into / "packed-refs").read_text() == f"{B} refs/heads/main\n{A} refs/tags/v1\n"
    assert (into / "refs" / "remotes" / "origin" / "HEAD").read_text() == "ref: refs/remotes/origin/main\n"


def test_copy_refs_of_a_real_repository_lets_git_resolve_names(tmp_path):
    root = init_repo(tmp_path / "r", {"a.txt": "1"})
    git(root, "tag", "v1")
    git(root, "pack-refs", "--all")
    second = commit(root, {"a.txt": "2"}, "second")
    into = tmp_path / "private"
    into.mkdir()
    copy_refs(str(root / ".git"), str(into))
    packed = dict(reversed(line.split(" ", 1)) for line in (into / "packed-refs").read_text().splitlines())
    assert packed == {"refs/heads/main": second, "refs/tags/v1": git(root, "rev-parse", "v1")}

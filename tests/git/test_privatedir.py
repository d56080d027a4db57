"""driftscan.git.privatedir: the private GIT_DIR git runs with, outside the audited tree: validated
config, HEAD resolved here, ``info/*`` copies, and links to the real object directories only."""

from __future__ import annotations

import os

import pytest

from driftscan.git import privatedir, process
from driftscan.git.errors import GitRefused
from fixtures.gitrepos import git, init_repo


@pytest.fixture
def repo(tmp_path):
    root = init_repo(tmp_path / "r", {"a.txt": "a\n"})
    git(root, "gc", "-q")  # a pack directory and a loose object directory or two
    (root / "b.txt").write_text("b\n")
    git(root, "add", "b.txt")
    return root


def test_make_is_outside_the_work_tree_and_remove_removes_it(repo):
    private = privatedir.make(str(repo))
    assert os.path.isdir(private) and not private.startswith(str(repo))
    privatedir.remove(private)
    assert not os.path.exists(private)


def test_make_refuses_when_every_temporary_directory_is_inside_the_tree(tmp_path):
    # "/" holds /dev/shm, the temporary directory and ~/.cache alike
    with pytest.raises(GitRefused, match="no temporary directory outside / for git's private configuration"):
        privatedir.make("/")
    assert not privatedir._private_base(str(tmp_path)).startswith(str(tmp_path))


def test_populate_writes_config_head_info_and_object_links(repo, tmp_path):
    private = privatedir.make(str(repo))
    try:
        real = str(repo / ".git")
        head = git(repo, "rev-parse", "HEAD")
        index = privatedir.populate(private, real, {"core.filemode": "false", "core.repositoryformatversion": "1",
                                                   "extensions.objectformat": "sha1"},
                                    head, "refs/heads/main", {"exclude": b"*.log\n", "attributes": None},
                                    str(repo / ".git" / "index"))
        gd = privatedir.git_dir(private)
        assert index == str(repo / ".git" / "index")  # the real index is read
        assert open(os.path.join(gd, "config")).read() == (
            "[core]\n\tfilemode = false\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha1\n")
        assert open(os.path.join(gd, "HEAD")).read() == f"{head}\n"  # detached at the resolved commit
        assert open(os.path.join(gd, "info", "exclude"), "rb").read() == b"*.log\n"
        assert not os.path.exists(os.path.join(gd, "info", "attributes"))
        assert os.path.isdir(os.path.join(private, "home")) and os.listdir(os.path.join(private, "home")) == []
        linked = sorted(os.listdir(os.path.join(gd, "objects")))
        real_dirs = sorted(n for n in os.listdir(repo / ".git" / "objects") if n not in ("info",))
        assert linked == real_dirs and "pack" in linked and "info" not in linked
        for name in linked:
            assert os.readlink(os.path.join(gd, "objects", name)) == os.path.join(real, "objects", name)
        # git reads the repository through it
        env = process.environment(private, gd, str(repo), index)
        assert process.run(process.git_executable(), str(repo), env, ("cat-file", "-p", "HEAD:a.txt")) == b"a\n"
        assert process.run(process.git_executable(), str(repo), env, ("diff", "--cached", "--name-only")) == b"b.txt\n"
    finally:
        privatedir.remove(private)
    assert not os.path.exists(private) and os.path.isdir(repo / ".git" / "objects" / "pack")  # the real ones stay


def test_an_unborn_branch_stays_unborn_and_no_index_means_an_empty_one(tmp_path):
    root = init_repo(tmp_path / "r")
    private = privatedir.make(str(root))
    try:
        index = privatedir.populate(private, str(root / ".git"), {}, None, "refs/heads/main", {}, "")
        gd = privatedir.git_dir(private)
        assert index == os.path.join(gd, "index") and not os.path.exists(index)
        assert open(os.path.join(gd, "HEAD")).read() == "ref: refs/heads/main\n"
    finally:
        privatedir.remove(private)


def test_borrowed_objects_are_refused(repo, tmp_path):
    (repo / ".git" / "objects" / "info" / "alternates").write_text("# a comment\n/srv/other/objects\n")
    private = privatedir.make(str(repo))
    try:
        with pytest.raises(GitRefused, match="borrows objects from '/srv/other/objects'"):
            privatedir.populate(private, str(repo / ".git"), {}, None, "refs/heads/main", {}, "")
    finally:
        privatedir.remove(private)


def test_a_pack_directory_entry_that_is_no_regular_file_is_refused(repo, tmp_path):
    (tmp_path / "elsewhere.pack").write_bytes(b"PACK")
    os.symlink(tmp_path / "elsewhere.pack", repo / ".git" / "objects" / "pack" / "pack-evil.pack")
    private = privatedir.make(str(repo))
    try:
        with pytest.raises(GitRefused, match="pack-evil.pack: a symlink .* the repository is not read"):
            privatedir.populate(private, str(repo / ".git"), {}, None, "refs/heads/main", {}, "")
    finally:
        privatedir.remove(private)


def test_a_symlinked_object_directory_is_not_linked(repo, tmp_path):
    (tmp_path / "foreign").mkdir()
    os.symlink(tmp_path / "foreign", repo / ".git" / "objects" / "ab")
    private = privatedir.make(str(repo))
    try:
        privatedir.populate(private, str(repo / ".git"), {}, None, "refs/heads/main", {}, "")
        assert "ab" not in os.listdir(os.path.join(privatedir.git_dir(private), "objects"))
    finally:
        privatedir.remove(private)

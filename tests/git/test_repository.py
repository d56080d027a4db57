"""driftscan.git.repository: ``open_repository`` refuses before git runs; ``Repository`` asks git
through the private GIT_DIR only."""

from __future__ import annotations

import os

import pytest

from driftscan.git import GitFailed, GitRefused, NotARepository, find_repository, open_repository, uids_of
from driftscan.git.repository import NO_SUCH_REVISION
from fixtures.gitrepos import commit, git, init_repo


@pytest.fixture
def repo(tmp_path):
    root = init_repo(tmp_path / "r", {"a.txt": "one\n", "dir/b.txt": "b\n"})
    git(root, "tag", "v1")
    commit(root, {"a.txt": "two\n"}, "second")
    return root


def test_find_repository_walks_up_to_the_nearest_dot_git(repo, tmp_path):
    assert find_repository(str(repo / "dir")) == str(repo)
    assert find_repository(str(repo)) == str(repo)
    (repo / "dir" / "sub").mkdir()
    (repo / "dir" / "sub" / ".git").write_text("gitdir: /elsewhere\n")  # any type of .git counts
    assert find_repository(str(repo / "dir" / "sub")) == str(repo / "dir" / "sub")
    assert find_repository(str(tmp_path / "missing")) is None


def test_uids_of_is_the_auditing_user_and_the_owners():
    assert uids_of() == {os.geteuid()}
    assert uids_of("/", "/no/such/path") == {os.geteuid(), os.lstat("/").st_uid}


def test_a_repository_opened_and_read(repo):
    head = git(repo, "rev-parse", "HEAD")
    with open_repository(str(repo)) as r:
        assert r.top == str(repo) and r.git_dir == str(repo / ".git")
        assert r.head == head and r.head_ref == "refs/heads/main"
        assert r.config == {"core.filemode": "true", "core.repositoryformatversion": "0"}  # git init's, cut
        assert r.filemode
        assert r.resolve("HEAD") == r.resolve("@") == head
        assert r.resolve("v1") == git(repo, "rev-parse", "v1") != head  # names resolved from copied refs
        assert r.resolve("main~1") == git(repo, "rev-parse", "v1")
        with pytest.raises(GitFailed, match=NO_SUCH_REVISION):
            r.resolve("no-such-branch")
        with pytest.raises(GitFailed, match=NO_SUCH_REVISION):
            r.resolve("--output=/tmp/x")  # never an option
        blob_a = git(repo, "rev-parse", "HEAD:a.txt")
        blob_b = git(repo, "rev-parse", "HEAD:dir/b.txt")
        assert r.blob(blob_a) == b"two\n"
        assert r.blobs([blob_b, "0" * 40, head, blob_a, "not-an-id"]) == {blob_b: b"b\n", blob_a: b"two\n"}
        assert r.records("ls-files", "-z") == ["a.txt", "dir/b.txt"]
        assert [e.new for e in r.reflog()][-1] == head
        private = r.private
        assert os.path.isdir(private) and not private.startswith(str(repo))
    assert not os.path.exists(private)  # closed: removed


def test_git_sees_the_work_tree_through_the_private_git_dir(repo):
    (repo / "a.txt").write_text("edited\n")
    (repo / "new.txt").write_text("n\n")
    with open_repository(str(repo)) as r:
        assert r.run("status", "--porcelain").decode().splitlines() == [" M a.txt", "?? new.txt"]
        assert r.run("diff", "--name-only", "HEAD").decode().splitlines() == ["a.txt"]


def test_hostile_config_never_reaches_git(repo, tmp_path):
    canary = tmp_path / "ran"
    with open(repo / ".git" / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = touch {canary}\n\tpager = touch {canary}\n"
                f"[diff]\n\texternal = touch {canary}\n")
    (repo / "a.txt").write_text("edited\n")
    with open_repository(str(repo)) as r:
        assert "core.fsmonitor" not in r.config
        r.run("status", "--porcelain")
        r.run("diff", "HEAD")
    assert not canary.exists()


def test_an_unborn_branch(tmp_path):
    root = init_repo(tmp_path / "r")
    with open_repository(str(root)) as r:
        assert r.head is None and r.head_ref == "refs/heads/main"
        with pytest.raises(GitFailed, match="HEAD names refs/heads/main, which has no commits yet"):
            r.resolve("HEAD")


def test_not_a_repository(tmp_path):
    with pytest.raises(NotARepository, match="has no .git"):
        open_repository(str(tmp_path))
    (tmp_path / ".git").mkdir()
    with pytest.raises(NotARepository, match="has no HEAD or objects directory"):
        open_repository(str(tmp_path))


def test_a_dot_git_file_or_symlink_is_not_followed(repo, tmp_path):
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(worktree))
    with pytest.raises(GitRefused, match="is a file .*its repository lives elsewhere"):
        open_repository(str(worktree))
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(repo / ".git", linked / ".git")
    with pytest.raises(GitRefused, match="is a symlink .*not followed"):
        open_repository(str(linked))


def test_a_repository_of_another_user_is_refused(repo):
    with pytest.raises(GitRefused, match=r"owned by uid \d+, not by the auditing user"):
        open_repository(str(repo), allowed_uids={os.geteuid() + 12345})


def test_refusals_inside_dot_git(repo, tmp_path):
    objects = repo / ".git" / "objects"
    os.rename(objects, tmp_path / "objects")
    os.symlink(tmp_path / "objects", objects)
    with pytest.raises(GitRefused, match="objects is a symlink"):
        open_repository(str(repo))
    os.unlink(objects)
    os.rename(tmp_path / "objects", objects)
    os.rename(repo / ".git" / "index", tmp_path / "index")
    os.mkfifo(repo / ".git" / "index")
    with pytest.raises(GitRefused, match="index is not a regular file"):
        open_repository(str(repo))
    os.unlink(repo / ".git" / "index")
    git(repo, "config", "core.bare", "true")
    with pytest.raises(GitRefused, match="a bare git repository has no work tree"):
        open_repository(str(repo))


def test_a_repository_without_index_reads_an_empty_one(repo):
    os.unlink(repo / ".git" / "index")
    with open_repository(str(repo)) as r:
        assert r.records("ls-files", "-z") == []


def test_an_os_error_is_a_refusal(repo, monkeypatch):
    from driftscan.git import privatedir

    def full(top):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(privatedir, "make", full)
    with pytest.raises(GitRefused, match="cannot read: .*No space left on device"):
        open_repository(str(repo))


def test_no_git_on_path(repo, monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(GitFailed, match="no git executable on PATH"):
        open_repository(str(repo))

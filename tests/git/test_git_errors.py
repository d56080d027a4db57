"""driftscan.git.errors: a refusal (not read) is not a failure (git ran and failed), and each is
raised where the package says."""

from __future__ import annotations

import pytest

from driftscan.git import GitFailed, GitRefused, GitTimeout, NotARepository, open_repository
from fixtures.gitrepos import init_repo


def test_the_two_families_do_not_mix():
    assert issubclass(NotARepository, GitRefused) and issubclass(GitTimeout, GitFailed)
    assert not issubclass(GitRefused, GitFailed) and not issubclass(GitFailed, GitRefused)


def test_no_repository_is_a_refusal_the_caller_may_pass_over(tmp_path):
    with pytest.raises(NotARepository, match="has no .git"):
        open_repository(str(tmp_path))


def test_a_git_command_that_fails_is_git_failed_not_a_timeout(tmp_path):
    init_repo(tmp_path / "r", {"a.txt": "a\n"})
    with open_repository(str(tmp_path / "r")) as repo:
        with pytest.raises(GitFailed) as caught:
            repo.run("cat-file", "blob", "0" * 40)
    assert not isinstance(caught.value, GitTimeout) and str(caught.value)

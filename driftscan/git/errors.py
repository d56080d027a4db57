"""What goes wrong: a repository refused before git runs, or git failing or hanging."""

from __future__ import annotations


class GitRefused(Exception):
    """The repository is not read at all: why, for an "unverifiable" entry."""


class NotARepository(GitRefused):
    """No usable repository there (the caller may try something else)."""


class GitFailed(Exception):
    """git ran and failed, or did not answer: a Problem for that tree, the audit goes on."""


class GitTimeout(GitFailed):
    pass

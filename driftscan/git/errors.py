"""What goes wrong: a repository refused before git runs, or git failing or hanging."""

from __future__ import annotations


class GitRefused(Exception):
    """The repository is not read at all: why, for an "unverifiable" entry."""


class GitWouldBlock(GitRefused):
    """Refused because git would hang on a file the tree controls (a FIFO git opens): something
    could not be checked, unlike a layout git is simply not pointed at."""


class NotARepository(GitRefused):
    """No usable repository there (the caller may try something else)."""


class GitFailed(Exception):
    """git ran and failed, or did not answer: a Problem for that tree, the audit goes on."""


class GitTimeout(GitFailed):
    pass

"""The forked helper processes (``driftscan/forked.py``), under the name the audit's fast paths
have always imported them by."""

from __future__ import annotations

from ....forked import HELPER_TIMEOUT, Child, allow_fork, fork_quietly, may_fork, read_some  # noqa: F401

__all__ = ["HELPER_TIMEOUT", "Child", "allow_fork", "may_fork", "read_some"]

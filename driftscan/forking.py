"""When driftscan may fork helper processes of the process it runs in.

Only on Linux, only in a process that driftscan owns, and only when no other thread runs: a
thread holding a lock at the fork would leave the child a lock nobody releases, and a library
host (a vLLM server) has CUDA and OpenMP threads that Python's thread count does not see. So the
library never forks its host unless asked: the CLI calls ``allow_fork()`` for its own process, a
host may too, ``DRIFTSCAN_FORK=fork`` forces it (tests run beside pytest's threads), ``inline``
forbids it. Where forking is not allowed, every helper has an in-process or fresh-interpreter
way to do its work (forked.py, inspect/scan.py).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings

_allowed = False


def allow_fork(allowed: bool = True) -> None:
    """Let driftscan fork helper processes of this process (the CLI does, for itself)."""
    global _allowed
    _allowed = allowed


def may_fork() -> bool:
    mode = os.environ.get("DRIFTSCAN_FORK", "auto")
    if mode == "inline" or not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return False
    return mode == "fork" or (_allowed and threading.active_count() == 1)


def fork_quietly() -> int:
    """os.fork(), without Python 3.12's warning about other threads (``may_fork`` decided)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()

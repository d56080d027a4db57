"""The one rule every driftscan cache trusts a file's timestamps by, in the manner of git's index.

What a cache remembers about a file (a digest, a listing, findings) is kept only if the file's
mtime and ctime were both older than the moment its content was read by more than ``RACY_NS``: a
file written within the same clock tick as the read could change again without changing its
timestamps. Two seconds covers FAT's and SMB's timestamp granularity.
"""

from __future__ import annotations

import os

RACY_NS = 2_000_000_000


def settled(mtime_ns: int, ctime_ns: int, started_ns: int) -> bool:
    """Whether a file last changed at (``mtime_ns``, ``ctime_ns``) was already settled when its
    reading began at ``started_ns``: what was read then may be remembered."""
    return max(mtime_ns, ctime_ns) < started_ns - RACY_NS


def settled_stat(st: os.stat_result, started_ns: int) -> bool:
    return settled(st.st_mtime_ns, st.st_ctime_ns, started_ns)


def signature(st: os.stat_result) -> list[int]:
    """What a memo keyed by a file's stat compares: size, mtime, ctime, inode, device (JSON-ready)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]

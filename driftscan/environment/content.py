"""The current content of drifted files, as a digest: what ``compare`` groups machines by.

RECORD verification settles most modified files by size alone, without hashing them; a report
that says only "34553 bytes" cannot tell whether two machines carry the same hotfix. So every
modified or added regular file of an environment gets ``actual["hash"]``, in RECORD's own
notation (``sha256=<urlsafe base64, unpadded>``), comparable with ``expected["hash"]``.

Only drifted files are read (a handful, usually), each at most ``MAX_HASHED`` bytes, opened
without following a symlink and refused outside its root, as every tree read is.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import replace

from ..fs.reader import open_regular, read_pieces
from ..core.values import Area, DriftKind, FileCheck

MAX_HASHED = 256 << 20  # a bigger drifted file keeps size and mtime only
_HASHED_KINDS = (DriftKind.MODIFIED, DriftKind.ADDED)


def record_digest(fd: int, size: int) -> str:
    h = hashlib.sha256()
    for piece in read_pieces(fd, size):
        h.update(piece)
    return "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")


def _hashed(check: FileCheck) -> FileCheck:
    if check.kind not in _HASHED_KINDS or check.area is not Area.PYTHON or "hash" in check.actual:
        return check
    if not check.regular_file:
        return check
    try:
        fd, st = open_regular(check.path, follow=False, root=check.root)
    except OSError:
        return check  # gone or swapped since verify saw it: the drift stands as verify found it
    try:
        if st.st_size > MAX_HASHED:
            return check
        digest = record_digest(fd, st.st_size)
    except OSError:
        return check
    finally:
        os.close(fd)
    return replace(check, actual={**check.actual, "hash": digest})


def with_content_hashes(checks: tuple[FileCheck, ...]) -> tuple[FileCheck, ...]:
    """``checks`` with the digest of each modified or added environment file's current content."""
    return tuple(_hashed(c) for c in checks)

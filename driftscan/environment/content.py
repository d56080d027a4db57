"""The current content of drifted files, as a digest: what ``compare`` groups machines by.

RECORD verification settles most modified files by size alone, without hashing them; a report
that says only "34553 bytes" cannot tell whether two machines carry the same hotfix. So every
modified or added regular file of an environment gets ``actual["hash"]``, in RECORD's own
notation (``sha256=<urlsafe base64, unpadded>``), comparable with ``expected["hash"]``.

Only drifted files are read (a handful, usually), each at most ``MAX_HASHED`` bytes, opened
without following a symlink and refused outside its root, as every tree read is. A small added
text file also gets the start of its content (``content_preview``, bounded as startup code's is),
and a ``.pth`` a RECORD owns that no longer matches it is read for lines Python executes.

A small file (``prefixfree.MAX_FILE``) that holds the environment's own path (a console script's
shebang, say) also gets ``actual["hash_prefix_free"]``: its digest with that path taken out
(``formats/prefixfree.py``), so the same edit on two venvs at two paths compares equal.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import replace

from ..formats.prefixfree import MAX_FILE, prefixes_of, sha256_prefix_free
from ..fs.reader import open_regular, read_opened, read_pieces
from ..core.values import Area, DriftKind, FileCheck, FileState
from .startup import PREVIEW_BYTES, is_pth, modified_pth, preview

MAX_HASHED = 256 << 20  # a bigger drifted file keeps size and mtime only
_HASHED_KINDS = (DriftKind.MODIFIED, DriftKind.ADDED, DriftKind.STARTUP_CODE, DriftKind.RECORD_REWRITTEN)


def record_digest(fd: int, size: int) -> str:
    h = hashlib.sha256()
    for piece in read_pieces(fd, size):
        h.update(piece)
    return "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")


def _text_preview(data: bytes) -> str | None:
    """The start of a small added file, if it reads as text (UTF-8, no NUL byte)."""
    if b"\0" in data:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return preview(data, len(data))


def _sha256(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _hashed(check: FileCheck, site_packages: tuple[str, ...], prefixes: tuple[bytes, ...] = ()) -> FileCheck:
    if check.kind not in _HASHED_KINDS or check.area is not Area.PYTHON:
        return check
    if check.kind is DriftKind.MODIFIED and check.regular_file and check.distribution is not None:
        site = os.path.dirname(check.path)
        if site in site_packages and is_pth(site, check.path):
            startup = modified_pth(site, check.path)
            if startup is not None:
                evidence = check.evidence or f"listed in the RECORD of {check.distribution.key}; a reinstall rewrites it"
                check = replace(check, evidence=f"{evidence}; {startup.evidence}", content_preview=startup.preview)
    if "hash" in check.actual or not check.regular_file:
        return check
    try:
        fd, st = open_regular(check.path, follow=False, root=check.root)
    except OSError:
        return check  # gone or swapped since verify saw it: the drift stands as verify found it
    shown = check.content_preview
    free = None
    try:
        if st.st_size > MAX_HASHED:
            return check
        if check.kind is DriftKind.ADDED and shown is None and st.st_size <= PREVIEW_BYTES:
            data = read_opened(fd, st, PREVIEW_BYTES)
            shown = _text_preview(data)
            digest = _sha256(data)
            free = sha256_prefix_free(data, prefixes)
        elif prefixes and st.st_size <= MAX_FILE:
            data = read_opened(fd, st, MAX_FILE)
            digest = _sha256(data)
            free = sha256_prefix_free(data, prefixes)
        else:
            digest = record_digest(fd, st.st_size)
    except OSError:
        return check
    finally:
        os.close(fd)
    actual: FileState = {**check.actual, "hash": digest}
    if free is not None:
        actual["hash_prefix_free"] = free
    return replace(check, actual=actual, content_preview=shown)


def with_content_hashes(checks: tuple[FileCheck, ...], site_packages: tuple[str, ...] = (),
                        prefix: str | None = None) -> tuple[FileCheck, ...]:
    """``checks`` with the digest of each modified, added or startup-code environment file's
    current content; ``site_packages``: where a modified ``.pth`` is one Python reads;
    ``prefix``: the environment's own directory (a venv), taken out for ``hash_prefix_free``."""
    prefixes = prefixes_of(prefix, os.path.realpath(prefix)) if prefix else ()
    return tuple(_hashed(c, tuple(site_packages), prefixes) for c in checks)

"""Git LFS pointer files: the small text a repository commits in place of a large file.

A pointer names the real content by sha256 and size (the LFS spec v1); driftscan compares a work
tree file holding the real content against those, in git model directories and editable source
trees alike, and recognises a weight file that is still its pointer (cloned without git-lfs).
"""

from __future__ import annotations

LFS_SPEC = b"version https://git-lfs.github.com/spec/v1"
LFS_POINTER_MAX = 1024


def parse_lfs_pointer(data: bytes) -> tuple[str, int] | None:
    """(sha256 hex, size) of a git LFS pointer file, or None when ``data`` is not one."""
    if len(data) > LFS_POINTER_MAX or not data.startswith(LFS_SPEC):
        return None
    fields = dict(line.split(b" ", 1) for line in data.splitlines() if b" " in line)
    oid, size = fields.get(b"oid", b""), fields.get(b"size", b"")
    if not oid.startswith(b"sha256:") or not size.isdigit():
        return None
    digest = oid[len(b"sha256:"):].decode("ascii", "replace")
    if len(digest) != 64:
        return None
    return digest, int(size)

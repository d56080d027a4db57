"""Reading model files for hashing: one pass, several algorithms, no page-cache flood, no writes.

- ``git-sha1`` is git's blob hash (``sha1(b"blob %d\\0" % size + data)``): huggingface_hub's etag
  for regular files and git's object id; ``sha256`` is the LFS etag; ``xxh3_128`` is the
  manifest's hash (memory speed).
- Files are opened with O_NOATIME where allowed (not even the access time changes) and
  O_NONBLOCK (a FIFO where a file should be cannot hang the audit).
- Large files are read with O_DIRECT where the filesystem allows it.
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import stat
from collections.abc import Callable
from typing import Any

import xxhash

from ...fileio import CHUNK, ByteProgress, file_type, read_pieces

PROGRESS_STEP = 16 << 20
DIRECT_MIN = 64 << 20  # below this the page cache costs nothing worth avoiding
DIRECT_CHUNK = 16 << 20

_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOATIME = getattr(os, "O_NOATIME", 0)
_DIRECT = getattr(os, "O_DIRECT", 0)


class Meter(ByteProgress):
    """``fileio.ByteProgress`` with a tree audit's own counters: bytes read (headers, small
    files) and hashed, large files left unread. The progress callback is called at most once per
    ``PROGRESS_STEP`` bytes hashed, and at the end of each file."""

    def __init__(self, progress: Callable[[int, int], None] | None = None):
        super().__init__(progress, step=PROGRESS_STEP)
        self.hashed = 0
        self.read = 0
        self.unread_large = 0

    def note_read(self, n: int) -> None:
        with self._lock:
            self.read += n

    def note_hashed(self, n: int, final: bool = False) -> None:
        with self._lock:
            self.hashed += n
            self.read += n
            self._count(n, final)


def new_hasher(algorithm: str, size: int) -> Any:
    if algorithm == "git-sha1":
        hasher = hashlib.sha1()
        hasher.update(b"blob %d\0" % size)  # git hashes a header naming the object's type and size
        return hasher
    if algorithm == "sha256":
        return hashlib.sha256()
    if algorithm == "xxh3_128":
        return xxhash.xxh3_128()
    raise ValueError(f"unknown algorithm {algorithm!r}")


def open_readonly(path: str, follow: bool = True) -> int:
    """An open descriptor of the regular file ``path``; OSError for anything else.

    Its type is checked before the open (a device node is never opened: that can have side
    effects) and again on the descriptor (a swap in between)."""
    st = os.stat(path) if follow else os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, f"not a regular file ({file_type(st.st_mode)})")
    flags = _OPEN | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    fd = -1
    if _NOATIME:
        try:
            fd = os.open(path, flags | _NOATIME)  # not even the access time of an audited file changes
        except PermissionError:
            pass  # O_NOATIME needs ownership of the file
    if fd < 0:
        fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (replaced while being opened)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _hash_direct(path: str, st: os.stat_result, hashers: dict[str, Any], meter: Meter, follow: bool) -> bool:
    """Stream a large file with O_DIRECT, bypassing the page cache; False when the filesystem refuses.

    A deep audit of a multi-TB model read through the page cache would evict everything a serving
    host keeps cached (the model's own pages included); direct reads leave the cache alone.
    """
    flags = _OPEN | _DIRECT | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        again = os.fstat(fd)
        if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
            return False  # replaced since it was opened: let the buffered path hash what it opened
        buffer = mmap.mmap(-1, DIRECT_CHUNK)  # page-aligned, as O_DIRECT requires
        view = memoryview(buffer)
        offset = 0
        try:
            while True:
                try:
                    n = os.preadv(fd, [buffer], offset)
                except OSError as exc:
                    if offset == 0 and exc.errno == errno.EINVAL:
                        return False  # accepted at open, refused at read (some FUSE and network filesystems)
                    raise
                if not n:
                    break
                for hasher in hashers.values():
                    hasher.update(view[:n])
                meter.note_hashed(n)
                offset += n
        finally:
            view.release()
            buffer.close()
        return True
    finally:
        os.close(fd)


def hash_file(path: str, algorithms: tuple[str, ...], meter: Meter, *, keep: bool,
              follow: bool = True) -> tuple[dict[str, str], bytes | None, os.stat_result]:
    """Hash ``path`` with each algorithm in one pass; the content too when ``keep``. Raises OSError."""
    fd = open_readonly(path, follow)
    try:
        st = os.fstat(fd)
        hashers = {a: new_hasher(a, st.st_size) for a in algorithms}
        if not keep and _DIRECT and st.st_size >= DIRECT_MIN and _hash_direct(path, st, hashers, meter, follow):
            meter.note_hashed(0, final=True)
            return {a: h.hexdigest() for a, h in hashers.items()}, None, st
        kept = bytearray() if keep else None
        for piece in read_pieces(fd, st.st_size, CHUNK):
            for hasher in hashers.values():
                hasher.update(piece)
            if kept is not None:
                kept += piece
            meter.note_hashed(len(piece))
        meter.note_hashed(0, final=True)
    finally:
        os.close(fd)
    return {a: h.hexdigest() for a, h in hashers.items()}, (bytes(kept) if kept is not None else None), st

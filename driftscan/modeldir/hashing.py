"""Reading model files for hashing: one pass, several algorithms, no page-cache flood, no writes.

- ``git-sha1`` is git's blob hash (``sha1(b"blob %d\\0" % size + data)``): huggingface_hub's etag
  for regular files and git's object id; ``sha256`` is the LFS etag; ``xxh3_128`` is the
  manifest's hash (memory speed).
- Files are opened with O_NOATIME where allowed (not even the access time changes) and
  O_NONBLOCK (a FIFO where a file should be cannot hang the audit).
- Large files are read with O_DIRECT where the filesystem allows it, reader threads filling the
  next buffers while the current one hashes.
- A file whose size or timestamps change while it is read, or that is gone from its path by
  the end, has no hash (``ChangedWhileRead``, ``FileNotFoundError``): never the hash of a mix.
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import stat
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

import xxhash

from ..fs.reader import CHUNK, ByteProgress, file_type, read_pieces

PROGRESS_STEP = 16 << 20
DIRECT_MIN = 64 << 20  # below this the page cache costs nothing worth avoiding
DIRECT_CHUNK = 8 << 20
DIRECT_READERS = 2  # O_DIRECT reads in flight per file, each reader with two buffers

_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
OPEN_FLAGS = _OPEN  # how every tree file is opened for reading (manifestdir opens walked files the same way)
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


def open_noatime(path: str, flags: int) -> int:
    """``os.open`` with O_NOATIME where allowed: not even the access time of an audited file changes."""
    if _NOATIME:
        try:
            return os.open(path, flags | _NOATIME)
        except PermissionError:
            pass  # O_NOATIME needs ownership of the file
    return os.open(path, flags)


def open_readonly(path: str, follow: bool = True) -> int:
    """An open descriptor of the regular file ``path``; OSError for anything else.

    Its type is checked before the open (a device node is never opened: that can have side
    effects) and again on the descriptor (a swap in between)."""
    st = os.stat(path) if follow else os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, f"not a regular file ({file_type(st.st_mode)})")
    fd = open_noatime(path, _OPEN | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (replaced while being opened)")
    except BaseException:
        os.close(fd)
        raise
    return fd


class ChangedWhileRead(OSError):
    """The file's size or timestamps changed while it was read: its hash would describe neither
    the old content nor the new, so there is none."""


def _reader(fd: int, first: int, step: int, buffers: list[mmap.mmap], free: SimpleQueue[int | None],
            filled: SimpleQueue[tuple[int, int | BaseException]]) -> None:
    """Read chunks ``first``, ``first + step``, ... of the file into the buffers ``free`` hands
    over and pass each on through ``filled`` as (slot, bytes read) or (slot, exception); a short
    read is the end. ``os.preadv`` drops the GIL, so this runs while the caller hashes."""
    chunk = DIRECT_CHUNK
    offset = first * chunk
    while True:
        slot = free.get()
        if slot is None:  # the caller stopped early
            return
        try:
            n = os.preadv(fd, [buffers[slot]], offset)
        except BaseException as exc:  # handed to the caller, which raises or falls back
            filled.put((slot, exc))
            return
        filled.put((slot, n))
        if n < chunk:
            return
        offset += step * chunk


def _hash_direct(path: str, st: os.stat_result, hashers: dict[str, Any], meter: Meter, follow: bool) -> bool:
    """Stream a large file with O_DIRECT, bypassing the page cache; False when the filesystem refuses.

    A deep audit of a multi-TB model read through the page cache would evict everything a serving
    host keeps cached (the model's own pages included); direct reads leave the cache alone
    (``posix_fadvise(DONTNEED)`` after buffered reads would drop pages a server has cached too).
    ``DIRECT_READERS`` reader threads, each with two buffers of its own, read the chunks in turn
    (chunk k by reader k mod n: that many reads in flight, as the kernel's readahead keeps for a
    buffered read) while this thread hashes them in file order: hashlib and xxhash drop the GIL
    for a whole buffer, ``preadv`` too, so the disk and the hash run side by side and a file
    costs the slower of the two, not their sum.
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
        n_readers = max(1, min(DIRECT_READERS, -(-st.st_size // DIRECT_CHUNK)))
        buffers = [mmap.mmap(-1, DIRECT_CHUNK) for _ in range(2 * n_readers)]  # page-aligned, as O_DIRECT requires
        views = [memoryview(b) for b in buffers]
        frees: list[SimpleQueue[int | None]] = [SimpleQueue() for _ in range(n_readers)]
        filleds: list[SimpleQueue[tuple[int, int | BaseException]]] = [SimpleQueue() for _ in range(n_readers)]
        for r in range(n_readers):
            frees[r].put(2 * r)
            frees[r].put(2 * r + 1)
        readers = [threading.Thread(target=_reader, args=(fd, r, n_readers, buffers, frees[r], filleds[r]),
                                    name="driftscan-direct-read", daemon=True) for r in range(n_readers)]
        for reader in readers:
            reader.start()
        offset = 0
        updates = [h.update for h in hashers.values()]
        k = 0
        try:
            while True:
                r = k % n_readers
                slot, n = filleds[r].get()
                if isinstance(n, BaseException):
                    if offset == 0 and isinstance(n, OSError) and n.errno == errno.EINVAL:
                        return False  # accepted at open, refused at read (some FUSE and network filesystems)
                    raise n
                if n:
                    piece = views[slot][:n]
                    for update in updates:
                        update(piece)
                    piece.release()
                    meter.note_hashed(n)
                    offset += n
                if n < DIRECT_CHUNK:
                    break
                frees[r].put(slot)
                k += 1
        finally:
            for free in frees:
                free.put(None)  # each reader stops at its next buffer, if it has not already
            for reader in readers:
                reader.join()
            for view in views:
                view.release()
            for buffer in buffers:
                buffer.close()
        _unchanged_since(fd, path, st, offset, follow)
        return True
    finally:
        os.close(fd)


def _unchanged_since(fd: int, path: str, st: os.stat_result, read: int, follow: bool) -> None:
    """Raise unless the file read is still the one opened, as it was: as many bytes read as it
    had, the same size and timestamps now, and still at ``path`` (FileNotFoundError if it went)."""
    there = os.stat(path) if follow else os.lstat(path)  # FileNotFoundError: it vanished meanwhile
    if (there.st_dev, there.st_ino) != (st.st_dev, st.st_ino):
        raise ChangedWhileRead(errno.EIO, "replaced while being read")
    now = os.fstat(fd)
    if read != st.st_size or (now.st_size, now.st_mtime_ns, now.st_ctime_ns) != \
            (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
        raise ChangedWhileRead(errno.EIO, f"changed while being read ({st.st_size} bytes when opened, "
                                          f"{read} read, {now.st_size} now)")


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
        read = 0
        for piece in read_pieces(fd, st.st_size, CHUNK):
            for hasher in hashers.values():
                hasher.update(piece)
            if kept is not None:
                kept += piece
            read += len(piece)
            meter.note_hashed(len(piece))
        if st.st_size >= CHUNK or read != st.st_size:  # read in several pieces: the file could change between them
            _unchanged_since(fd, path, st, read, follow)
        meter.note_hashed(0, final=True)
    finally:
        os.close(fd)
    return {a: h.hexdigest() for a, h in hashers.items()}, (bytes(kept) if kept is not None else None), st

"""Check one path against one RECORD entry: presence, type, size, then hash.

Never raises for the file's sake: a file that cannot be read, a symlink loop or a file that
vanishes between two system calls each become a result.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..fs.reader import NOFOLLOW, READ_FLAGS, SMALL_READ, file_type, os_error
from ..core.values import FileState, RecordEntry
from ..formats.record import hash_text, new_hash

if TYPE_CHECKING:
    from ..caches.statcache import DigestCache
    from ..fs.containment import Containment

OK = "ok"
MODIFIED = "modified"
MISSING = "missing"
TYPE_CHANGED = "type-changed"
ERROR = "error"



@dataclass(frozen=True)
class EntryResult:
    status: str
    expected: FileState = field(default_factory=lambda: FileState())
    actual: FileState = field(default_factory=lambda: FileState())
    message: str = ""
    link_target: str | None = None
    nlink: int = 1
    resolved: str | None = None  # a followed symlink: the path read (inside the environment or a known cache)
    refused: bool = False  # an ERROR because the path leads outside the environment (message: where)


def expected_of(entry: RecordEntry) -> FileState:
    expected: FileState = {"type": "file"}
    if entry.hash is not None:
        expected["hash"] = hash_text(entry.hash)
    if entry.size is not None:
        expected["size"] = entry.size
    return expected


# A file larger than this is hashed through a buffer of this size that each thread keeps: a
# buffer of SMALL_READ (1 MiB) allocated per file put a megabyte per hashing thread on the
# audit's peak memory (and faulted it in each time), for no speed (buffer sizes from 256 KiB to
# 4 MiB measured alike: docs/performance.md).
STREAM_BUFFER = 256 << 10
_local = threading.local()


def _buffer() -> memoryview:
    view = getattr(_local, "view", None)
    if view is None:
        view = _local.view = memoryview(bytearray(STREAM_BUFFER))
    return view


def digest_fd(fd: int, algorithm: str, size: int) -> bytes:
    """Hash an open file, reading at most ``size + 1`` bytes (a file that grows while it is read
    has changed: one byte more says so, and a file that never stops growing cannot hold the audit).
    Small files in one read; large ones streamed (hashlib drops the GIL)."""
    if size <= STREAM_BUFFER:
        data = b""
        while len(data) <= size:  # a short read is possible on network filesystems
            chunk = os.read(fd, size + 1 - len(data))  # exactly what is left: no 1 MiB buffer
            if not chunk:
                break
            data += chunk
        return new_hash(algorithm, data).digest()
    hasher = new_hash(algorithm)
    left = size + 1
    view = _buffer()
    readv = os.readv
    while left > 0 and (n := readv(fd, (view if left >= STREAM_BUFFER else view[:left],))):
        hasher.update(view[:n])
        left -= n
    return hasher.digest()


_PLAIN_OK = EntryResult(OK)  # shared: the common case allocates nothing


def _ok(link_target: str | None, nlink: int, real: str | None = None) -> EntryResult:
    if link_target is None and nlink == 1:
        return _PLAIN_OK
    return EntryResult(OK, link_target=link_target, nlink=nlink, resolved=real if link_target is not None else None)


def quick_check(path: str, entry: RecordEntry, cache: DigestCache | None = None, regular: bool = False,
                links: Containment | None = None) -> EntryResult | None:
    """The hot path of a cold audit: a small regular file whose content matches RECORD.

    None means "not settled here" (a mismatch, an oddity, an error, a path ``links`` refuses):
    the caller then runs ``check_entry``, which knows every case and describes the drift. The
    type is known before the open, from an lstat here or, with ``regular``, from the caller (a
    directory listing that also vouches for the path being inside the roots): a device node or
    FIFO named by RECORD is never opened (opening a device can have side effects). The fstat
    after the open closes the race with a swap.
    """
    digest = entry.hash
    assert digest is not None  # only rows with a hash are checked by content
    try:
        if not regular:
            if links is not None and links.row_problem(path) is not None:
                return None
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > SMALL_READ or \
                    (entry.size is not None and st.st_size != entry.size):
                return None  # a symlink, another type, another size...: check_entry says which
        fd = os.open(path, READ_FLAGS | NOFOLLOW)
    except OSError:
        return None  # missing, unreadable...
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > SMALL_READ or (entry.size is not None and st.st_size != entry.size):
            return None
        started = time.time_ns()
        if st.st_size > STREAM_BUFFER:
            # (a file that changed size meanwhile hashes to another digest, and is checked again)
            actual = digest_fd(fd, digest.algorithm, st.st_size)
        else:
            # Exactly the size (+1 to see growth): asking for SMALL_READ would allocate, and fault in,
            # 1 MiB per call (measured: 12 µs per read of a 2 KB file, against 2 µs).
            data = os.read(fd, st.st_size + 1)
            if len(data) != st.st_size:
                return None
            actual = new_hash(digest.algorithm, data).digest()
    except OSError:
        return None
    finally:
        os.close(fd)
    if actual != digest.digest:
        return None
    if cache is not None:
        cache.store(path, st, digest.algorithm, actual, started)
    return _PLAIN_OK


def _outside(entry: RecordEntry, link_target: str) -> EntryResult:
    # uv --link-mode symlink links every file into its cache: followed only into a cache driftscan
    # knows (--uv-cache, UV_CACHE_DIR, uv's default), never into one the tree names.
    hint = "; if that is uv's cache, name it with --uv-cache" if "/archive-v0/" in link_target else ""
    return EntryResult(TYPE_CHANGED, expected_of(entry), {"type": "symlink", "target": link_target},
                       message=f"a symlink out of the environment (to {link_target}); not followed{hint}",
                       link_target=link_target)


def check_entry(path: str, entry: RecordEntry, presence_only: bool = False, cache: DigestCache | None = None,
                read: bool = True, lookup: bool = True, links: Containment | None = None,
                st: os.stat_result | None = None
                ) -> EntryResult | None:
    """Compare the file at ``path`` with ``entry``. ``expected`` is filled only for drifts.

    With ``read=False``, returns None instead of reading a file whose content must be hashed:
    the caller does the cheap stat pass first and hashes the remainder in parallel.
    ``links``: a ``environment.target.Containment`` that says where a symlink may be followed
    (inside the environment, or into a cache driftscan knows); without it none is. ``st``: the
    path's lstat, if the caller has just taken it. A path ``links`` refuses (outside the roots,
    or under a symlinked directory that leaves them) is an ERROR with ``refused`` set: nothing
    about it, not even its type, is looked at.
    """
    if links is not None:
        why = links.row_problem(path)
        if why is not None:
            return EntryResult(ERROR, message=why, refused=True)
    if st is None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return EntryResult(MISSING, expected_of(entry))
        except OSError as exc:
            return EntryResult(ERROR, expected_of(entry), message=f"cannot stat: {os_error(exc)}")
    link_target = None
    real = path
    if stat.S_ISLNK(st.st_mode):
        try:
            link_target = os.readlink(path)
        except OSError as exc:
            return EntryResult(ERROR, expected_of(entry), message=f"cannot read symlink: {os_error(exc)}")
        followed = links.follow(path, link_target) if links is not None else None
        if followed is None:
            return _outside(entry, link_target)
        real = followed
        try:
            st = os.lstat(real)
            if stat.S_ISLNK(st.st_mode):  # a chain of links: resolved at once, then judged
                resolved = links.resolve(path)  # type: ignore[union-attr]  # followed: links is set
                if resolved is None:
                    return _outside(entry, link_target)
                real = resolved
                st = os.lstat(real)
                if stat.S_ISLNK(st.st_mode):
                    raise OSError(errno.ELOOP, "symlink loop")
        except FileNotFoundError:
            return EntryResult(MISSING, expected_of(entry), {"type": "symlink", "target": link_target, "dangling": True},
                               link_target=link_target)
        except OSError as exc:
            return EntryResult(ERROR, expected_of(entry), message=f"cannot follow symlink: {os_error(exc)}",
                               link_target=link_target)
    kind = file_type(st.st_mode)
    is_directory_row = entry.hash is None and entry.size is None
    if kind == "directory" and is_directory_row:
        return _ok(link_target, 1, real)  # a directory row owns what is under it
    if kind != "file":
        return EntryResult(TYPE_CHANGED, expected_of(entry), {"type": kind}, link_target=link_target)
    if presence_only or entry.hash is None and entry.size is None:
        return _ok(link_target, st.st_nlink, real)
    size_ok = entry.size is None or st.st_size == entry.size
    if not size_ok:  # settled without opening the file
        return _modified(entry, st, None, link_target, real)
    if lookup and cache is not None and entry.hash is not None:
        known = cache.lookup(path, st, entry.hash.algorithm)
        if known is not None and known == entry.hash.digest:
            return _ok(link_target, st.st_nlink, real)
    if not read:
        return None
    try:
        fd = os.open(real, READ_FLAGS | NOFOLLOW)
    except FileNotFoundError:
        return EntryResult(MISSING, expected_of(entry), message="vanished during the audit")
    except OSError as exc:
        return EntryResult(ERROR, expected_of(entry), message=f"cannot open: {os_error(exc)}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between lstat and open
            return EntryResult(TYPE_CHANGED, expected_of(entry), {"type": file_type(st.st_mode)})
        size_ok = entry.size is None or st.st_size == entry.size
        digest = None
        if entry.hash is not None and size_ok:  # a size mismatch already settles it
            started = time.time_ns()
            digest = digest_fd(fd, entry.hash.algorithm, st.st_size)
            if cache is not None:
                cache.store(path, st, entry.hash.algorithm, digest, started)
    except OSError as exc:
        return EntryResult(ERROR, expected_of(entry), message=f"cannot read: {os_error(exc)}")
    finally:
        os.close(fd)
    if size_ok and (entry.hash is None or digest == entry.hash.digest):
        return _ok(link_target, st.st_nlink, real)
    return _modified(entry, st, digest, link_target, real)


def _modified(entry: RecordEntry, st: os.stat_result, digest: bytes | None, link_target: str | None,
              real: str) -> EntryResult:
    actual: FileState = {"type": "file", "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if digest is not None:
        recorded = entry.hash
        assert recorded is not None  # a digest is computed only for a row with a hash
        actual["hash"] = hash_text(recorded._replace(digest=digest))
    if st.st_nlink > 1:
        actual["nlink"] = st.st_nlink
    if link_target is not None:
        actual["symlink_target"] = link_target
    return EntryResult(MODIFIED, expected_of(entry), actual, link_target=link_target, nlink=st.st_nlink,
                       resolved=real if link_target is not None else None)

"""Hash the largest files in a forked child while this process is still reading RECORDs.

Until hashing starts, one core parses 40,000 RECORD rows and builds the ownership index; the
other is idle. A child forked at the start takes the largest files straight from the RECORDs
(``record.large_entries``: only the rows of large files are parsed) and hashes them, largest
first, reporting each digest with the file's signature as it goes. A thread could not do this: the
parsing thread holds the GIL, and a hashing thread waited for it after every buffer (measured:
no gain). The parent trusts a digest only as it trusts its stat cache: the file's signature
must be unchanged and older than the racy window when the child hashed it. Anything else is
hashed by the parent as usual.
"""

from __future__ import annotations

import hashlib
import marshal
import mmap
import os
import select
import stat
import struct
import time

from ...caches.racy import settled_stat
from ...caches.statcache import SIGNATURE, signature
from ...fs.containment import Containment
from ..target import containment_for_site_packages
from ...fs.reader import NOFOLLOW, READ_FLAGS, read_kind
from ...formats.record import large_entries
from ...fs import helpers as forked
from ...fs.helpers import Child, may_fork

LARGE = 8 << 20  # the files worth it: the big shared libraries
_FRAME = struct.Struct("<I")
_OPEN_FLAGS = READ_FLAGS | NOFOLLOW


def _large_rows(site_packages: tuple[str, ...], containment: Containment) -> list[tuple[int, str, str]]:
    """(size, absolute path, algorithm) of hashed rows of at least LARGE bytes, largest first:
    only relative paths that stay inside their site-packages, and none the containment refuses."""
    found = []
    for site in site_packages:
        try:
            names = [n for n in os.listdir(site) if n.endswith(".dist-info")]
        except OSError:
            continue
        for name in names:
            try:
                text = read_kind(os.path.join(site, name, "RECORD"), "RECORD", follow=False)\
                    .decode("utf-8", "surrogateescape")
            except OSError:
                continue  # the parent reports it
            # Hex digests too, as the parent reads a RECORD no INSTALLER vouches for (where one
            # does, such a row is not hashed at all and the digest goes unused).
            for entry in large_entries(text, LARGE, allow_hex=True):
                path, digest, size = entry.path, entry.hash, entry.size
                if digest is None or size is None or path.startswith("/") or ".." in path.split("/"):
                    continue  # absolute and climbing rows are left to the parent
                absolute = os.path.normpath(os.path.join(site, path))
                if containment.row_problem(absolute) is None:
                    found.append((size, absolute, digest.algorithm))
    found.sort(reverse=True)
    return found


class Prehasher:
    """The child and what it reported. ``take()`` once hashing starts in the parent, ``finish()``
    after: together they return every digest the child completed."""

    def __init__(self, site_packages: tuple[str, ...], containment: Containment | None = None) -> None:
        """``containment``: where files may be read (default: under each site-packages' root)."""
        self._child: Child | None = None
        self._results: dict[str, tuple[bytes, str, bytes, int]] = {}
        self._busy: str | None = None
        self._buffer = b""
        if not may_fork():
            return
        # The stop flag is a shared page, not a pipe: a pipe's write end would be inherited by
        # every process forked later (the unowned walk), and closing ours would signal nothing.
        self._stop = mmap.mmap(-1, 1)
        containment = containment or containment_for_site_packages(site_packages)
        child = Child(lambda fd: _child(site_packages, containment, fd, self._stop))
        if child.started:
            self._child = child
            os.set_blocking(child.fd, False)  # type: ignore[arg-type]  # a started child has its fd

    def _read(self, block: bool) -> None:
        fd = self._child.fd if self._child is not None else None
        assert fd is not None, "read only while the child runs"
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                if not block:
                    break
                # A child stuck on one file (a hung filesystem) is given up, not waited for.
                if not select.select([fd], [], [], forked.HELPER_TIMEOUT)[0]:
                    raise TimeoutError("the prehash child fell silent")
                continue
            if not chunk:
                break
            self._buffer += chunk
        while len(self._buffer) >= _FRAME.size:
            (n,) = _FRAME.unpack_from(self._buffer)
            if len(self._buffer) < _FRAME.size + n:
                break
            message = marshal.loads(self._buffer[_FRAME.size:_FRAME.size + n])
            self._buffer = self._buffer[_FRAME.size + n:]
            if message[0] == "start":
                self._busy = message[1]
            else:
                _, path, sig, algorithm, digest, hashed_at = message
                self._results[path] = (sig, algorithm, digest, hashed_at)
                self._busy = None

    def take(self) -> tuple[dict[str, tuple[bytes, str, bytes, int]], str | None]:
        """Stop the child after its current file. Returns (digests so far, the file it is on)."""
        if self._child is None:
            return {}, None
        self._stop[0] = 1
        self._read(block=False)
        return dict(self._results), self._busy

    def finish(self) -> dict[str, tuple[bytes, str, bytes, int]]:
        """Wait for the child's last file; every digest it completed."""
        if self._child is None:
            return {}
        try:
            self._read(block=True)
        except (OSError, ValueError, EOFError, TypeError):  # TimeoutError included
            self._child.kill()  # a garbled stream or a silent child: trust none of it
            self._child = None
            self._results.clear()
            return self._results
        if self._child.wait(read_rest=lambda fd: b"") is None:
            self._results.clear()  # it failed: what it sent may be cut short
        self._child = None
        return self._results

    def abandon(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child = None


def _send(fd: int, message: tuple[str | bytes | int, ...]) -> None:
    data = marshal.dumps(message)
    os.write(fd, _FRAME.pack(len(data)) + data)  # small frames: one write each, whole


def _child(site_packages: tuple[str, ...], containment: Containment, out: int, stop: mmap.mmap) -> None:
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    for size, path, algorithm in _large_rows(site_packages, containment):
        if stop[0]:
            return  # the parent has started hashing: it takes the rest
        _send(out, ("start", path))
        try:
            # Only a regular file of the size RECORD says is hashed: the type from lstat before the
            # open (a device is never opened), and another size is a drift the parent settles
            # without reading (a 1 TiB sparse file where RECORD says 16 MiB).
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size != size:
                continue
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != size:
                continue
            started = time.time_ns()
            hasher = hashlib.new(algorithm)
            left = size + 1  # no further than one byte past the size: a growing file is not waited for
            while left > 0 and (n := os.readv(fd, [buffer if left >= len(buffer) else view[:left]])):
                hasher.update(view[:n])
                left -= n
        except OSError:
            continue
        finally:
            os.close(fd)
        sig = signature(st)
        if sig and settled_stat(st, started):
            _send(out, ("done", path, sig, algorithm, hasher.digest(), started))


def usable(st: os.stat_result, result: tuple[bytes, str, bytes, int] | None, algorithm: str) -> bytes | None:
    """The child's digest, if the file (``st``, its lstat now) is as it was when the child read it."""
    if result is None:
        return None
    sig, done_algorithm, digest, _ = result
    if done_algorithm != algorithm or len(sig) != SIGNATURE.size or signature(st) != sig:
        return None
    return digest

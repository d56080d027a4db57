"""The one way driftscan reads a file that the audited tree controls.

An audited tree is data, never instructions (docs/security.md): any of its files may be a FIFO,
a device node, a symlink out of the tree, or 64 GiB where a few bytes are expected. So:

- ``lstat`` first where a symlink is not meant to be followed, and ``O_NOFOLLOW`` on the open;
- every open is ``O_NONBLOCK``: a FIFO cannot block the audit between the open and the fstat;
- only a regular file is read, checked with ``fstat`` on the open descriptor (device nodes are
  never opened: their type is known from ``lstat`` first when ``follow`` is False, and an open
  of a FIFO or device through a followed symlink is refused by the fstat before any read);
- at most ``limit`` bytes, the cap of that kind of file (``LIMITS``), named in the error;
- with ``root`` given, a path whose real location is outside ``root`` is refused: a symlink that
  leaves the tree is reported with its target, never followed for content.

Errors are ``OSError`` with a message that says what was refused, so every caller's existing
"cannot read: …" reporting applies.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ..core.values import Problem

# Non-blocking, so that a FIFO where a file should be cannot hang an audit (the reader checks
# with fstat that it is a regular file before reading).
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CHUNK = 4 << 20  # hashing buffer for large files (model shards, manifests)
# A venv file up to this size is read in one read of its exact size; a larger one through a
# buffer this big (a 4 MiB buffer bought nothing there: docs/performance.md).
SMALL_READ = 1 << 20

# Caps per kind of tree-controlled file. Generous against real files (the largest RECORD seen,
# torch's, is 1.9 MB; METADATA of big projects a few hundred KB), tiny against a hostile one.
LIMITS = {
    "RECORD": 256 << 20,
    "METADATA": 16 << 20,
    "PKG-INFO": 16 << 20,
    "top_level.txt": 1 << 20,
    "INSTALLER": 4 << 10,
    "direct_url.json": 1 << 20,
    "pyvenv.cfg": 1 << 20,
    ".pth": 1 << 20,
    "finder": 4 << 20,
    ".egg-link": 64 << 10,
    "installed-files.txt": 64 << 20,
    "git ref": 4 << 10,
    "hf metadata": 4 << 10,
    "manifest": 1 << 30,
    "cache": 1 << 30,
}


def file_type(mode: int) -> str:
    """The kind of file an ``st_mode`` describes, as reports name it."""
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "symlink"),
                       (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "device"


def os_error(exc: OSError) -> str:
    """An OSError in a report's words."""
    return "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))


def default_jobs() -> int:
    """Worker threads or processes: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _refuse(code: int, message: str) -> OSError:
    return OSError(code, message)


def inside(root: str, path: str) -> bool:
    """Whether ``path``'s real location (symlinks resolved) is ``root``'s real location or under it."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def check_inside(root: str, path: str) -> None:
    """OSError(EXDEV) naming the target when ``path`` resolves outside ``root``."""
    if not inside(root, path):
        raise _refuse(errno.EXDEV, f"resolves outside the audited tree (to {os.path.realpath(path)}); not followed")


def open_regular(path: str, *, follow: bool = True, root: str | None = None,
                 lst: os.stat_result | None = None) -> tuple[int, os.stat_result]:
    """An open descriptor of a regular file and its fstat; OSError for anything else.

    ``follow=False`` refuses a symlink (lstat, then ``O_NOFOLLOW``); ``root`` refuses a path that
    resolves outside it; ``lst``: the path's lstat, when the caller's walk took it already."""
    if root is not None:
        check_inside(root, path)
    # The type is known before the open, so a device node or FIFO is never opened (opening a
    # device can have side effects); the fstat below closes the race with a swap.
    st = lst if lst is not None and not follow else os.stat(path) if follow else os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(errno.ELOOP, f"a symlink (to {os.readlink(path)}), not followed")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(errno.EINVAL, f"not a regular file ({stat.filemode(st.st_mode)})")
    fd = os.open(path, READ_FLAGS | (0 if follow else NOFOLLOW))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(errno.EINVAL, f"not a regular file ({stat.filemode(st.st_mode)})")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular_stat(path: str, limit: int, *, what: str | None = None, follow: bool = True,
                      root: str | None = None) -> tuple[bytes, os.stat_result]:
    """The content of a regular file of at most ``limit`` bytes and its stat (from the open
    descriptor: both describe one file); OSError otherwise. ``what`` names the kind of file in
    the size error ("a RECORD may have at most …")."""
    fd, st = open_regular(path, follow=follow, root=root)
    try:
        return read_opened(fd, st, limit, what=what), st
    finally:
        os.close(fd)


def read_opened(fd: int, st: os.stat_result, limit: int, *, what: str | None = None) -> bytes:
    """The content of an open regular file (``open_regular``'s descriptor and fstat ``st``), of at
    most ``limit`` bytes, as ``read_regular_stat`` reads it; the caller closes ``fd``. For a caller
    that decides from the fstat whether it needs the content at all."""
    if st.st_size > limit:
        cap = f"the {limit} bytes a {what} may have" if what else f"the {limit} expected"
        raise _refuse(errno.EFBIG, f"{st.st_size} bytes, more than {cap}")
    chunks = []
    total = 0
    while chunk := os.read(fd, min(1 << 20, limit + 1 - total) or 1):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:  # it grew while being read
            cap = f"the {limit} bytes a {what} may have" if what else f"the {limit} expected"
            raise _refuse(errno.EFBIG, f"grew past {cap} while being read")
    return b"".join(chunks)


def read_regular(path: str, limit: int, *, what: str | None = None, follow: bool = True,
                 root: str | None = None) -> bytes:
    """``read_regular_stat`` without the stat."""
    return read_regular_stat(path, limit, what=what, follow=follow, root=root)[0]


def read_head(path: str, limit: int, *, follow: bool = True, root: str | None = None) -> tuple[bytes, int]:
    """(at most the first ``limit`` bytes of a regular file, its size): for a file whose start is
    worth showing whatever its length (a 50 MB ``.pth`` costs one ``limit``-sized read, never
    more); OSError for anything but a regular file, as ``open_regular`` refuses."""
    fd, st = open_regular(path, follow=follow, root=root)
    try:
        chunks: list[bytes] = []
        total = 0
        while total < limit and (chunk := os.read(fd, min(1 << 20, limit - total))):
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks), max(st.st_size, total)
    finally:
        os.close(fd)


def read_kind(path: str, kind: str, *, follow: bool = True, root: str | None = None) -> bytes:
    """A tree-controlled file of a kind listed in ``LIMITS``, capped at that kind's limit."""
    return read_regular(path, LIMITS[kind], what=kind, follow=follow, root=root)


def read_pieces(fd: int, size: int, chunk: int = CHUNK) -> Iterator[bytes | memoryview]:
    """The content of an open file, for hashing: a small file in one read of its size (a
    ``chunk``-sized buffer per file cost more than hashing it), a large one through one reused
    buffer, so each piece is valid only until the next one is asked for."""
    if size < chunk:
        data = os.read(fd, size + 1)
        while data:
            yield data
            data = os.read(fd, 1 << 16)  # it grew, or a short read
        return
    with os.fdopen(os.dup(fd), "rb", buffering=0) as f:
        buffer = bytearray(chunk)
        view = memoryview(buffer)
        while n := f.readinto(buffer):
            yield view[:n]


class ByteProgress:
    """Bytes done out of ``total``, for a ``progress(done, total)`` callback (the CLI's bar): the
    one accounting of hashing progress, for venvs and trees alike. Thread-safe: ``add`` is called
    from hashing threads, and the callback is called under the lock, so its calls come one at a
    time and ``done`` never goes back. At most one call per ``step`` bytes (0: one per ``add``),
    and one for a ``final`` add whatever the step."""

    def __init__(self, progress: Callable[[int, int], None] | None = None, total: int = 0, step: int = 0) -> None:
        self.total = total  # bytes planned, may grow before the work starts
        self.done = 0
        self._progress = progress
        self._step = step
        self._reported = 0
        self._lock = threading.Lock()

    def add(self, n: int, final: bool = False) -> None:
        with self._lock:
            self._count(n, final)

    def _count(self, n: int, final: bool) -> None:
        """``add`` with the lock held (a subclass counting more under the same lock calls this)."""
        self.done += n
        if self._progress is not None and (final or self.done - self._reported >= self._step):
            self._reported = self.done
            self._progress(min(self.done, self.total), self.total)


def walk(top: str, onerror: Callable[[OSError], None] | None = None
         ) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top, followlinks=False)``, top-down, without recursion: Python 3.10 and 3.11's
    os.walk recurses, so a tree 1,000 directories deep raised RecursionError and cost a whole
    model directory its audit. ``dirnames`` may be pruned in place, as with os.walk."""
    stack = [top]
    while stack:
        dirpath = stack.pop()
        dirnames: list[str] = []
        filenames: list[str] = []
        links: set[str] = set()
        try:
            with os.scandir(dirpath) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    (dirnames if is_dir else filenames).append(entry.name)
                    if is_dir and entry.is_symlink():
                        links.add(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        yield dirpath, dirnames, filenames
        stack.extend(os.path.join(dirpath, name) for name in reversed(dirnames) if name not in links)


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")

POOL_MIN = 256 << 10  # bytes: files smaller than this are hashed by the calling thread


def map_by_size(func: Callable[[_Item], _Result], items: Sequence[_Item], sizes: Sequence[int], jobs: int,
                pool_min: int = POOL_MIN) -> list[_Result]:
    """``[func(item) for item in items]``, the large items (by ``sizes``) hashed in a thread pool,
    largest first, the small ones in this thread: hashlib and xxhash drop the GIL for a whole
    buffer, but threads that all hash small files pass the GIL back and forth at every system
    call (a 40,000-file venv: 9 s against 3 s)."""
    large = sorted((k for k, size in enumerate(sizes) if size >= pool_min), key=lambda k: -sizes[k])
    if jobs < 2 or not large:
        return [func(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor  # not at start-up: 9 ms a command that never hashes pays

    results: list[Any] = [None] * len(items)  # every slot filled below
    # ``jobs`` threads for the large files: this thread is busy with the small ones only for a while
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="driftscan-hash-pool") as pool:
        futures = [(k, pool.submit(func, items[k])) for k in large]
        taken = set(large)
        for k, item in enumerate(items):
            if k not in taken:
                results[k] = func(item)
        for k, future in futures:
            results[k] = future.result()
    return results

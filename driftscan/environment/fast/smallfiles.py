"""A share of the small files for a forked child, when there are too many for one thread.

Helper threads hash large files well (hashlib drops the GIL for each buffer) but not small ones:
two threads on small files pass the GIL back and forth at every system call. So the calling
thread does the small files alone, which is right beside a venv's large files (torch's and
vLLM's take the helper's time anyway) and wrong for a venv of small files only (a web app's,
or 200,000 synthetic ones): there one core works and one waits. A forked child has its own
GIL: it takes the share of small files that balances the work, checks them as the parent would
(``quick_check``), and sends back which matched and the stat-cache entries they earned.
Anything the child did not settle is checked again by the parent, which describes drift.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from ...caches.statcache import StatCache
from .. import files
from ...fs.helpers import Child, may_fork

if TYPE_CHECKING:
    from ...core.values import RecordEntry
    from ...fs.containment import Containment
    from ..unowned import UnownedWalk


class Pairs(Protocol):
    """``(entry, absolute path)`` rows, counted, and made one at a time as they are iterated."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[tuple[RecordEntry, str]]: ...

CHILD_MIN_FILES = 4096  # below this a fork costs more than it saves
SMALL_FILE_S = 20e-6  # one small file, open to close, measured on the 40k-file venv
LARGE_BYTES_PER_S = 1.4e9  # reading and hashing a page-cached large file, one core


def child_share(sizes: Sequence[int], small_below: int, jobs: int) -> tuple[int, int]:
    """(start, stop) of the slice of ``sizes`` (ascending) for a child; empty if none is worth it."""
    n_small = next((k for k, size in enumerate(sizes) if size >= small_below), len(sizes))
    if jobs < 2 or n_small < CHILD_MIN_FILES or not may_fork():
        return 0, 0
    total = n_small * SMALL_FILE_S + sum(sizes[n_small:]) / LARGE_BYTES_PER_S
    mine = int(total / jobs / SMALL_FILE_S)  # the calling thread's fair share of the small files
    if n_small - mine < CHILD_MIN_FILES // 2:
        return 0, 0
    return mine, n_small


class SmallFilesChild:
    """The child at work on ``rows`` (``(entry, path)`` pairs); ``collect()`` gives its answers."""

    def __init__(self, rows: Pairs, links: Containment | None = None, walk: UnownedWalk | None = None,
                 indices: Sequence[int] | None = None, record: bool = True) -> None:
        """``rows``: a sized iterable of them (made one at a time in the child, not beforehand).
        ``links``: the audit's ``Containment`` (a row it refuses is left unmatched, for the
        parent to report); ``walk``: the ``UnownedWalk`` whose ``typed()`` says, by row index
        (``indices``, one per row), which files its listing showed as regular; ``record``: whether
        the parent keeps a stat cache (else the child earns it no entries)."""
        self.rows = rows
        if walk is not None and indices is None:
            walk = None
        self._child = Child(lambda fd: _child(rows, fd, links, walk, indices, record))

    @property
    def started(self) -> bool:
        return self._child.started

    def collect(self) -> tuple[bytes, dict[str, bytes]]:
        """(one byte per row: 1 where the content matched RECORD, the stat-cache entries earned);
        all zeros if the child failed, so that the parent checks every row itself."""
        failed: tuple[bytes, dict[str, bytes]] = (b"\0" * len(self.rows), {})
        data = self._child.wait()
        try:
            matched, entries = marshal.loads(data)  # type: ignore[arg-type]  # None (no answer): TypeError, failed
        except (EOFError, ValueError, TypeError):
            return failed
        if type(matched) is not bytes or len(matched) != len(self.rows) or type(entries) is not dict:
            return failed
        return matched, entries

    def abandon(self) -> None:
        self._child.kill()


def _child(rows: Pairs, out: int, links: Containment | None = None, walk: UnownedWalk | None = None,
           indices: Sequence[int] | None = None, record: bool = True) -> None:
    recorder = StatCache(None) if record else None  # in memory only: its entries go back to the parent
    plain_ok, quick = files._PLAIN_OK, files.quick_check
    # A file's type must be known before it is opened (a device node is never opened): an lstat
    # each, until the unowned-file walk has listed the directories (``walk.typed()``, a page
    # shared with it: no pipe, no waiting).
    typed: bytes | None = None
    matched = bytearray(len(rows))
    for k, (entry, path) in enumerate(rows):
        if typed is None and walk is not None and not k & 127:
            typed = walk.typed()
        known = typed is not None and indices is not None and typed[indices[k]] != 0  # (no walk without indices)
        matched[k] = quick(path, entry, recorder, regular=known, links=None if known else links) is plain_ok
    data = marshal.dumps((bytes(matched), recorder.entries if recorder is not None else {}))
    with os.fdopen(out, "wb") as pipe:
        pipe.write(data)

"""Verify every installed distribution against its RECORD (or installed-files.txt)."""

from __future__ import annotations

import heapq
import operator
import os
import stat
import struct
import threading
from array import array
from collections import defaultdict
from collections.abc import Callable, Container, Iterator, Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any
from dataclasses import dataclass, replace

from ..caches.statcache import SIGNATURE, DigestCache, tag
from .dists import MetadataDir, trusted_installer
from ..fs.containment import Containment
from .target import containment_for
from ..fs.reader import ByteProgress
from .managers.registry import MANAGED_KINDS
from ..core.values import Distribution, DriftKind, FileCheck, FileState, MetadataKind, Problem, RecordEntry, Target, Unverifiable
from . import files
from .fast import prehash, smallfiles
from .ownership import Ownership, Row, bytecode_source, is_bytecode, is_virtualenv_style_row
from .roots import root_of

if TYPE_CHECKING:
    from .unowned import UnownedWalk

Progress = Callable[[int, int], None]  # ByteProgress's callback: (bytes done, bytes in all)

_KIND = {
    files.MODIFIED: DriftKind.MODIFIED,
    files.MISSING: DriftKind.MISSING,
    files.TYPE_CHANGED: DriftKind.TYPE_CHANGED,
}


def _access(rows: Sequence[Row]) -> tuple[Sequence[RecordEntry], Callable[[int], str]]:
    """(the entry of each row, row → its absolute path): straight from the ``Ownership`` behind
    ``rows`` (its ``rows`` view makes a tuple per access), or from a plain list of rows."""
    own = getattr(rows, "_own", None)
    if isinstance(own, Ownership):
        return own.entries, own.path
    return [row[1] for row in rows], lambda i: rows[i][2]


def _size_of(rows: Sequence[Row]) -> Callable[[int], int | None]:
    """Row → the size its RECORD gives, read from the columns where there are some."""
    own = getattr(rows, "_own", None)
    if isinstance(own, Ownership):
        return own.size
    return lambda i: rows[i][1].size


class _Pairs:
    """(entry, absolute path) of some rows, made one at a time (for the small-files child)."""

    def __init__(self, entries: Sequence[RecordEntry], path_of: Callable[[int], str], indices: Sequence[int]) -> None:
        self._entries, self._path_of, self._indices = entries, path_of, indices

    def __len__(self) -> int:
        return len(self._indices)

    def __iter__(self) -> Iterator[tuple[RecordEntry, str]]:
        entries, path_of = self._entries, self._path_of
        for i in self._indices:
            yield entries[i], path_of(i)


@dataclass(frozen=True)
class RecordsOutcome:
    checks: list[FileCheck]
    files_checked: int
    unverifiable: list[Unverifiable]
    errors: list[Problem]


def _cache_archives(links: Containment) -> tuple[str, ...]:
    """Where the tools' own symlink modes lead, in each tool directory driftscan knows (as named
    and as resolved): ``<uv cache>/archive-v0/`` (uv ``--link-mode symlink``) and ``<virtualenv
    app-data>/wheel/`` (``--symlink-app-data``). The tree's own say (a path that merely has an
    ``archive-v0`` in it) counts for nothing."""
    roots = [*links.link_roots, *(os.path.realpath(r) for r in links.link_roots)]
    return tuple(dict.fromkeys(os.path.join(r, sub) + os.sep for r in roots for sub in ("archive-v0", "wheel")))



def presence_only(rows: Sequence[Row], owners: Container[str]) -> list[bool]:
    """Rows checked by presence alone: no hash to compare, egg-info lists, and bytecode of an owned
    source (derived data: Python rewrites it at will, even a wheel-shipped .pyc, docs/installers.md §6a)."""
    flags: list[bool] = []
    append = flags.append
    own = getattr(rows, "_own", None)
    if isinstance(own, Ownership):  # from the columns: without a (dist, entry, path) tuple per row
        egg = [d.kind is MetadataKind.EGG_INFO for d in own.dists]
        for i, (number, table, j) in enumerate(own.columns()):
            if not table.kinds[j] or egg[number]:
                append(True)
            elif table.paths[j].endswith((".pyc", ".pyo")):
                source = bytecode_source(own.path(i))
                append(source is not None and source in owners)
            else:
                append(False)
        return flags
    for dist, entry, path in rows:
        if entry.hash is None or dist.kind is MetadataKind.EGG_INFO:
            append(True)
        elif path.endswith((".pyc", ".pyo")):
            source = bytecode_source(path)
            append(source is not None and source in owners)
        else:
            append(False)
    return flags


def _stat_pass(rows: Sequence[Row], presence: list[bool], cache: DigestCache | None, links: Containment | None = None,
               settled: Sequence[int] = ()) -> tuple[list[files.EntryResult | None], Sequence[int]]:
    """Settle, one lstat per file at most, the files the stat cache knows unchanged. Rows the cache
    knows nothing of go straight to hashing, unstat'ed (the hashing path opens and fstat's them
    anyway). Presence-only rows are left to ``_presence_pass``. Anything unusual goes through
    ``check_entry``, which knows every case (symlinks, types, sizes, errors).
    A signature the cache knows settles a row without reading anything, wherever it is; every
    row that is read goes through ``Containment.row_problem`` first (in quick_check/check_entry).
    ``settled``: rows known missing already (their directory is gone), left alone.
    Returns (results, rows to hash)."""
    lstat, is_reg, pack = os.lstat, stat.S_ISREG, SIGNATURE.pack
    plain_ok, check = files._PLAIN_OK, _check
    known = cache.entries if cache is not None else {}
    entries, path_of = _access(rows)
    results: list[files.EntryResult | None] = [None] * len(entries)
    for i in settled:
        results[i] = ABSENT
    if not known:  # a cold audit: every row with content goes to hashing, no path needed
        # (row numbers in an array: a list of 26,000 int objects is 1 MB more at the hashing peak)
        pending = array("I", compress(range(len(presence)), map(operator.not_, presence)))
        if settled:
            pending = array("I", (i for i in pending if results[i] is None))
        if cache is not None:
            cache.misses += len(pending)
        return results, pending
    pending = array("I")
    sha256_tag = tag("sha256", b"")
    for i, entry in enumerate(entries):
        if presence[i] or results[i] is not None:
            continue
        path = path_of(i)
        cached = known.get(path)
        if cached is None:
            pending.append(i)
            continue
        try:
            st = lstat(path)
        except OSError:
            results[i] = check(path, entry, False, cache, read=False, links=links)
            continue
        digest = entry.hash
        assert digest is not None  # a row not checked by presence alone has a hash (presence_only)
        try:  # signature() and tag(), inlined: this loop runs once per file of a warm audit
            expected = pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev) + (
                sha256_tag if digest.algorithm == "sha256" else tag(digest.algorithm, b"")) + digest.digest
        except struct.error:
            expected = b""
        if is_reg(st.st_mode) and (entry.size is None or entry.size == st.st_size) and cached == expected:
            results[i] = plain_ok
            continue
        # A symlink (the cache knows its target's signature), another size, an edit...
        result = check(path, entry, False, cache, read=False, links=links, st=st)
        if result is None:
            pending.append(i)
        else:
            results[i] = result
    if cache is not None:
        # hits: rows whose content was settled without reading it; misses: rows to hash
        cache.hits += presence.count(False) - len(pending)
        cache.misses += len(pending)
    return results, pending


def _presence_pass(rows: Sequence[Row], presence: list[bool], results: list[files.EntryResult | None], unseen: list[int],
                   cache: DigestCache | None,
                   links: Containment | None = None) -> None:
    """Presence-only rows: those the directory walk saw as regular files are there; the rest
    (``unseen``: symlinks, other types, missing, outside the walked roots) get an lstat and, if
    odd, the full check. A hard link count only matters for a drift (uv's cache): an ok file is ok."""
    lstat, is_reg = os.lstat, stat.S_ISREG
    plain_ok, check = files._PLAIN_OK, _check
    entries, path_of = _access(rows)
    for i, flag in enumerate(presence):
        if flag and results[i] is None:
            results[i] = plain_ok
    for i in unseen:
        if results[i] is ABSENT:
            continue
        entry, path = entries[i], path_of(i)
        try:
            st = lstat(path)
        except OSError:
            results[i] = check(path, entry, True, cache, read=False, links=links)
            continue
        if not is_reg(st.st_mode):
            results[i] = check(path, entry, True, cache, links=links, st=st)


class _TwoEnds:
    """Work sorted by size, taken from both ends: the calling thread takes batches of small files,
    the helper threads the large ones. Large files are hashed with the GIL released for a whole
    buffer, so they run beside the small files' Python work instead of queueing behind it; the
    two sides meet wherever the sizes make them. A batch stops at ``BATCH_FILES`` files or
    ``BATCH_BYTES`` bytes, so neither side runs off with the other's share near the end."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = sizes
        self.low, self.high = 0, len(sizes)
        self.lock = threading.Lock()

    def take_low(self) -> range:
        with self.lock:
            start = end = self.low
            budget = BATCH_BYTES
            while end < self.high and end - start < BATCH_FILES and budget > 0:
                budget -= self.sizes[end]
                end += 1
            self.low = end
            return range(start, end)

    def take_high(self) -> range:
        """Large files only: two threads both doing small files would pass the GIL back and forth
        at every system call (measured: open/read/close at ~25 µs each instead of ~2 µs, a
        50,000-small-file audit 3.5 s instead of ~1 s). The small ones stay with the caller."""
        with self.lock:
            start = end = self.high
            budget = BATCH_BYTES
            while start > self.low and end - start < BATCH_FILES and budget > 0 \
                    and self.sizes[start - 1] >= HELPER_MIN:
                start -= 1
                budget -= self.sizes[start]
            self.high = start
            return range(start, end)


# A row whose directory is gone: missing, settled without a look of its own and without an
# EntryResult of its own (a RECORD of a million rows under a deleted directory holds one object).
ABSENT = files.EntryResult(files.MISSING, {})

def _check(path: str, entry: RecordEntry, presence_only: bool = False, cache: DigestCache | None = None,
           **kwargs: Any) -> files.EntryResult | None:
    """``files.check_entry``, with a plainly missing file (no such path) as the shared ``ABSENT``:
    a million missing rows hold one object, not a million results with their expectations
    (``verify_records`` makes those only for the drifts it reports file by file)."""
    result = files.check_entry(path, entry, presence_only, cache, **kwargs)
    if result is not None and result.status == files.MISSING and not result.actual and result.link_target is None:
        return ABSENT
    return result


BATCH_FILES = 64
BATCH_BYTES = 1 << 20
HELPER_MIN = 256 << 10  # bytes; see take_high


def _hash_pending(rows: Sequence[Row], presence: list[bool], pending: Sequence[int], results: list[files.EntryResult | None],
                  jobs: int, cache: DigestCache | None, progress: Progress | None, links: Containment | None = None,
                  walk: UnownedWalk | None = None) -> None:
    quick, check = files.quick_check, _check
    entries, path_of = _access(rows)
    size_of = _size_of(rows)

    def size_key(i: int) -> int:
        return size_of(i) or 0

    # Arrays, not lists of int objects: they are held through the hashing, the audit's memory peak.
    order = array("I", sorted(pending, key=size_key))
    sizes = array("Q", map(size_key, order))
    meter = ByteProgress(progress, sum(sizes))
    # Too many small files for this thread alone (no large ones to balance them): a forked child
    # takes a share. Forked before any helper thread exists.
    child, theirs = None, array("I")
    start, stop = smallfiles.child_share(sizes, HELPER_MIN, jobs)
    if stop > start:
        theirs = order[start:stop]
        child = smallfiles.SmallFilesChild(_Pairs(entries, path_of, theirs), links, walk, theirs,
                                           record=cache is not None)
        if child.started:
            order, sizes = order[:start] + order[stop:], sizes[:start] + sizes[stop:]
        else:
            child, theirs = None, array("I")
    try:
        _share(rows, presence, order, sizes, results, jobs, cache, meter, links, walk)
    except BaseException:
        if child is not None:
            child.abandon()
        raise
    if child is not None:
        matched, earned = child.collect()
        if cache is not None:
            cache.merge(earned)
        for k, i in enumerate(theirs):
            if matched[k]:
                results[i] = files._PLAIN_OK
            else:  # a mismatch, an oddity, or a failed child: checked here, which describes it
                entry, path = entries[i], path_of(i)
                results[i] = quick(path, entry, cache, links=links) or \
                    check(path, entry, presence[i], cache, lookup=False, links=links)
        meter.add(sum(size_of(i) or 0 for i in theirs))


def _share(rows: Sequence[Row], presence: list[bool], order: Sequence[int], sizes: Sequence[int],
           results: list[files.EntryResult | None], jobs: int, cache: DigestCache | None, meter: ByteProgress,
           links: Containment | None = None, walk: UnownedWalk | None = None) -> None:
    """``order`` (sizes ascending) between this thread, from the small end, and helper threads.

    The type of a file must be known before it is opened (a device node is never opened): an
    lstat each, until the unowned-file walk (beside this, in a child) has answered; its directory
    listing then says which rows are regular files reached without leaving the roots, and this
    thread opens those without an lstat or a containment check of its own."""
    quick, check = files.quick_check, _check
    entries, path_of = _access(rows)
    work = _TwoEnds(sizes)
    typed: bytes | None = None  # walk.typed(), once the walk has answered

    def settle(span: range, typed: bytes | None = None) -> None:
        for k in span:
            i = order[k]
            entry, path = entries[i], path_of(i)
            if typed is not None and typed[i]:
                results[i] = quick(path, entry, cache, regular=True) or \
                    check(path, entry, presence[i], cache, lookup=False, links=links)
            else:
                results[i] = quick(path, entry, cache, links=links) or \
                    check(path, entry, presence[i], cache, lookup=False, links=links)
        meter.add(sum(sizes[span.start:span.stop]))

    def settle_mine(span: range) -> None:
        nonlocal typed
        if typed is None and walk is not None:
            typed = walk.typed()
        settle(span, typed)

    def helper() -> None:
        while span := work.take_high():
            settle(span)

    helpers = min(jobs - 1, len(order) // BATCH_FILES + 1) if jobs > 1 else 0
    if not helpers:
        while span := work.take_low():
            settle_mine(span)
        return
    failures: list[BaseException] = []

    def guarded() -> None:
        try:
            helper()
        except BaseException as exc:  # re-raised below: a bug in a helper must not pass for a clean audit
            failures.append(exc)

    # Plain threads: concurrent.futures would cost its import (and logging's) at every start-up.
    threads = [threading.Thread(target=guarded, name=f"driftscan-hash-{n}", daemon=True) for n in range(helpers)]
    for thread in threads:
        thread.start()
    while span := work.take_low():
        settle_mine(span)
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def _settle_prehashed(rows: Sequence[Row], pending: Sequence[int], done: dict[str, tuple[bytes, str, bytes, int]],
                      cache: DigestCache | None, results: list[files.EntryResult | None]) -> Sequence[int]:
    """Rows a ``Prehasher`` child hashed, if the file is still as the child read it; the rest."""
    rest = array("I")
    entries, path_of = _access(rows)
    for i in pending:
        entry, path = entries[i], path_of(i)
        found = done.get(path)
        if found is not None:
            expected = entry.hash
            assert expected is not None  # a pending row has a hash (presence_only)
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            digest = prehash.usable(st, found, expected.algorithm) if st is not None else None
            if digest is not None and st is not None and stat.S_ISREG(st.st_mode) and digest == expected.digest \
                    and (entry.size is None or entry.size == st.st_size):
                results[i] = files._PLAIN_OK
                if cache is not None:
                    cache.store(path, st, expected.algorithm, digest, found[3])
                continue
        rest.append(i)  # not hashed, changed since, or a drift: hashed here, which describes it
    return rest


def _run(rows: Sequence[Row], presence: list[bool], jobs: int, cache: DigestCache | None,
         progress: Progress | None = None, walk: UnownedWalk | None = None,
         early: prehash.Prehasher | None = None, links: Containment | None = None) -> list[files.EntryResult]:
    """Check every row: the stat-cache pass, what the ``early`` child hashed meanwhile, the files
    left to hash (from both ends), then the presence-only rows, which wait for the walk (running
    meanwhile in a child, where it can)."""
    own = getattr(rows, "_own", None)
    gone = own.rows_in_absent_directories(links) if isinstance(own, Ownership) else ()
    results, pending = _stat_pass(rows, presence, cache, links, gone)
    busy: Sequence[int] = []
    if early is not None:
        done, in_progress = early.take()
        path_of = _access(rows)[1]
        busy = [i for i in pending if path_of(i) == in_progress] if in_progress is not None else []
        pending = _settle_prehashed(rows, array("I", (i for i in pending if i not in busy)) if busy else pending,
                                    done, cache, results)
    _hash_pending(rows, presence, pending, results, jobs, cache, progress, links, walk)  # the walk goes on meanwhile
    if early is not None:
        left = _settle_prehashed(rows, busy, early.finish(), cache, results)
        _hash_pending(rows, presence, left, results, jobs, cache, None, links)  # only if the child failed
    unseen = walk.unseen_presence_rows() if walk is not None else [i for i, flag in enumerate(presence) if flag]
    _presence_pass(rows, presence, results, unseen, cache, links)
    return results  # type: ignore[return-value]  # the passes above settle every row: no None is left


def _not_drift(entry: RecordEntry, path: str, result: files.EntryResult) -> bool:
    if result.status != files.MISSING:
        return False
    # Missing bytecode is regenerated on import; virtualenv lists rows that never exist.
    return is_bytecode(path) or (entry.hash is None and is_virtualenv_style_row(entry.path))


def verify_records(target: Target, metadirs: list[MetadataDir], own: Ownership, jobs: int,
                   cache: DigestCache | None = None, progress: Progress | None = None,
                   presence: list[bool] | None = None, walk: UnownedWalk | None = None, early: prehash.Prehasher | None = None,
                   containment: Containment | None = None) -> RecordsOutcome:
    """``presence``: ``presence_only(own.rows, own.owners)``, if already computed; ``walk``: an
    ``UnownedWalk`` that tells which presence-only rows need a stat (default: all of them);
    ``early``: a ``Prehasher`` started before the RECORDs were read (finished here);
    ``containment``: where files may be read and symlinks followed (default: the target's roots)."""
    rows = own.rows
    if presence is None:
        presence = presence_only(rows, own.owners)
    if containment is None:
        containment = containment_for(target)
    results = _run(rows, presence, jobs, cache, progress, walk, early, containment)
    if cache is not None:
        cache.retain(own.owners)
    shared = own.shared_rows()
    plain_ok = files._PLAIN_OK
    archives = _cache_archives(containment)
    errors: list[Problem] = []
    refused: dict[str, list[str]] = {}
    raw: dict[str, list[tuple[Distribution, files.EntryResult]]] = defaultdict(list)
    grouped, gone_checks = _missing_directories(target, own, results)
    for i, result in enumerate(results):
        if result is plain_ok and i not in shared:
            continue  # the common case: nothing to resolve
        if grouped and grouped[i]:
            continue  # one drift for its whole directory
        dist, entry, path = own.dist(i), own.entries[i], own.path(i)
        if result is ABSENT:
            result = files.EntryResult(files.MISSING, files.expected_of(entry))
        if result.status == files.ERROR:
            if result.refused:  # outside the environment: one error per reason, not per row
                refused.setdefault(result.message, []).append(path)
            else:
                errors.append(Problem(path, result.message))
            continue
        if _not_drift(entry, path, result):
            continue
        if result.link_target is not None and result.status in (files.OK, files.MODIFIED):
            if not (archives and (result.resolved or "").startswith(archives)):
                result = files.EntryResult(
                    files.TYPE_CHANGED,
                    files.expected_of(entry),
                    {"type": "symlink", "target": result.link_target, "content_matches": result.status == files.OK},
                    link_target=result.link_target,
                )
        raw[path].append((dist, result))
    checked = len(rows) - len(errors) - sum(len(paths) for paths in refused.values())
    for why, paths in refused.items():
        errors.append(Problem(paths[0], why if len(paths) == 1 else f"{why} ({len(paths)} RECORD rows not checked)"))

    checks_by_dist: dict[str, list[FileCheck]] = defaultdict(list)
    for check in gone_checks:
        owner = check.distribution
        assert owner is not None  # a group of missing rows is one distribution's
        checks_by_dist[owner.metadata_dir].append(check)
    for path, pairs in raw.items():
        winners = [d for d, r in pairs if r.status == files.OK]
        for dist, result in pairs:
            if result.status == files.OK:
                continue
            kind = _KIND[result.status]
            evidence = ""
            if kind is DriftKind.MODIFIED and winners:
                kind = DriftKind.CLOBBERED
                evidence = "also installed by " + ", ".join(w.key for w in winners) + ", whose copy is on disk"
            elif result.message:
                evidence = result.message
            checks_by_dist[dist.metadata_dir].append(
                FileCheck(kind, path, root_of(target, path), dist, result.expected, result.actual, evidence)
            )

    checks: list[FileCheck] = []
    unverifiable: list[Unverifiable] = []
    for md in metadirs:
        if md.distribution is None:
            continue
        found = checks_by_dist.get(md.distribution.metadata_dir, [])
        reason = _unverifiable_reason(md, md.distribution, found)
        if reason:
            unverifiable.append(Unverifiable(md.distribution.key, reason))
        elif found and md.distribution.kind is MetadataKind.DIST_INFO and md.distribution.installer \
                and not trusted_installer(md.distribution):
            checks.extend(_vouched_by_rows(md.distribution, found))
        else:
            checks.extend(found)
    return RecordsOutcome(checks, checked, unverifiable, errors)


# At least this many missing files a RECORD lists under one directory that is gone (or in one
# directory that is there) are one drift:
# a deleted ``torch/`` reads as one line, not 15,000, and a million such rows cost a pass, not a
# million drifts with evidence and remedy each.
GROUP_MIN = 100
LISTED_MAX = 100  # of a missing directory's files, the first this many (sorted) are named in the drift


def _top_gone(directory: str, root: str, memo: dict[str, str | None]) -> str | None:
    """The topmost directory from ``directory`` up to (not including) ``root`` that does not
    exist, or None if ``directory`` exists (or is not below ``root``). One lstat per directory."""
    chain: list[str] = []
    top: str | None = None
    current = directory
    prefix = root.rstrip(os.sep) + os.sep
    while current.startswith(prefix) and len(current) > len(prefix):
        if current in memo:
            known = memo[current]
            top = known if known is not None else (chain[-1] if chain else None)
            break
        try:
            os.lstat(current)
        except FileNotFoundError:
            chain.append(current)
            current = os.path.dirname(current)
            continue
        except OSError:
            pass
        memo[current] = None
        top = chain[-1] if chain else None
        break
    else:
        top = chain[-1] if chain else None
    for gone in chain:
        memo[gone] = top
    return top


def _missing_directories(target: Target, own: Ownership, results: Sequence[files.EntryResult]) -> tuple[bytearray | None, list[FileCheck]]:
    """Missing rows grouped, per distribution, by the topmost directory above them that is gone
    (else by their own directory, which is there); a group of ``GROUP_MIN`` or more becomes one
    MISSING_DIRECTORY (or MISSING_FILES) check. Returns (a flag per row
    that a group took, those checks); (None, []) when none did. Rows are told apart by their
    RECORD path (one lookup per directory a RECORD names, not one path per row)."""
    memo: dict[str, str | None] = {}
    tops: dict[tuple[int, str], tuple[str, bool]] = {}  # (distribution, RECORD directory) → (group, gone)
    groups: dict[tuple[int, str, bool], array[int]] = {}
    missing, plain_ok = files.MISSING, files._PLAIN_OK
    for i, result in enumerate(results):
        if result is plain_ok or (result is not ABSENT and result.status != missing):
            continue
        rel = own.record_path(i)
        if is_bytecode(rel) or (is_virtualenv_style_row(rel) and own.hash(i) is None):
            continue  # not a drift (_not_drift)
        k = own.dist_number(i)
        key = (k, rel.rpartition("/")[0])
        where = tops.get(key)
        if where is None:
            path = own.path(i)
            directory = os.path.dirname(path)
            top = _top_gone(directory, root_of(target, path), memo)
            where = tops[key] = (top, True) if top is not None else (directory, False)
        groups.setdefault((k, *where), array("I")).append(i)
    big = {key: rows for key, rows in groups.items() if len(rows) >= GROUP_MIN}
    if not big:
        return None, []
    grouped = bytearray(len(results))
    checks = []
    for (_, directory, gone), rows in sorted(big.items(), key=lambda item: item[0][1]):
        for i in rows:
            grouped[i] = 1
        root = root_of(target, directory)
        cut = len(root.rstrip(os.sep)) + 1
        listed = heapq.nsmallest(LISTED_MAX, (own.path(i)[cut:] for i in rows))  # every path is below it
        dist = own.dist(rows[0])
        expected: FileState = {"type": "directory", "files": len(rows), "listed": listed}
        if gone:
            checks.append(FileCheck(DriftKind.MISSING_DIRECTORY, directory, root, dist, expected, {},
                                    f"the directory is gone with the {len(rows)} files {dist.name}'s RECORD lists "
                                    "under it"))
        else:
            checks.append(FileCheck(DriftKind.MISSING_FILES, directory, root, dist, expected, {"type": "directory"},
                                    f"{len(rows)} files {dist.name}'s RECORD lists in this directory are missing; "
                                    "the directory is there"))
    return grouped, checks


def _vouched_by_rows(dist: Distribution, found: list[FileCheck]) -> list[FileCheck]:
    """Drifts of a distribution whose installer driftscan does not know, saying why they count."""
    hashed = sum(1 for e in dist.entries if e.hash is not None)
    who = f"installed by {dist.installer!r}"
    note = (f"{who}, not an installer driftscan knows; {hashed - len(found)} of its {hashed} hashed RECORD rows "
            "match, so the RECORD describes this install")
    return [replace(c, evidence=f"{c.evidence}; {note}" if c.evidence else note) for c in found]


def _describes(dist: Distribution, found: list[FileCheck]) -> bool:
    """Whether a RECORD no known installer vouches for still describes the install: most of its
    hashed rows match the files (a changed row among them is a drift like any other), rather
    than most not (a RECORD of some other build of the files: nothing in it can be trusted)."""
    if not dist.installer:  # Debian-style: its packaging strips and moves files after RECORD was written
        return False
    hashed = sum(1 for e in dist.entries if e.hash is not None)
    return hashed >= 2 and 2 * len(found) <= hashed


def _unverifiable_reason(md: MetadataDir, dist: Distribution, found: list[FileCheck]) -> str | None:
    if dist.kind in MANAGED_KINDS:
        return None  # the package manager's own record of what it installed
    if dist.kind is MetadataKind.EGG_INFO:
        if not md.has_file_list:
            return "egg-info without installed-files.txt: no list of installed files to check"
        return None
    if not md.has_file_list:
        return "RECORD could not be read"
    if trusted_installer(dist) or not found or _describes(dist, found):
        return None
    hex_rows = any(e.hash is not None and e.hash.encoding == "hex" for e in dist.entries)
    counts: defaultdict[str, int] = defaultdict(int)
    for check in found:
        counts[check.kind.value] += 1
    detail = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    who = f"installer {dist.installer!r}" if dist.installer else "no INSTALLER (Debian-style)"
    extra = "; nonstandard RECORD (hex digests)" if hex_rows else ""
    return f"{who} and its RECORD does not describe the installed files ({detail}){extra}"

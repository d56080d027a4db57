"""The diff index: what a warm ``driftscan diff`` needs to know that a tree's listing is the one
an earlier diff walked, and which of its files the snapshot's signatures settle, without listing
a directory or running Python code per file.

Written by a diff that trusts signatures (not ``--no-cache``) after a full walk of a root that
had no walk problems, for a snapshot file older than the racy window (``Manifest.identity``):

- every directory the walk listed, with its signature (mtime_ns, ctime_ns, inode, device,
  st_mode) taken before it was listed, each older than the walk's start by more than
  ``RACY_NS``: a file added, removed, renamed or replaced, a directory made or removed, changes
  its directory's mtime and ctime (POSIX requires it of ``open`` with ``O_CREAT``, ``unlink``,
  ``rename``, ``mkdir``, ``rmdir``; a mount over a directory changes its inode and device). If
  every one matches, the walk would list the same entries, of the same types;
- every walked file that ``Manifest.trusted`` settled, with the signature it had (size,
  mtime_ns, ctime_ns, st_mode: its manifest entry's, as trust requires): one that has it again
  is trusted by the very same rule, for the same manifest (the index names the snapshot file by
  path, size, mtime, ctime, inode and device, and its ``started_ns``);
- every other walked entry (racy, a symlink, a large file, an added one...), which is lstat'ed
  and compared as any walk's entry would be.

A warm diff stats each directory and lstats each file, comparing whole lists of signatures in
C (``map`` and ``array`` comparisons); if any directory differs, or a file vanished, it walks as
before. A file whose signature differs is compared as the walk would have it: hashed, or
reported. The index lives in the user cache directory, checksummed; anything amiss is a miss.
"""

from __future__ import annotations

import marshal
import operator
import os
import sys
from array import array
from itertools import chain
from collections.abc import Callable
from typing import NamedTuple

import xxhash

from ..caches.keys import cache_key
from ..caches.location import write_cache_file
from ..caches.racy import settled
from ..caches.statcache import user_cache_dir
from ..formats.manifest import Manifest
from ..fs.helpers import Child, Tokens, may_fork

FORMAT = b"driftscan-diff-index-3\n"  # 3: the manifest's entries the walk did not find
MAX_INDEX = 1 << 30

DIR_SIGNATURE = operator.attrgetter("st_mtime_ns", "st_ctime_ns", "st_ino", "st_dev", "st_mode")
FILE_SIGNATURE = operator.attrgetter("st_size", "st_mtime_ns", "st_ctime_ns", "st_mode")


def dir_signature(st: os.stat_result) -> tuple[int, ...]:
    return DIR_SIGNATURE(st)


class TreeIndex:
    """A loaded index: directories (relative prefixes, "" the root, "a/b/" below), their
    signatures, the trusted files and their signatures (four ``q`` values each), the others,
    and the manifest's entries the walk did not find (``missing``)."""

    __slots__ = ("consistency", "dir_sigs", "dirs", "missing", "others", "trusted", "trusted_sigs")

    def __init__(self, dirs: list[str], dir_sigs: list[tuple[int, ...]], trusted: list[str], trusted_sigs: array[int],
                 others: list[str], consistency: bool, missing: list[str]) -> None:
        self.dirs, self.dir_sigs, self.trusted, self.trusted_sigs = dirs, dir_sigs, trusted, trusted_sigs
        self.others, self.consistency, self.missing = others, consistency, missing


class Walked(NamedTuple):
    """``walk``'s answer: how many files are still trusted (not listed), and every other entry
    the walk would list, with its lstat (None if it cannot be taken)."""

    trusted: int
    entries: dict[str, os.stat_result | None]


# Whose index a file is: (the snapshot file's identity, root, size limit, the snapshot's start, euid).
_Key = tuple[tuple[str | int, ...], str, int, int, int]


def _key(manifest: Manifest, root: str, limit: int) -> _Key | None:
    if manifest.identity is None or manifest.started_ns is None:
        return None
    return (tuple(manifest.identity), root, limit, manifest.started_ns, os.geteuid() if hasattr(os, "geteuid") else -1)


def _path(key: _Key) -> str:
    name = cache_key(key[0][0], key[0][-1], key[1])[:24]
    return os.path.join(user_cache_dir(), "diffindex", name + ".bin")


def _split(joined: str | None) -> list[str]:
    return joined.split("\0") if joined else []


def load(manifest: Manifest, root: str, limit: int) -> TreeIndex | None:
    """The index written for this very snapshot file, root and size limit, or None."""
    key = _key(manifest, root, limit)
    if key is None:
        return None
    try:
        with open(_path(key), "rb") as f:
            data = f.read(MAX_INDEX + 1)
    except OSError:
        return None
    head = len(FORMAT) + 8
    if not data.startswith(FORMAT) or len(data) > MAX_INDEX or \
            xxhash.xxh3_64_digest(memoryview(data)[head:]) != data[len(FORMAT):head]:
        return None
    try:
        stored, dirs, dir_sigs, trusted, trusted_sigs, others, consistency, missing = \
            marshal.loads(memoryview(data)[head:])
        if stored != key:
            return None
        index = TreeIndex(list(dirs), list(map(tuple, dir_sigs)), _split(trusted), array("q", trusted_sigs),
                          list(others), bool(consistency), list(missing))
        if len(index.dirs) != len(index.dir_sigs) or len(index.trusted_sigs) != 4 * len(index.trusted) \
                or not index.dirs or index.dirs[0] != "":
            return None
        return index
    except Exception:  # noqa: BLE001 - a damaged or foreign cache file is no cache
        return None


def save(manifest: Manifest, root: str, limit: int, dirs: dict[str, tuple[int, ...] | None], walk_started_ns: int,
         trusted: list[str], others: list[str], consistency: bool, missing: list[str]) -> None:
    """Write the index of a full walk (``dirs``: each listed directory's signature, taken before
    listing it), if every directory is older than the walk's start by more than RACY_NS.
    ``missing``: the manifest's entries the walk did not find."""
    key = _key(manifest, root, limit)
    if key is None or "" not in dirs:
        return
    for sig in dirs.values():
        if sig is None or not settled(sig[0], sig[1], walk_started_ns):
            return  # a directory changed within the racy window: its listing is not vouched for
    files = manifest.files
    try:
        sigs = array("q", chain.from_iterable((e.size, e.mtime_ns, e.ctime_ns or 0, e.mode)  # trusted: ctime_ns is set
                                               for e in map(files.__getitem__, trusted)))
        order = sorted(dirs, key=lambda d: (d != "", d.count("/"), d))  # the root first, parents before children
        value = (key, order, [dirs[d] for d in order], "\0".join(trusted), sigs.tobytes(), others,
                 consistency, missing)
        blob = marshal.dumps(value)
        target = _path(key)
        write_cache_file(target, FORMAT + xxhash.xxh3_64_digest(blob) + blob, prefix=".diffindex-", dir_mode=0o700)
    except (OSError, ValueError, TypeError, KeyError, OverflowError):
        pass  # a cache that cannot be written is no cache


SPLIT_MIN_FILES = 8192  # fewer trusted files are lstat'ed in this process alone


def _lstat_all(paths: list[str]) -> list[os.stat_result]:
    lstat = os.lstat  # looked up now: tests count the calls
    return list(map(lstat, paths))


def _mismatches(paths: list[str], want: array[int], offset: int) -> tuple[list[int], list[os.stat_result]]:
    """The indices (from ``offset``) of the files whose signature is not the one in ``want``
    (four values a file), and their lstats. OSError if one cannot be stat'ed."""
    sts = _lstat_all(paths)
    got = array("q", chain.from_iterable(map(FILE_SIGNATURE, sts)))
    if got == want:
        return [], []
    ks = [k for k in range(len(sts)) if got[4 * k:4 * k + 4] != want[4 * k:4 * k + 4]]
    return [offset + k for k in ks], [sts[k] for k in ks]


def _dirs_unchanged(root: str, base: str, dirs: list[str], want: list[tuple[int, ...]]) -> bool:
    """Whether every directory of ``dirs`` (relative prefixes, "" the root) has the signature in
    ``want``. OSError if one cannot be stat'ed."""
    stat = os.stat
    paths = [root if d == "" else base + d for d in dirs]
    return list(map(DIR_SIGNATURE, map(stat, paths))) == want


CHUNK_DIRS = 512  # directories stat'ed a piece of the work
CHUNK_FILES = 1024  # trusted files lstat'ed a piece of the work


def _pieces(index: TreeIndex) -> list[tuple[bool, int, int]]:
    """The work of a walk from the index in pieces, the directories first: (is a directory
    piece, start, end)."""
    dirs, files = len(index.dirs), len(index.trusted)
    per_dir = max(CHUNK_DIRS, -(-dirs // 4000))  # at most ``forked.Tokens.MAX`` pieces in all
    per_file = max(CHUNK_FILES, -(-files // 8000))
    return [(True, k, min(k + per_dir, dirs)) for k in range(0, dirs, per_dir)] + \
        [(False, k, min(k + per_file, files)) for k in range(0, files, per_file)]


def _check(root: str, base: str, index: TreeIndex, pieces: list[tuple[bool, int, int]],
           take: Callable[[], int | None]) -> \
        tuple[list[int], list[os.stat_result]] | None:
    """The pieces ``take()`` hands this process: the trusted files whose signature differs
    (indices, lstats), or None when a directory's signature differs. OSError if an entry
    cannot be stat'ed."""
    changed: list[int] = []
    sts: list[os.stat_result] = []
    while (k := take()) is not None:
        is_dirs, start, end = pieces[k]
        if is_dirs:
            if not _dirs_unchanged(root, base, index.dirs[start:end], index.dir_sigs[start:end]):
                return None
            continue
        more, their_sts = _mismatches(list(map(base.__add__, index.trusted[start:end])),
                                      index.trusted_sigs[4 * start:4 * end], start)
        changed += more
        sts += their_sts
    return changed, sts


def _forked_share(root: str, base: str, index: TreeIndex, pieces: list[tuple[bool, int, int]],
                  tokens: Tokens) -> Child | None:
    """A forked child taking pieces beside this process (``_check``), sending the indices of
    the files that differ (the parent lstats those again), or None for a directory changed or a
    file gone; None where forking is not allowed or it cannot start."""
    if not may_fork():
        return None

    def work(fd: int) -> None:
        try:
            got = _check(root, base, index, pieces, tokens.take)
            answer = None if got is None else got[0]
        except (OSError, ValueError):
            answer = None  # a file vanished: the parent walks
        data = memoryview(marshal.dumps(answer))
        while data:
            data = data[os.write(fd, data):]

    child = Child(work)
    return child if child.started else None


def walk(root: str, index: TreeIndex) -> Walked | None:
    """The walk's answer from the index (``Walked``): the trusted files whose signature is as
    recorded are counted; every other entry the walk would list comes with its lstat. None when
    a directory's signature differs or a trusted file cannot be stat'ed (the caller walks).
    Above ``SPLIT_MIN_FILES`` trusted files, a forked child takes pieces of the work (a stat a
    directory, an lstat a file) beside this process, whichever is free taking the next."""
    base = root.rstrip(os.sep) + os.sep
    pieces = _pieces(index)
    tokens = Tokens(len(pieces))
    try:
        child = _forked_share(root, base, index, pieces, tokens) if len(index.trusted) >= SPLIT_MIN_FILES else None
        try:
            got = _check(root, base, index, pieces, tokens.take)
        except BaseException:
            if child is not None:
                child.kill()
            if isinstance(sys.exc_info()[1], (OSError, ValueError)):
                return None  # a file vanished: the full walk
            raise
    finally:
        tokens.close()
    if got is None:
        if child is not None:
            child.kill()
        return None  # a directory changed: the full walk
    changed, sts = got
    if child is not None:
        answer = child.wait()
        try:
            theirs = marshal.loads(answer) if answer is not None else None
        except (ValueError, EOFError, TypeError):
            theirs = None
        if not isinstance(theirs, list):
            return None  # the child failed, or found a directory changed or a file gone: the full walk
        try:
            sts += _lstat_all([base + index.trusted[k] for k in theirs])
            changed += theirs
        except (OSError, ValueError, IndexError, TypeError):
            return None
    walked: dict[str, os.stat_result | None] = {}
    for k, st in zip(changed, sts):
        walked[index.trusted[k]] = st  # compared as any walked file: trusted again only by Manifest.trusted
    lstat = os.lstat
    for rel in index.others:
        try:
            walked[rel] = lstat(base + rel)
        except (OSError, ValueError):
            walked[rel] = None
    return Walked(len(index.trusted) - len(changed), walked)

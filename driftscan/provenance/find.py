"""The wheel of a distribution whose whole-file sha256 is the expected one.

Every candidate is opened once (a regular file, bounded by pristine's MAX_WHEEL), hashed from that
open descriptor, and handed out as a ZipCopy of the same descriptor: the bytes proven are the bytes
read. A wheel file's digest is remembered in driftscan's user cache by its stat signature, so an
unchanged wheel is not hashed again on the next audit.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Iterable
from typing import Any, BinaryIO

from ..caches.location import user_cache_dir, write_cache_file
from ..caches.racy import settled_stat
from ..core.values import Distribution
from ..fs.reader import read_regular
from ..pristine.base import CHUNK, PristineOptions, SourceKind, error_text
from ..pristine.directurl import wheel_path
from ..pristine.fetch import fetch_candidates
from ..pristine.pipcache import PipCacheIndex, default_pip_cache
from ..pristine.wheel import MAX_WHEEL, ZipCopy, open_file, wheel_members_error
from ..pristine.wheelhouse import Wheelhouse
from .expected import Expected

MEMO_MAX = 4096  # wheel digests remembered


def short(digest: str) -> str:
    return digest[:12] + "…"


class Sources:
    """What ``find_wheel`` looks in, set up once for every distribution of a run: the digest memo
    (loaded once, written once by ``save``), the ``--wheels`` listing and pip's cache index, whose
    refresh walks the whole cache — once per run, not once per distribution."""

    def __init__(self, options: PristineOptions) -> None:
        self.options = options
        self.memo = _Memo()
        self._house: Wheelhouse | None = None
        self._pip: dict[str, PipCacheIndex] = {}

    def wheelhouse(self) -> Wheelhouse:
        if self._house is None:
            self._house = Wheelhouse(self.options.wheels)
        return self._house

    def pip_index(self, where: str) -> PipCacheIndex:
        if where not in self._pip:
            self._pip[where] = PipCacheIndex(where)
        return self._pip[where]

    def save(self) -> None:
        self.memo.save()


def find_wheel(dist: Distribution, expected: Expected, options: PristineOptions, notes: list[str],
               sources: Sources | None = None) -> ZipCopy | None:
    """The wheel of ``dist`` whose file sha256 is ``expected.sha256``, from direct_url.json's file,
    ``--wheels`` directories, pip's HTTP cache, then (only with ``options.fetch``) ``pip download``;
    None when none is. What was tried and each rejection (a digest that differs, a corrupt wheel)
    is appended to ``notes``. The caller closes the copy. ``sources``: shared by the calls of one
    run (the caller saves it); without it, this call's own, saved before it returns."""
    own = sources is None
    looked = Sources(options) if sources is None else sources
    memo = looked.memo
    try:
        path, why = wheel_path(dist.direct_url)
        if path is None:
            notes.append(f"direct_url ({why})")
        elif os.path.realpath(path) != os.path.normpath(path):
            # The tree wrote this path: a symlink it planted is not followed.
            notes.append(f"{SourceKind.DIRECT_URL.label} {path} (rejected: reached through a symlink: not opened)")
        else:
            found = _try(path, SourceKind.DIRECT_URL, dist, expected, notes, memo, follow=False)
            if found is not None:
                return found
        found = _first(_wheelhouse_paths(dist, looked, notes), SourceKind.WHEELS, dist, expected, notes, memo)
        if found is not None:
            return found
        found = _first(_pip_cache_paths(dist, looked, notes), SourceKind.PIP_CACHE, dist, expected, notes, memo,
                       follow=False)
        if found is not None:
            return found
        if not options.fetch:
            notes.append("--fetch (not asked for)")
            return None
        return _fetch(dist, expected, options, notes)
    finally:
        if own:
            looked.save()


def _first(paths: Iterable[str], source: SourceKind, dist: Distribution, expected: Expected, notes: list[str],
           memo: _Memo, follow: bool = True) -> ZipCopy | None:
    for path in paths:
        found = _try(path, source, dist, expected, notes, memo, follow=follow)
        if found is not None:
            return found
    return None


def _wheelhouse_paths(dist: Distribution, sources: Sources, notes: list[str]) -> list[str]:
    options = sources.options
    if not options.wheels:
        notes.append("--wheels (not given)")
        return []
    house = sources.wheelhouse()
    # The digest proves which file it is: tags set aside by name are tried too.
    same, other_tags = house.matching(dist)
    notes.extend(house.problems)
    if not same and not other_tags:
        notes.append(f"--wheels (no {dist.name} {dist.version} wheel in {', '.join(options.wheels)})")
    return same + other_tags


def _pip_cache_paths(dist: Distribution, sources: Sources, notes: list[str]) -> list[str]:
    where = sources.options.pip_cache or default_pip_cache()
    if not where or not os.path.isdir(where):
        notes.append(f"pip's cache ({f'{where}: no such directory' if where else 'none found'})")
        return []
    bodies = sources.pip_index(where).bodies(dist)
    if not bodies:
        notes.append(f"pip's cache {where} (no {dist.name} {dist.version} wheel among its http-v2 bodies)")
    return bodies


def _fetch(dist: Distribution, expected: Expected, options: PristineOptions, notes: list[str]) -> ZipCopy | None:
    workdir = tempfile.mkdtemp(prefix="driftscan-provenance-")
    try:
        candidates = list(fetch_candidates(dist, options.python_version, options.venv, lambda: workdir, notes))
        found = None
        for candidate in candidates:
            if not isinstance(candidate, ZipCopy):
                notes.append(f"--fetch {candidate.path} (rejected: {candidate.reason})")
                continue
            path = candidate.path
            candidate.close()
            if found is None:
                # A download lives in a private directory removed below: no digest remembered;
                # the open descriptor outlives the directory.
                found = _try(path, SourceKind.FETCH, dist, expected, notes, None, follow=False)
                if found is not None:
                    found.origin = candidate.origin
        return found
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _try(path: str, source: SourceKind, dist: Distribution, expected: Expected, notes: list[str],
         memo: _Memo | None, *, follow: bool = True) -> ZipCopy | None:
    """The wheel at ``path`` when its file sha256 is the expected one and it is a readable wheel
    of ``dist``'s release; else None, with why in ``notes``."""
    def reject(why: str) -> None:
        notes.append(f"{source.label} {path} (rejected: {why})")

    try:
        file, size = open_file(path, follow=follow, max_size=MAX_WHEEL)
    except FileNotFoundError:
        notes.append(f"{source.label} ({path} is gone)")
        return None
    except OSError as exc:
        reject(f"not usable: {error_text(exc)}")
        return None
    keep = False
    try:
        digest = _digest(path, file, size, memo)
        if not expected.accepts(digest):
            reject(f"its sha256 {short(digest)} differs from the expected {short(expected.sha256)}")
            return None
        try:
            copy = ZipCopy(source, path, dist, file, size)
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            reject(f"its sha256 is the expected one, but it is {wheel_members_error(exc)}")
            return None
        keep = True  # the copy owns the file from here
        try:
            release = copy.is_release_of(dist)
        except Exception as exc:  # noqa: BLE001 - a corrupt WHEEL member is a reason
            copy.close()
            reject(f"its sha256 is the expected one, but it is {wheel_members_error(exc)}")
            return None
        if not release:
            copy.close()
            reject(f"its sha256 is the expected one, but it is not a wheel of {dist.name} {dist.version} "
                   "with the installed tags")
            return None
        return copy
    except OSError as exc:
        reject(f"unreadable: {error_text(exc)}")
        return None
    finally:
        if not keep:
            file.close()


def _digest(path: str, file: BinaryIO, size: int, memo: _Memo | None) -> str:
    st = os.fstat(file.fileno())
    signature = _signature(st)
    if memo is not None:
        known = memo.get(path, signature)
        if known is not None:
            return known
    started = time.time_ns()
    hasher = hashlib.sha256()
    file.seek(0)
    left = size  # fstat's size: a file that grows while it is read is not followed
    while left > 0 and (chunk := file.read(min(CHUNK, left))):
        left -= len(chunk)
        hasher.update(chunk)
    digest = hasher.hexdigest()
    if memo is not None and not left and settled_stat(st, started):
        memo.put(path, signature, digest)
    return digest


def _signature(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_dev}:{st.st_ctime_ns}"


def memo_path() -> str:
    return os.path.join(user_cache_dir(), "provenance", "wheel-digests.json")


class _Memo:
    """Wheel digests by path and stat signature (size, mtime, inode, device, ctime): the same
    trust as the stat cache gives a file (docs/performance.md). Loaded on first use, written once."""

    def __init__(self) -> None:
        self._rows: dict[str, Any] | None = None
        self._dirty = False

    def _load(self) -> dict[str, Any]:
        if self._rows is None:
            try:
                rows = json.loads(read_regular(memo_path(), 16 << 20, what="cache"))
            except (OSError, ValueError, RecursionError):
                rows = {}
            self._rows = rows if isinstance(rows, dict) else {}
        return self._rows

    def get(self, path: str, signature: str) -> str | None:
        row = self._load().get(path)
        if not isinstance(row, dict) or row.get("signature") != signature:
            return None
        digest = row.get("sha256")
        return digest if isinstance(digest, str) else None

    def put(self, path: str, signature: str, digest: str) -> None:
        rows = self._load()
        rows.pop(path, None)  # re-inserted last: the newest are kept
        rows[path] = {"signature": signature, "sha256": digest}
        self._dirty = True

    def save(self) -> None:
        if not self._dirty or self._rows is None:
            return
        rows = self._rows
        if len(rows) > MEMO_MAX:
            rows = dict(list(rows.items())[-MEMO_MAX:])
        write_cache_file(memo_path(), json.dumps(rows).encode(), prefix=".memo-")  # unwritten: it only costs time
        self._dirty = False

"""Originals reapply found and verified, kept in driftscan's user cache for later runs.

A checkpoint taken without an original of a file (no ``--wheels``, uv's cache copy edited through
a hard link) can still be re-applied when the original is found later: the installed file when it
is the very original (its RECORD hash is the checkpoint's ``hash_before``), or the member of a
wheel of the checkpoint's distribution and version (``--wheels DIR``, or ``--fetch``: ``pip
download``). Every byte is checked against ``hash_before`` before it is used or kept; kept copies
live under ``<user cache>/originals/<algorithm>-<hex digest>`` (content-addressed: the name is the
verified digest) and are checked again each time they are read. Never in the environment.

A checkpoint keeps the originals it saves the same way, and the store is one more source of
``find_pristine`` (``KeptCopy``, after the caches and before ``--fetch``): an audit without
``--wheels`` still has the originals an earlier checkpoint verified. Beside each kept file,
``<name>.from`` says where it was first found (a label only: the bytes are what is verified).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from typing import BinaryIO

from ..caches.location import below_cache, user_cache_dir, write_cache_file
from ..core.values import Distribution, Hash, RecordEntry, SourceKind
from ..formats.record import new_hash, parse_hash
from ..fs.confined import open_dir, parts_of, read_below
from ..fs.paths import printable
from .base import PristineCopy, Rejected
from . import fetch  # called through the module: a test may stand in for fetch_candidates
from .wheel import open_wheel
from .wheelhouse import Wheelhouse

READ_MAX = 64 << 20
FROM_MAX = 4096  # a ``.from`` label longer than this is not shown
_READ = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _hash(hash_before: str | None) -> Hash | None:
    if not hash_before:
        return None
    try:
        return parse_hash(hash_before, allow_hex=True)
    except ValueError:
        return None


def matches(hash_before: str | None, data: bytes) -> bool:
    """``data`` is the content ``hash_before`` (``algorithm=digest``, RECORD's spelling) promises."""
    h = _hash(hash_before)
    if h is None:
        return False
    try:
        return new_hash(h.algorithm, data).digest() == h.digest
    except ValueError:
        return False


def store_dir() -> str:
    return os.path.join(user_cache_dir(), "originals")


def _path_of(h: Hash) -> str:
    return os.path.join(store_dir(), f"{h.algorithm}-{h.digest.hex()}")


def kept_path(hash_before: str | None) -> str | None:
    h = _hash(hash_before)
    return None if h is None else _path_of(h)


def kept(hash_before: str | None) -> bytes | None:
    """The kept original for that digest, verified again; None when there is none (or it no
    longer matches: a damaged or forged cache entry is not used)."""
    path = kept_path(hash_before)
    if path is None:
        return None
    try:
        data = read_below(*below_cache(path), READ_MAX)  # nothing below the cache directory followed
    except (OSError, ValueError):
        return None
    return data if matches(hash_before, data) else None


def keep(hash_before: str | None, data: bytes, found_in: str | None = None) -> bool:
    """Keep ``data`` as the original ``hash_before`` names, if it is (True when kept);
    ``found_in``: where it was found, said when the store later gives it."""
    path = kept_path(hash_before)
    if path is None or not matches(hash_before, data):
        return False
    if kept(hash_before) is None:
        write_cache_file(path, data, prefix=".original-")
        if kept(hash_before) is None:
            return False
    if found_in and _found_in(path) is None:
        write_cache_file(path + ".from", " ".join(found_in.split()).encode("utf-8")[:FROM_MAX], prefix=".original-")
    return True


def _found_in(path: str) -> str | None:
    try:
        text = read_below(*below_cache(path + ".from"), FROM_MAX).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    return printable(" ".join(text.split())) or None  # a cache file's text: shown, never acted on


class KeptCopy(PristineCopy):
    """A distribution's originals from driftscan's kept store: each row's file is named by the
    digest RECORD gives it, and its bytes are verified as any source's are (a kept file edited or
    damaged in the cache is rejected, with why)."""

    def __init__(self, distribution: Distribution) -> None:
        super().__init__(SourceKind.KEPT, store_dir(), distribution)

    def _where(self, entry: RecordEntry) -> tuple[str, str] | None:
        if entry.hash is None:
            return None
        return below_cache(_path_of(entry.hash))

    def has(self, entry: RecordEntry) -> bool:
        where = self._where(entry)
        if where is None:
            return False
        try:
            parent = open_dir(where[0], parts_of(where[1])[:-1])
        except (OSError, ValueError):
            return False
        try:
            os.stat(parts_of(where[1])[-1], dir_fd=parent, follow_symlinks=False)
        except OSError:
            return False
        finally:
            os.close(parent)
        return True

    def _open(self, entry: RecordEntry) -> tuple[BinaryIO, int | None] | None:
        where = self._where(entry)
        if where is None or not self.has(entry):
            return None
        parts = parts_of(where[1])
        parent = open_dir(where[0], parts[:-1])  # nothing below the cache directory followed
        try:
            fd = os.open(parts[-1], _READ, dir_fd=parent)
        finally:
            os.close(parent)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise OSError(f"{parts[-1]}: not a regular file")
        return os.fdopen(fd, "rb"), st.st_size

    def explain(self, entry: RecordEntry, why: str) -> str:
        if not self.has(entry):
            return f"{entry.path}: {why}"
        where = self._where(entry)
        name = os.path.join(*where) if where else self.path
        return f"{entry.path}: the kept copy {name} is edited or damaged ({why}): not used"

    def found_in(self, entries: Sequence[RecordEntry]) -> list[str]:
        """Where the kept files of ``entries`` were first found (each place once)."""
        places: dict[str, None] = {}
        for entry in entries:
            if entry.hash is not None:
                label = _found_in(_path_of(entry.hash))
                if label:
                    places[label] = None
        return list(places)


def kept_candidate(dist: Distribution, wanted: Sequence[RecordEntry], notes: list[str]) -> KeptCopy | None:
    """The kept store as a source for ``dist``, when it holds a file of one of ``wanted``."""
    copy = KeptCopy(dist)
    held = [e for e in wanted if copy.has(e)]
    if not held:
        notes.append(f"{SourceKind.KEPT.label} {copy.path} (none of its files kept)")
        return None
    places = copy.found_in(held)
    shown = "; ".join(places[:3]) + (f" and {len(places) - 3} more" if len(places) > 3 else "")
    copy.note = "kept by driftscan, first found in " + (shown if places else "a place not recorded")
    return copy


class OriginalFinder:
    """Originals of a checkpoint's releases from ``--wheels`` dirs and (``fetch``) downloads: each
    release is looked for once per run (one ``pip download``, however many of its files are
    wanted), the wheels found are reopened for the next file, and the downloads are removed on
    ``close``."""

    def __init__(self, wheels: Sequence[str] = (), fetch: bool = False, python_version: str | None = None,
                 venv: str | None = None) -> None:
        self.wheels = tuple(wheels)
        self.fetch = fetch
        self.python_version = python_version
        self.venv = venv
        self._found: dict[tuple[str, str], tuple[list[tuple[SourceKind, str, str]], list[str]]] = {}
        self._work: str | None = None

    def close(self) -> None:
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    def _workdir(self) -> str:
        if self._work is None:
            self._work = tempfile.mkdtemp(prefix="driftscan-reapply-")
        return self._work

    def _wheels_of(self, name: str, version: str, like: Distribution | None
                   ) -> tuple[list[tuple[SourceKind, str, str]], list[str]]:
        key = (name.lower(), version)
        if key in self._found:
            return self._found[key]
        notes: list[str] = []
        site = like.site_packages if like is not None else "/nonexistent"
        broad = Distribution(name, version, os.path.join(site, f".{name}-{version}.dist-info"), site)
        candidates = list(Wheelhouse(self.wheels).candidates(broad, notes)) if self.wheels else []
        if self.fetch:
            tagged = Distribution(name, version, like.metadata_dir, like.site_packages) if like is not None else broad
            candidates += list(fetch.fetch_candidates(tagged, self.python_version, self.venv, self._workdir, notes))
        found: list[tuple[SourceKind, str, str]] = []  # (source, the file opened, how a report names it)
        for c in candidates:
            if isinstance(c, Rejected):
                notes.append(f"{c.source.label} {c.path} (rejected: {c.reason})")
                continue
            found.append((c.source, c.path, c.where))
            c.close()
        if not self.wheels:
            notes.append("--wheels (not given)")
        if not self.fetch:
            notes.append("--fetch (not asked for)")
        self._found[key] = (found, notes)
        return found, notes

    def find(self, name: str, version: str, record_path: str, hash_before: str,
             like: Distribution | None = None) -> tuple[bytes | None, str, list[str]]:
        """The original of ``record_path`` in ``name`` ``version``'s wheel: ``(bytes or None, where
        it came from, what was tried)``; what is found is kept (``keep``). ``like``: the installed
        distribution of that name (its WHEEL tags pick the wheel to download)."""
        h = _hash(hash_before)
        if h is None:
            return None, "", ["the checkpoint gives no usable hash_before"]
        entry = RecordEntry(record_path, h, None, 0)
        found, notes = self._wheels_of(name, version, like)
        tried = list(notes)
        site = like.site_packages if like is not None else "/nonexistent"
        dist = Distribution(name, version, os.path.join(site, f".{name}-{version}.dist-info"), site)
        for source, path, where in found:
            try:
                # A wheel of --wheels DIR may be a link into a wheelhouse; a download is driftscan's own.
                copy = open_wheel(path, source, dist, follow=source.value != "fetch")
            except Exception as exc:  # noqa: BLE001 - a wheel that vanished or broke: a reason
                tried.append(f"{path} ({type(exc).__name__})")
                continue
            try:
                data = copy.read(entry, READ_MAX)
            finally:
                copy.close()
            if data is not None and matches(hash_before, data):
                keep(hash_before, data, f"{copy.source.label} {where}")
                return data, f"{copy.source.label} {where}", tried
            tried.append(f"{copy.source.label} {path} (no member {record_path} with the checkpoint's hash)")
        return None, "", tried

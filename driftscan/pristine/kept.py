"""Originals reapply found and verified, kept in driftscan's user cache for later runs.

A checkpoint taken without an original of a file (no ``--wheels``, uv's cache copy edited through
a hard link) can still be re-applied when the original is found later: the installed file when it
is the very original (its RECORD hash is the checkpoint's ``hash_before``), or the member of a
wheel of the checkpoint's distribution and version (``--wheels DIR``, or ``--fetch``: ``pip
download``). Every byte is checked against ``hash_before`` before it is used or kept; kept copies
live under ``<user cache>/originals/<algorithm>-<hex digest>`` (content-addressed: the name is the
verified digest) and are checked again each time they are read. Never in the environment.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence

from ..caches.location import below_cache, user_cache_dir, write_cache_file
from ..core.values import Distribution, Hash, RecordEntry, SourceKind
from ..formats.record import new_hash, parse_hash
from ..fs.confined import read_below
from .base import Rejected
from .fetch import fetch_candidates
from .wheel import open_wheel
from .wheelhouse import Wheelhouse

READ_MAX = 64 << 20


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


def kept_path(hash_before: str | None) -> str | None:
    h = _hash(hash_before)
    if h is None:
        return None
    return os.path.join(user_cache_dir(), "originals", f"{h.algorithm}-{h.digest.hex()}")


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


def keep(hash_before: str | None, data: bytes) -> bool:
    """Keep ``data`` as the original ``hash_before`` names, if it is (True when kept)."""
    path = kept_path(hash_before)
    if path is None or not matches(hash_before, data):
        return False
    if kept(hash_before) is not None:
        return True
    write_cache_file(path, data, prefix=".original-")
    return kept(hash_before) is not None


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
        self._found: dict[tuple[str, str], tuple[list[tuple[SourceKind, str]], list[str]]] = {}
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
                   ) -> tuple[list[tuple[SourceKind, str]], list[str]]:
        key = (name.lower(), version)
        if key in self._found:
            return self._found[key]
        notes: list[str] = []
        site = like.site_packages if like is not None else "/nonexistent"
        broad = Distribution(name, version, os.path.join(site, f".{name}-{version}.dist-info"), site)
        candidates = list(Wheelhouse(self.wheels).candidates(broad, notes)) if self.wheels else []
        if self.fetch:
            tagged = Distribution(name, version, like.metadata_dir, like.site_packages) if like is not None else broad
            candidates += list(fetch_candidates(tagged, self.python_version, self.venv, self._workdir, notes))
        found: list[tuple[SourceKind, str]] = []
        for c in candidates:
            if isinstance(c, Rejected):
                notes.append(f"{c.source.label} {c.path} (rejected: {c.reason})")
                continue
            found.append((c.source, c.path))
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
        for source, path in found:
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
                keep(hash_before, data)
                return data, f"{copy.source.label} {path}", tried
            tried.append(f"{copy.source.label} {path} (no member {record_path} with the checkpoint's hash)")
        return None, "", tried

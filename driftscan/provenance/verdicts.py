"""Clean provenance verdicts remembered between runs, so a warm ``audit --lock`` of an unchanged
environment reads neither the installed RECORDs nor the wheels' again.

A verdict is a function of two files: the installed RECORD and the wheel's own RECORD (inside the
wheel file, or the archive uv unpacked it to, named by uv's pointer file). It is remembered only
when it is clean (no row differs: a verdict with differences is always made afresh, so each file's
state is read now), and trusted only while the installed RECORD and every file it was read from
(the wheel, or the pointer and the archive's RECORD) have the signatures they had then (size,
mtime, ctime, inode, device; settled by caches/racy.py), and the digest the lock or direct_url.json
asks for is still the wheel's. The memo is the user cache's: an entry that does not read back in
every type is not used."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ..caches.location import user_cache_dir, write_cache_file
from ..caches.racy import settled_stat, signature
from ..core.values import Distribution
from ..fs.reader import read_regular
from .expected import Expected
from .model import Provenance, ProvenanceSource

VERSION = 1
MAX_MEMO = 32 << 20


def memo_path() -> str:
    return os.path.join(user_cache_dir(), "provenance", "verdicts.json")


def _signature(path: str) -> list[int] | None:
    try:
        return signature(os.lstat(path))
    except OSError:
        return None


def _record(dist: Distribution) -> str:
    return os.path.join(dist.metadata_dir, "RECORD")


class Verdicts:
    """The memo of one run: loaded on first use, saved once at the end."""

    def __init__(self, use: bool = True) -> None:
        self._use = use
        self._rows: dict[str, Any] | None = None
        self._changed = False
        self._started = time.time_ns()

    def _entries(self) -> dict[str, Any]:
        if self._rows is None:
            self._rows = {}
            if self._use:
                try:
                    doc = json.loads(read_regular(memo_path(), MAX_MEMO, what="cache"))
                    if isinstance(doc, dict) and doc.get("version") == VERSION and isinstance(doc.get("entries"), dict):
                        self._rows = doc["entries"]
                except (OSError, ValueError):
                    pass
        return self._rows

    def get(self, dist: Distribution, wanted: Expected) -> Provenance | None:
        """The remembered clean verdict of ``dist`` when nothing it rests on changed since."""
        if not self._use:
            return None
        row = self._entries().get(dist.metadata_dir)
        try:
            if not isinstance(row, dict) or row.get("record") != _signature(_record(dist)) or row.get("lock") != wanted.lock:
                return None
            digest, wheel, source, compared = row["wheel_sha256"], row["wheel"], row["source"], row["rows_compared"]
            witnesses = row["witnesses"]
            if not (isinstance(digest, str) and wanted.accepts(digest) and isinstance(wheel, str)
                    and type(compared) is int and isinstance(witnesses, list) and witnesses):
                return None
            for path, then in witnesses:
                if not isinstance(path, str) or _signature(path) != then:
                    return None
            return Provenance(dist.name, dist.version, dist.metadata_dir, wanted.lock, digest, wheel,
                              ProvenanceSource(source), True, None, None, (), compared)
        except (KeyError, TypeError, ValueError):
            return None

    def remember(self, dist: Distribution, verdict: Provenance, witnesses: list[str]) -> None:
        """Keep a clean verified verdict, read from ``witnesses`` (the files it rests on besides the
        installed RECORD), when every one of them was settled before this run began."""
        if not self._use or not verdict.verified or verdict.rows or not witnesses or verdict.wheel_sha256 is None:
            return
        signatures = []
        for path in [_record(dist), *witnesses]:
            try:
                st = os.lstat(path)
            except OSError:
                return
            if not settled_stat(st, self._started):
                return
            signatures.append(signature(st))
        self._entries()[dist.metadata_dir] = {
            "record": signatures[0], "lock": verdict.lock, "wheel_sha256": verdict.wheel_sha256,
            "wheel": verdict.wheel, "source": verdict.source.value, "rows_compared": verdict.rows_compared,
            "witnesses": [[p, s] for p, s in zip(witnesses, signatures[1:])]}
        self._changed = True

    def save(self) -> None:
        if self._changed and self._rows is not None:
            write_cache_file(memo_path(), json.dumps({"version": VERSION, "entries": self._rows}).encode(),
                             prefix=".memo-")  # unwritten: it only costs time

"""The values of the pristine package and the one check every source's bytes go through.

A source's bytes are never trusted: a wheel the tree names, a cache shared with a venv whose
files were edited in place, a download. ``PristineCopy`` hands out bytes only after streaming
them through the hash and size the installed RECORD row promises, reading at most that size
plus one byte, whatever the source declares.
"""

from __future__ import annotations

import enum
import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

from ..core.values import Distribution, RecordEntry, SourceKind as SourceKind  # re-exported
from ..formats.record import new_hash

CHUNK = 1 << 20
# A row without a size (a RECORD that leaves it out) is streamed up to this many bytes at most.
NO_SIZE_CAP = 16 << 30
# Verified bytes kept by a copy between the search (which checks every needed row) and the
# caller's read: only small files, and a budget per copy.
KEEP_MAX_FILE = 1 << 20
KEEP_BUDGET = 32 << 20


@dataclass(frozen=True)
class PristineOptions:
    wheels: tuple[str, ...] = ()  # --wheels DIR (repeatable): wheelhouses, `pip download` dirs
    fetch: bool = False  # --fetch: allowed to run `pip download` (only when True)
    uv_cache: str | None = None  # None: environment.uv.cache.default_uv_cache()
    pip_cache: str | None = None  # None: PIP_CACHE_DIR, else $XDG_CACHE_HOME/pip, else ~/.cache/pip
    venv: str | None = None  # the audited environment's root (for its pip.conf when fetching)
    python_version: str | None = None  # the audited environment's "3.12" (Target.python_version)


@dataclass(frozen=True)
class Rejected:
    source: SourceKind
    path: str
    reason: str



class PristineCopy:
    """One distribution's original files from one source. Subclasses say where a row's member
    is (``_open``); this class decides whether its bytes are the original ones."""

    source: SourceKind
    path: str
    distribution: Distribution

    def __init__(self, source: SourceKind, path: str, distribution: Distribution) -> None:
        self.source = source
        self.path = path
        self.distribution = distribution
        self._kept: dict[RecordEntry, bytes] = {}
        self._kept_bytes = 0
        self.note: str | None = None  # something worth saying about the source itself
        # Where the copy came from, when ``path`` is not worth naming (a download's temporary
        # wheel, removed when the run ends): what a report shows instead of ``path``.
        self.origin: str | None = None

    @property
    def where(self) -> str:
        """How a report names this copy's place: ``origin`` when set, else ``path``."""
        return self.origin or self.path

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.source.value} {self.path!r} for {self.distribution.key}>"

    # -- what a subclass provides -------------------------------------------------------------
    def _open(self, entry: RecordEntry) -> tuple[BinaryIO, int | None] | None:
        """The member's stream and the size the source declares for it (not trusted), or None
        when the source has no member for this row. May raise OSError and the like."""
        raise NotImplementedError

    def executable(self, entry: RecordEntry) -> bool:
        """Whether the original is executable (a wheel member's or cached file's x bit): a
        recreated file gets 0o755 then, else 0o644."""
        return False

    def has(self, entry: RecordEntry) -> bool:
        """The source carries a member for this row."""
        raise NotImplementedError

    def is_release_of(self, dist: Distribution) -> bool:
        """The source says itself which release it is, and it is ``dist``'s (a wheel does)."""
        return False

    def wrong_row(self, entry: RecordEntry, installed_hash: str, installed_size: int) -> WrongRow | None:
        """A row the source itself gets wrong while holding the installed bytes (a wheel can)."""
        return None

    def explain(self, entry: RecordEntry, why: str) -> str:
        """A reason for the Rejected of a row that failed with ``why``."""
        return f"{entry.path}: {why}"

    def close(self) -> None:
        self._kept.clear()

    # -- the check ----------------------------------------------------------------------------
    def check(self, entry: RecordEntry, out: BinaryIO | None = None, limit: int | None = None) -> str | None:
        """None when this source's bytes of ``entry`` match its hash and size (written to ``out``
        as they are read); else why not, in a few words. Never raises for a bad source."""
        if entry.hash is None:
            return "RECORD gives no hash for it, so no copy can be verified"
        if entry.size is not None and limit is not None and entry.size > limit:
            return f"{entry.size} bytes, more than the {limit} asked for"
        kept = self._kept.get(entry)
        if kept is not None:
            if out is not None:
                out.write(kept)
            return None
        try:
            hasher = new_hash(entry.hash.algorithm)
        except ValueError:
            return f"RECORD names a hash algorithm this Python lacks ({entry.hash.algorithm})"
        keep = out is None and entry.size is not None and entry.size <= KEEP_MAX_FILE \
            and self._kept_bytes + entry.size <= KEEP_BUDGET
        buffer = io.BytesIO() if keep else None
        try:
            opened = self._open(entry)
            if opened is None:
                return f"not in {self.source.label}"
            stream, declared = opened
            with stream:
                if entry.size is not None and declared is not None and declared != entry.size:
                    return "its size differs from RECORD's"  # the unverified copy's own size is not shown
                bound = entry.size if entry.size is not None else (limit if limit is not None else NO_SIZE_CAP)
                if declared is not None:  # never past what the source says it holds either
                    bound = min(bound, declared)
                total = 0
                while True:
                    # One byte past the bound is enough to know the copy is too big (a zip bomb's
                    # declared size is not what is trusted here).
                    chunk = stream.read(min(CHUNK, bound + 1 - total))
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > bound:
                        return f"more than the {bound} bytes RECORD says" if entry.size is not None \
                            else f"more than {bound} bytes"
                    hasher.update(chunk)
                    for sink in (out, buffer):
                        if sink is not None:
                            sink.write(chunk)
        except Exception as exc:  # noqa: BLE001 - a corrupt zip, a bad CRC, a vanished file: a reason
            return f"unreadable: {_error(exc)}"
        if entry.size is not None and total != entry.size:
            return "its size differs from RECORD's"
        if hasher.digest() != entry.hash.digest:
            return f"its content does not match RECORD's {entry.hash.algorithm}"
        if buffer is not None:
            self._kept[entry] = buffer.getvalue()
            self._kept_bytes += total
        return None

    def read(self, entry: RecordEntry, limit: int = 64 << 20) -> bytes | None:
        """The original bytes of that RECORD row, only if they match its hash (and size); None
        when the source lacks the file, it does not match, or it is bigger than ``limit``."""
        kept = self._kept.get(entry)
        if kept is not None:
            return kept if len(kept) <= limit else None
        out = io.BytesIO()
        return out.getvalue() if self.check(entry, out, limit) is None else None

    def copy_to(self, entry: RecordEntry, out: BinaryIO) -> bool:
        """Stream the original bytes into ``out`` (bounded memory); True only if they matched
        (on False the caller discards ``out``: it may hold part of a copy)."""
        return self.check(entry, out) is None

    def failures(self, entries: Iterable[RecordEntry]) -> list[tuple[RecordEntry, str]]:
        """Every row of ``entries`` that does not verify here, with why."""
        found = []
        for entry in entries:
            why = self.check(entry)
            if why is not None:
                found.append((entry, why))
        return found


def _error(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def error_text(exc: BaseException) -> str:
    """An exception in a reason's words (one line)."""
    return " ".join(_error(exc).split())


@dataclass(frozen=True)
class WrongRow:
    """A RECORD row the wheel itself gets wrong: the installed file's bytes are the wheel's member
    for it, and the wheel's own RECORD row (the one the installer copied) does not describe them."""

    path: str  # the installed RECORD path
    member: str  # the wheel's member name
    wheel: str  # the wheel's file name (a pip cache body: its path)
    row_hash: str  # the row's "<algorithm>=<digest>", as RECORD writes it


@dataclass(frozen=True)
class Lookup:
    distribution: Distribution
    copy: PristineCopy | None
    rejected: tuple[Rejected, ...]
    reason: str | None  # when copy is None: why none was found, one line naming what was tried
    # RECORD paths of needed rows the copy cannot give (a partial copy, unhashed rows, scripts)
    lacking: tuple[str, ...] = ()
    # RECORD paths whose bytes in ``copy`` verified during the search: a copy chosen as the
    # closest of several (``reason`` says "no source has every file") lacks the others.
    verified: frozenset[str] = frozenset()
    # Needed rows the copy's wheel ships with the installed bytes and a wrong RECORD row of its own
    # (``ZipCopy.wrong_row``): the copy was chosen as the wheel these were installed from.
    wrong_rows: tuple[WrongRow, ...] = ()

    def wrong_row(self, path: str) -> WrongRow | None:
        return next((w for w in self.wrong_rows if w.path == path), None)

    def original(self, entry: RecordEntry) -> PristineCopy | None:
        """The copy to take ``entry``'s original from, only when that row's own bytes verify
        there: checked in the search, else checked now. None for a row the copy lacks or has
        edited (a uv cache copy hard-linked with the venv), whatever the distribution's source."""
        if self.copy is None or entry.hash is None:
            return None
        if entry.path in self.verified:
            return self.copy
        if entry.path in self.lacking:
            return None
        return self.copy if self.copy.check(entry) is None else None

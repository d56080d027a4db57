"""A stat cache: (size, mtime_ns, ctime_ns, inode, device) → the content digest last observed.

It stores what a file's content *was* when hashed, never a verdict: every run still compares
that digest with what RECORD (or a manifest) expects now, so a changed RECORD cannot be hidden
by the cache. It lives in the user's cache directory, never in the audited tree.

Trust rule, racy-timestamp-safe in the manner of git's index: a digest is remembered only if
the file's mtime and ctime were both older than the moment hashing began minus ``RACY_NS``; a
file modified within that window of being hashed (or on a filesystem with coarse timestamps) is
hashed again next time. An edit that restores size and mtime with ``os.utime`` still changes
ctime, and a replace-by-rename changes the inode. What it cannot see: someone who resets ctime
(by moving the system clock), writes to the block device, or rewrites the cache file itself (it
lives with the user's other caches; its checksum catches damage, not forgery). ``--no-cache``
is the paranoid mode.

Each file is a format line, an xxh3-64 checksum and a ``marshal``-ed value (loaded in a few
milliseconds for 40,000 files, where JSON took ten times longer); any mismatch means "start empty".
Per environment: ``<key>.bin`` (the digests), ``<key>.records.bin`` (the parsed RECORDs: a warm
audit that carries drift reads a few of them and none of the digests), ``<key>.clean.bin`` (the
index, ``environment.fast.cleanindex``) and, beside an index that carries drift, ``<key>.owned.bin``
(the paths the RECORDs own, read only by the dump search).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import struct
from collections.abc import Collection, Iterable
from typing import Any, Protocol, Union

import xxhash

from .location import user_cache_dir as user_cache_dir, write_cache_file  # user_cache_dir re-exported
from .racy import settled_stat
from ..fs.reader import LIMITS, read_regular
from ..core.values import Hash, RecordEntry, RecordRows
from ..formats.record import ParsedRecord, RecordIssue
from ..fs.reader import inside

# A RECORD longer than this is parsed again at every audit rather than kept: its parse would cost
# the cache more memory and time than it saves (a torch RECORD has some 15,000 rows).
RECORD_ROWS_KEPT = 200_000

FORMAT = b"driftscan-statcache-4\n"
RECORDS_FORMAT = b"driftscan-records-1\n"
CLEAN_FORMAT = b"driftscan-cleanindex-1\n"
OWNED_FORMAT = b"driftscan-owned-1\n"
# (size, mtime_ns, ctime_ns, inode, device), packed: one bytes value per file keeps a 200,000-file
# cache small in memory, and an unchanged file is recognised by one bytes comparison.
SIGNATURE = struct.Struct("<QqqQQ")


def dump_list_path(paths: Iterable[str]) -> str:
    """Where the exact list of these dump files goes: ``dumps/<hash of the list>.list`` in the
    user cache directory (the same files, the same file)."""
    data = b"".join(os.fsencode(p) + b"\0" for p in paths)
    return os.path.join(user_cache_dir(), "dumps", hashlib.sha256(data).hexdigest()[:32] + ".list")


def write_dump_list(paths: Collection[str], audited: Iterable[str | None] = ()) -> str | None:
    """The files, NUL-terminated (what ``xargs -0`` reads), written atomically to
    ``dump_list_path``; None when that cannot be written, or would land inside a directory the
    audit reads (``audited``: a DRIFTSCAN_CACHE_DIR in the tree): the remedy then names each file."""
    path = dump_list_path(paths)
    directory = os.path.dirname(path)
    if any(inside(root, directory) for root in audited if root):
        return None
    # below the cache directory nothing is followed: a dumps/ swapped for a link is not written through
    if write_cache_file(path, b"".join(os.fsencode(p) + b"\0" for p in paths), prefix=".dumps-", mode=0o644):
        return None
    return path


def signature(st: os.stat_result) -> bytes:
    try:
        return SIGNATURE.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    except struct.error:  # a value out of range (an exotic filesystem): never matches
        return b""


def tag(algorithm: str, digest: bytes) -> bytes:
    """What follows the signature in an entry: the algorithm's name, NUL, the digest."""
    return algorithm.encode("ascii") + b"\0" + digest


def _read_framed(path: str, fmt: bytes) -> object:
    """A format line, an xxh3-64 checksum of the rest, a marshal payload; None if anything is off."""
    try:
        # The same reader as for the audited tree's files: a regular file only (a FIFO or a device
        # put in its place cannot hang or feed the audit), of a capped size.
        data = read_regular(path, LIMITS["cache"], what="cache")
    except OSError:
        return None  # absent, unreadable or not a cache: start empty, it is only a cache
    head = len(fmt)
    if not data.startswith(fmt) or xxhash.xxh3_64_digest(data[head + 8:]) != data[head:head + 8]:
        return None  # foreign, truncated or damaged
    try:
        return marshal.loads(data[head + 8:])
    except (EOFError, ValueError, TypeError, RecursionError, MemoryError):
        return None  # written by a Python whose marshal format this one does not read


def _write_framed(path: str, fmt: bytes, value: dict[str, Any] | bytes) -> None:
    """Write atomically; a cache that cannot be written is silently skipped."""
    payload = marshal.dumps(value)
    write_cache_file(path, fmt + xxhash.xxh3_64_digest(payload) + payload, prefix=".statcache-")


# A clean index (``environment.fast.cleanindex``) as the cache file holds it.
CleanIndex = dict[str, Any]
# A RECORD's rows and issues as the cache file holds them (``StatCache._flat``).
FlatRecord = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]
# RECORD path → (signature, allow_hex, the flat rows as loaded or the ParsedRecord in use).
RememberedRecord = tuple[bytes, bool, Union[FlatRecord, ParsedRecord]]


class DigestCache(Protocol):
    """What an audit asks of a cache of digests and parsed RECORDs: ``StatCache`` (one file per
    environment, or in memory only) and ``NoCache`` (``--no-cache``: remembers nothing)."""

    hits: int  # rows settled without reading their content (counted by verify)
    misses: int  # rows that had to be hashed

    @property
    def persistent(self) -> bool:
        """Whether what it remembers is kept in a file for the next run (a clean index is only
        worth building then)."""
        ...

    @property
    def entries(self) -> dict[str, bytes]: ...

    def record_signature(self, record_path: str) -> bytes | None: ...

    def clean_index(self) -> CleanIndex | None: ...

    def set_clean_index(self, index: CleanIndex | None, owned: bytes | None = None) -> None: ...

    def owned_paths(self, digest: bytes) -> bytes | None: ...

    def parsed_record(self, path: str, st: os.stat_result, allow_hex: bool) -> ParsedRecord | None: ...

    def remember_record(self, path: str, st: os.stat_result, allow_hex: bool, parsed: ParsedRecord,
                        read_at: int) -> None: ...

    def lookup(self, path: str, st: os.stat_result, algorithm: str) -> bytes | None: ...

    def store(self, path: str, st: os.stat_result, algorithm: str, digest: bytes, hashed_at: int) -> None: ...

    def merge(self, entries: dict[str, bytes]) -> None: ...

    def retain(self, live: Collection[str]) -> None: ...

    def save(self) -> None: ...


class StatCache(DigestCache):
    """One environment's cache file: path → signature + algorithm + digest, for files that were
    older than the racy window when hashed (a racily clean entry is never even stored); the
    parsed RECORDs; and, in a file of its own, the clean index (``verify.cleanindex``).

    Files are read on first use: a warm audit that the clean index settles never loads the rest."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._loaded = not path
        self._records_loaded = not path
        self._entries_data: dict[str, bytes] = {}
        # RECORD path → (signature, allow_hex, (rows, issues) as stored, or the ParsedRecord in use):
        # parsing 40 RECORDs of 40,000 rows costs a warm audit more than loading them (0.1 s / 0.03 s)
        self._records_data: dict[str, RememberedRecord] = {}
        self._dirty = False
        self._records_dirty = False
        self._clean: CleanIndex | None = None
        self._clean_loaded = not path
        self._clean_dirty = False
        self._owned: bytes | None = None  # to be written beside the index (carried drift only)
        self.hits = 0  # rows settled without reading their content (counted by verify)
        self.misses = 0  # rows that had to be hashed

    @property
    def persistent(self) -> bool:
        return self.path is not None

    @classmethod
    def for_target(cls, key: str, directory: str | None = None) -> StatCache:
        name = hashlib.sha256(os.path.realpath(key).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return cls(os.path.join(directory or user_cache_dir(), "statcache", name + ".bin"))

    def _ensure(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        assert self.path is not None  # a cache without a file is loaded from the start
        loaded = _read_framed(self.path, FORMAT)
        if type(loaded) is dict:
            # Entries are used as bytes compared whole (a value of another type never matches).
            self._entries_data = loaded

    def _beside(self, suffix: str) -> str:
        """The file of this name beside the digests' (only a cache with a file reads or writes one)."""
        assert self.path is not None
        return self.path[:-len(".bin")] + suffix

    @property
    def _records_path(self) -> str:
        return self._beside(".records.bin")

    def _ensure_records(self) -> None:
        """The parsed RECORDs live in a file of their own: a warm audit that carries drift
        (``environment.fast.cleanindex``) reads a few of them and none of the digests."""
        if self._records_loaded:
            return
        self._records_loaded = True
        loaded = _read_framed(self._records_path, RECORDS_FORMAT)
        if type(loaded) is dict:  # RECORD parses are few: each is checked for its shape here, once
            self._records_data = {p: r for p, r in loaded.items()
                                  if type(r) is tuple and len(r) == 3 and type(r[0]) is bytes and type(r[1]) is bool}

    @property
    def _entries(self) -> dict[str, bytes]:
        self._ensure()
        return self._entries_data

    @property
    def _records(self) -> dict[str, RememberedRecord]:
        self._ensure_records()
        return self._records_data

    @property
    def entries(self) -> dict[str, bytes]:
        """For the verify hot loop: ``entries.get(path) == signature(st) + tag(algorithm, digest)``."""
        return self._entries

    def record_signature(self, record_path: str) -> bytes | None:
        """The signature of a RECORD as remembered with its parse (None if not remembered)."""
        known = self._records.get(record_path)
        return known[0] if known is not None else None

    @property
    def _clean_path(self) -> str:
        return self._beside(".clean.bin")

    def clean_index(self) -> CleanIndex | None:
        """The index the last clean audit left (``verify.cleanindex``), or None."""
        if not self._clean_loaded:
            self._clean_loaded = True
            loaded = _read_framed(self._clean_path, CLEAN_FORMAT)
            self._clean = loaded if type(loaded) is dict else None
        return self._clean

    def set_clean_index(self, index: CleanIndex | None, owned: bytes | None = None) -> None:
        """``owned``: the NUL-joined paths the RECORDs own, for an index that carries drift (read
        back by ``owned_paths`` only when the dump search asks; the index holds its digest)."""
        if self.path and (index is not None or self.clean_index() is not None):
            self._clean, self._clean_dirty, self._owned = index, True, owned

    @property
    def _owned_path(self) -> str:
        return self._beside(".owned.bin")

    def owned_paths(self, digest: bytes) -> bytes | None:
        """What ``set_clean_index`` was given as ``owned``, if the file holds exactly that."""
        if not self.path:
            return None
        loaded = _read_framed(self._owned_path, OWNED_FORMAT)
        if type(loaded) is not bytes or xxhash.xxh3_128_digest(loaded) != digest:
            return None
        return loaded

    def parsed_record(self, path: str, st: os.stat_result, allow_hex: bool) -> ParsedRecord | None:
        """The parse of the RECORD at ``path``, if it is unchanged since it was remembered."""
        known = self._records.get(path)
        if known is None or known[0] != signature(st) or known[1] != allow_hex:
            return None
        if isinstance(known[2], ParsedRecord):
            return known[2]
        try:
            rows, issues = known[2]
            # The file's checksum catches damage, not a foreign writer: a row of the wrong types
            # drops the whole parse (the RECORD is then parsed again).
            entries = RecordRows()
            append_sha256, append = entries.append_sha256, entries.append
            for p, a, d, e, size, line in rows:
                if type(p) is not str or not (a is None or type(a) is str and type(d) is bytes) \
                        or not (size is None or type(size) is int) or type(line) is not int:
                    return None
                if a == "sha256" and e == "base64" and len(d) == 32 and (size is None or 0 <= size < 1 << 63):
                    append_sha256(p, d, size, line)
                else:
                    append(RecordEntry(p, Hash(a, d, e) if a is not None else None, size, line))
            parsed = ParsedRecord(entries.freeze(),
                                  tuple([RecordIssue(int(line), str(message), p if p is None else str(p))
                                         for line, message, p in issues]))
        except (TypeError, ValueError, OverflowError):
            return None
        self._records[path] = (known[0], allow_hex, parsed)  # the rows as loaded are not kept twice
        return parsed

    def remember_record(self, path: str, st: os.stat_result, allow_hex: bool, parsed: ParsedRecord,
                        read_at: int) -> None:
        """Keep a parse for next time, under the same racy-clean rule as digests."""
        if not settled_stat(st, read_at) or not signature(st) or len(parsed.entries) > RECORD_ROWS_KEPT:
            return
        self._records[path] = (signature(st), allow_hex, parsed)  # flattened when saved
        self._records_dirty = True

    @staticmethod
    def _flat(parsed: FlatRecord | ParsedRecord) -> FlatRecord:
        if not isinstance(parsed, ParsedRecord):
            return parsed
        rows = [(e.path, *((e.hash.algorithm, e.hash.digest, e.hash.encoding) if e.hash else (None, None, None)),
                 e.size, e.line) for e in parsed.entries]
        return rows, [(i.line, i.message, i.path) for i in parsed.issues]

    def lookup(self, path: str, st: os.stat_result, algorithm: str) -> bytes | None:
        """The digest this file had when last hashed, if it is unchanged since (same signature)."""
        entry = self._entries.get(path)
        head = signature(st)
        prefix = head + algorithm.encode("ascii") + b"\0"
        if type(entry) is not bytes or not head or not entry.startswith(prefix):
            return None
        return entry[len(prefix):]

    def store(self, path: str, st: os.stat_result, algorithm: str, digest: bytes, hashed_at: int) -> None:
        """Remember a digest, unless the file changed too shortly before ``hashed_at`` to be sure
        the content read is the content its timestamps describe (git's racy-clean rule)."""
        if not settled_stat(st, hashed_at):
            return
        head = signature(st)
        if head:
            self._entries[path] = head + tag(algorithm, digest)  # one dict store: atomic under the GIL
            self._dirty = True

    def merge(self, entries: dict[str, bytes]) -> None:
        """Entries another process stored (a forked hashing child's ``entries``)."""
        if entries:
            self._entries.update(entries)
            self._dirty = True

    def retain(self, live: Collection[str]) -> None:
        """Forget files no longer audited (uninstalled), so the cache does not grow forever."""
        if self._dirty:
            self._entries_data = {p: e for p, e in self._entries.items() if p in live}
        if self._records_dirty:
            self._records_data = {p: r for p, r in self._records.items() if p in live}

    def save(self) -> None:
        """Write what changed, atomically; a cache that cannot be written is silently skipped."""
        if not self.path:
            return
        if self._records_dirty:
            records = {p: (sig, hexes, self._flat(parsed)) for p, (sig, hexes, parsed) in self._records.items()}
            _write_framed(self._records_path, RECORDS_FORMAT, records)
            self._records_dirty = False
        if self._dirty:
            _write_framed(self.path, FORMAT, self._entries)
            self._dirty = False
        if self._clean_dirty:
            if self._clean is None:
                try:
                    os.unlink(self._clean_path)
                except OSError:
                    pass
            else:
                if self._owned is not None:  # first: an index never names a list not yet written
                    _write_framed(self._owned_path, OWNED_FORMAT, self._owned)
                else:
                    try:
                        os.unlink(self._owned_path)  # a clean index has no use for it
                    except OSError:
                        pass
                _write_framed(self._clean_path, CLEAN_FORMAT, self._clean)
            self._clean_dirty = False


class NoCache(DigestCache):
    """``--no-cache``: reads nothing, remembers nothing."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self._entries: dict[str, bytes] = {}  # always empty: nothing is stored

    @property
    def persistent(self) -> bool:
        return False

    @property
    def entries(self) -> dict[str, bytes]:
        return self._entries

    def record_signature(self, record_path: str) -> bytes | None:
        return None

    def clean_index(self) -> CleanIndex | None:
        return None

    def set_clean_index(self, index: CleanIndex | None, owned: bytes | None = None) -> None:
        pass

    def owned_paths(self, digest: bytes) -> bytes | None:
        return None

    def parsed_record(self, path: str, st: os.stat_result, allow_hex: bool) -> ParsedRecord | None:
        return None

    def remember_record(self, path: str, st: os.stat_result, allow_hex: bool, parsed: ParsedRecord,
                        read_at: int) -> None:
        pass

    def lookup(self, path: str, st: os.stat_result, algorithm: str) -> bytes | None:
        return None

    def store(self, path: str, st: os.stat_result, algorithm: str, digest: bytes, hashed_at: int) -> None:
        pass

    def merge(self, entries: dict[str, bytes]) -> None:
        pass

    def retain(self, live: Collection[str]) -> None:
        pass

    def save(self) -> None:
        pass

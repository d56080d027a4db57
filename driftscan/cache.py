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

The file is a format line, an xxh3-64 checksum and a ``marshal``-ed dict (loaded in a few
milliseconds for 40,000 files, where JSON took ten times longer); any mismatch means "start empty".
"""

from __future__ import annotations

import hashlib
import marshal
import os
import struct
import sys

import xxhash

from .model import Hash, RecordEntry
from .record import ParsedRecord, RecordIssue

FORMAT = b"driftscan-statcache-3\n"
RACY_NS = 2_000_000_000  # two seconds: covers FAT/SMB timestamp granularity
# (size, mtime_ns, ctime_ns, inode, device), packed: one bytes value per file keeps a 200,000-file
# cache small in memory, and an unchanged file is recognised by one bytes comparison.
SIGNATURE = struct.Struct("<QqqQQ")


def user_cache_dir() -> str:
    if os.environ.get("DRIFTSCAN_CACHE_DIR"):
        return os.environ["DRIFTSCAN_CACHE_DIR"]
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA", os.path.expanduser("~")), "driftscan", "cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/driftscan")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "driftscan")


def signature(st: os.stat_result) -> bytes:
    try:
        return SIGNATURE.pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    except struct.error:  # a value out of range (an exotic filesystem): never matches
        return b""


def tag(algorithm: str, digest: bytes) -> bytes:
    """What follows the signature in an entry: the algorithm's name, NUL, the digest."""
    return algorithm.encode("ascii") + b"\0" + digest


class StatCache:
    """One environment's cache file: path → signature + algorithm + digest, for files that were
    older than the racy window when hashed (a racily clean entry is never even stored)."""

    def __init__(self, path: str | None):
        self.path = path
        self._entries: dict[str, bytes] = {}
        # RECORD path → (signature, allow_hex, (rows, issues) as stored, or the ParsedRecord in use):
        # parsing 40 RECORDs of 40,000 rows costs a warm audit more than loading them (0.1 s / 0.03 s)
        self._records: dict[str, tuple] = {}
        self._dirty = False
        self.hits = 0  # rows settled without reading their content (counted by verify)
        self.misses = 0  # rows that had to be hashed
        if path:
            self._load()

    @classmethod
    def for_target(cls, key: str, directory: str | None = None) -> StatCache:
        name = hashlib.sha256(os.path.realpath(key).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return cls(os.path.join(directory or user_cache_dir(), "statcache", name + ".bin"))

    @property
    def entries(self) -> dict[str, bytes]:
        """For the verify hot loop: ``entries.get(path) == signature(st) + tag(algorithm, digest)``."""
        return self._entries

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as f:  # type: ignore[arg-type]
                data = f.read()
        except OSError:
            return  # absent or unreadable: start empty, it is only a cache
        head = len(FORMAT)
        if not data.startswith(FORMAT) or xxhash.xxh3_64_digest(data[head + 8:]) != data[head:head + 8]:
            return  # foreign, truncated or damaged
        try:
            loaded = marshal.loads(data[head + 8:])
        except (EOFError, ValueError, TypeError):
            return  # written by a Python whose marshal format this one does not read
        if type(loaded) is tuple and len(loaded) == 2 and type(loaded[0]) is dict and type(loaded[1]) is dict:
            self._entries, self._records = loaded

    def parsed_record(self, path: str, st: os.stat_result, allow_hex: bool) -> ParsedRecord | None:
        """The parse of the RECORD at ``path``, if it is unchanged since it was remembered."""
        known = self._records.get(path)
        if known is None or known[0] != signature(st) or known[1] != allow_hex:
            return None
        if isinstance(known[2], ParsedRecord):
            return known[2]
        try:
            rows, issues = known[2]
            parsed = ParsedRecord(tuple([RecordEntry(p, Hash(a, d, e) if a is not None else None, size, line)
                                         for p, a, d, e, size, line in rows]),
                                  tuple([RecordIssue(*issue) for issue in issues]))
        except (TypeError, ValueError):
            return None
        self._records[path] = (known[0], allow_hex, parsed)  # the rows as loaded are not kept twice
        return parsed

    def remember_record(self, path: str, st: os.stat_result, allow_hex: bool, parsed: ParsedRecord,
                        read_at: int) -> None:
        """Keep a parse for next time, under the same racy-clean rule as digests."""
        if max(st.st_mtime_ns, st.st_ctime_ns) >= read_at - RACY_NS or not signature(st):
            return
        self._records[path] = (signature(st), allow_hex, parsed)  # flattened when saved
        self._dirty = True

    @staticmethod
    def _flat(parsed: ParsedRecord | tuple) -> tuple:
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
        if max(st.st_mtime_ns, st.st_ctime_ns) >= hashed_at - RACY_NS:
            return
        head = signature(st)
        if head:
            self._entries[path] = head + tag(algorithm, digest)  # one dict store: atomic under the GIL
            self._dirty = True

    def retain(self, live) -> None:
        """Forget files no longer audited (uninstalled), so the cache does not grow forever."""
        if self._dirty:
            self._entries = {p: e for p, e in self._entries.items() if p in live}
            self._records = {p: r for p, r in self._records.items() if p in live}

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped."""
        if not self.path or not self._dirty:
            return
        import tempfile

        records = {p: (sig, hexes, self._flat(parsed)) for p, (sig, hexes, parsed) in self._records.items()}
        payload = marshal.dumps((self._entries, records))
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".statcache-", dir=os.path.dirname(self.path))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(FORMAT + xxhash.xxh3_64_digest(payload) + payload)
                os.replace(tmp, self.path)
            except OSError:
                os.unlink(tmp)
                raise
        except OSError:
            pass


class NoCache(StatCache):
    """``--no-cache``: reads nothing, remembers nothing."""

    def __init__(self) -> None:
        super().__init__(None)

    def lookup(self, path, st, algorithm):  # noqa: D102
        return None

    def parsed_record(self, path, st, allow_hex):  # noqa: D102
        return None

    def remember_record(self, path, st, allow_hex, parsed, read_at):  # noqa: D102
        pass

    def store(self, path, st, algorithm, digest, hashed_at):  # noqa: D102
        pass

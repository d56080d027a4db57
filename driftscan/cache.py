"""A stat cache: (size, mtime_ns, ctime_ns, inode, device) → the content digest last observed.

It stores what a file's content *was* when hashed, never a verdict: every run still compares
that digest with what RECORD (or a manifest) expects now, so a changed RECORD cannot be hidden
by the cache. It lives in the user's cache directory, never in the audited tree.

Trust rule, racy-timestamp-safe in the manner of git's index: an entry is used only if the
file's mtime and ctime are both older than the moment hashing began minus ``RACY_NS``; a file
modified within that window of being hashed (or on a filesystem with coarse timestamps) is
hashed again. An edit that restores size and mtime with ``os.utime`` still changes ctime, and a
replace-by-rename changes the inode. What it cannot see: someone who resets ctime (by moving the
system clock) or writes to the block device. ``--no-cache`` is the paranoid mode.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import time

FORMAT = "driftscan-statcache-1"
RACY_NS = 2_000_000_000  # two seconds: covers FAT/SMB timestamp granularity


def user_cache_dir() -> str:
    if os.environ.get("DRIFTSCAN_CACHE_DIR"):
        return os.environ["DRIFTSCAN_CACHE_DIR"]
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA", os.path.expanduser("~")), "driftscan", "cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/driftscan")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "driftscan")


def signature(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


class StatCache:
    """One environment's cache file. Thread-safe for the verify thread pool."""

    def __init__(self, path: str | None):
        self.path = path
        self._entries: dict[str, list] = {}
        self._lock = threading.Lock()
        self._dirty = False
        self.hits = 0
        self.misses = 0
        if path:
            self._load()

    @classmethod
    def for_target(cls, key: str, directory: str | None = None) -> StatCache:
        name = hashlib.sha256(os.path.realpath(key).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return cls(os.path.join(directory or user_cache_dir(), "statcache", name + ".json"))

    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:  # type: ignore[arg-type]
                data = json.load(f)
        except (OSError, ValueError):
            return  # absent or damaged: start empty, it is only a cache
        if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("files"), dict):
            entries = {}
            for path, entry in data["files"].items():
                if isinstance(entry, list) and len(entry) == 8 and isinstance(entry[6], str):
                    try:
                        entries[path] = [*entry[:6], bytes.fromhex(entry[6]), entry[7]]  # digests kept as bytes
                    except ValueError:
                        continue
            self._entries = entries

    def fresh(self, path: str, st: os.stat_result, algorithm: str, digest: bytes) -> bool:
        """The hot path of a warm audit: does the cached digest for this unchanged file equal ``digest``?"""
        entry = self._entries.get(path)
        if (entry is None or entry[0] != st.st_size or entry[1] != st.st_mtime_ns or entry[2] != st.st_ctime_ns
                or entry[3] != st.st_ino or entry[4] != st.st_dev or entry[5] != algorithm
                or max(entry[1], entry[2]) >= entry[7] - RACY_NS):
            self.misses += 1
            return False
        self.hits += 1
        return entry[6] == digest

    def lookup(self, path: str, st: os.stat_result, algorithm: str) -> bytes | None:
        entry = self._entries.get(path)
        if entry is None or len(entry) != 8:
            self.misses += 1
            return None
        size, mtime, ctime, ino, dev, algo, digest, hashed_at = entry
        if (size, mtime, ctime, ino, dev) != signature(st) or algo != algorithm:
            self.misses += 1
            return None
        if max(mtime, ctime) >= hashed_at - RACY_NS:
            self.misses += 1  # racily clean: it may have changed within the timestamp granularity
            return None
        self.hits += 1
        return digest

    def store(self, path: str, st: os.stat_result, algorithm: str, digest: bytes, hashed_at: int) -> None:
        with self._lock:
            self._entries[path] = [*signature(st), algorithm, digest, hashed_at]
            self._dirty = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped."""
        if not self.path or not self._dirty:
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".statcache-", dir=os.path.dirname(self.path))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                files = {p: [*e[:6], e[6].hex(), e[7]] for p, e in self._entries.items()}
                json.dump({"format": FORMAT, "written": time.time_ns(), "files": files}, f, separators=(",", ":"))
            os.replace(tmp, self.path)
        except OSError:
            pass


class NoCache(StatCache):
    def __init__(self) -> None:
        super().__init__(None)

    def fresh(self, path, st, algorithm, digest):  # noqa: D102
        return False

    def lookup(self, path, st, algorithm):  # noqa: D102
        return None

    def store(self, path, st, algorithm, digest, hashed_at):  # noqa: D102
        pass

"""The scan's result cache: a file whose signature is unchanged gets its earlier row unread.

One cache file per set of scanned paths, in a directory the caller names (the CLI: the user
cache directory's ``scan/``; never inside a scanned tree: such a directory disables the cache).
It is keyed by the scan's *code signature* (scan.py ``_code_signature``: the rules and their
source files, the prefilter, the size cap, the inspect package, the interpreter, libcst) and the
version the caller passes: a scan with anything else different starts empty and replaces it.

An entry is a file's signature — (size, mtime_ns, ctime_ns, inode, device) — and its row
(findings, bytes, parsed, no error). It is used only when the signature equals the file's
current one, and stored only when the file's mtime and ctime were both more than ``RACY_NS``
older than the scan's start (git's racy-clean rule: a file changed while it was read is read
again next time). Rows of files that were lost (timeout, crash, budget) or had an error are
never stored. The file is JSON behind a format line with a BLAKE2 checksum; anything that is
off — damage, another format, a value of the wrong type in an entry — means a miss, never an
error: it is only a cache. Its checksum catches damage, not forgery; ``--no-cache`` trusts nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping

from ..fileio import inside, read_regular
from ..model import Finding, Severity

FORMAT = b"driftscan-scancache-1"
RACY_NS = 2_000_000_000
MAX_BYTES = 256 << 20  # a cache file larger than this is not read
_SEVERITIES = {s.value: s for s in Severity}


def _signature(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _finding(raw) -> Finding | None:
    if type(raw) is not list or len(raw) != 8:
        return None
    code, name, severity, line, column, message, snippet, artifact = raw
    if not (type(code) is str and type(name) is str and type(line) is int and type(column) is int
            and type(message) is str and type(snippet) is str and (artifact is None or type(artifact) is str)):
        return None
    level = _SEVERITIES.get(severity) if type(severity) is str else None
    if level is None:
        return None
    return Finding(code, name, level, line, column, message, snippet, artifact)


class ResultCache:
    """Rows of an earlier scan by file signature (see the module docstring)."""

    def __init__(self, directory: str, version: str = "") -> None:
        self.directory = directory
        self.version = version
        self.path: str | None = None
        self._key = ""
        self._entries: dict[str, list] = {}
        self._dirty = False
        self.hits = 0
        self.misses = 0

    def open(self, roots: Iterable[str], key: str) -> bool:
        """Load the cache of a scan of ``roots`` with code signature ``key``; False (no cache
        for this scan) when the cache directory lies inside one of the roots."""
        roots = [os.path.realpath(r) for r in roots]
        if any(inside(root, self.directory) for root in roots):
            return False
        name = hashlib.sha256("\0".join(sorted(roots)).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self.path = os.path.join(self.directory, name + ".json")
        self._key = hashlib.sha256(f"{self.version}\0{key}".encode("utf-8", "surrogateescape")).hexdigest()
        self._entries = self._load()
        return True

    def _load(self) -> dict[str, list]:
        try:
            data = read_regular(self.path, MAX_BYTES, what="cache")  # type: ignore[arg-type]
        except OSError:
            return {}
        head, _, payload = data.partition(b"\n")
        parts = head.split(b" ")
        if len(parts) != 2 or parts[0] != FORMAT or hashlib.blake2b(payload, digest_size=16).hexdigest().encode() != parts[1]:
            return {}
        try:
            loaded = json.loads(payload)
        except (ValueError, RecursionError, MemoryError):
            return {}
        if type(loaded) is not dict or loaded.get("key") != self._key or type(loaded.get("entries")) is not dict:
            return {}
        return loaded["entries"]

    def lookup(self, path: str, st: os.stat_result):
        """The row stored for ``path`` if its signature is ``st``'s, else None."""
        entry = self._entries.get(path)
        row = self._row(path, entry, st) if entry is not None else None
        if row is None:
            self.misses += 1
        else:
            self.hits += 1
        return row

    @staticmethod
    def _row(path: str, entry, st: os.stat_result):
        if type(entry) is not list or len(entry) != 4 or entry[0] != _signature(st):
            return None
        _, raw_findings, nbytes, parsed = entry
        if type(raw_findings) is not list or type(nbytes) is not int or type(parsed) is not bool:
            return None
        findings = [_finding(f) for f in raw_findings]
        if any(f is None for f in findings):
            return None
        return (path, findings, nbytes, parsed, None)

    def store(self, path: str, st: os.stat_result, row, started_ns: int) -> None:
        """Remember a file's row, unless the file changed too shortly before ``started_ns``."""
        if max(st.st_mtime_ns, st.st_ctime_ns) >= started_ns - RACY_NS:
            return
        _, findings, nbytes, parsed, error = row
        if error is not None or findings is None:
            return
        self._entries[path] = [_signature(st), [[f.code, f.name, f.severity.value, f.line, f.column, f.message,
                                                 f.snippet, f.artifact_pattern] for f in findings], nbytes, parsed]
        self._dirty = True

    def save(self, live: Mapping[str, object] | Iterable[str]) -> None:
        """Write the entries of the files still scanned (``live``), atomically; a cache that
        cannot be written is silently skipped."""
        if self.path is None:
            return
        entries = {p: e for p, e in self._entries.items() if p in live}
        if not self._dirty and len(entries) == len(self._entries):
            return
        payload = json.dumps({"key": self._key, "entries": entries}, separators=(",", ":")).encode()
        data = FORMAT + b" " + hashlib.blake2b(payload, digest_size=16).hexdigest().encode() + b"\n" + payload
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".scancache-", dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self.path)
            except OSError:
                os.unlink(tmp)
                raise
        except OSError:
            pass
        self._entries, self._dirty = entries, False

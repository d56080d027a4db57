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

The file also remembers which rules the scan's *selection* (select, ignore, plugins, extra rule
modules, unused-noqa, prefilter, size cap, interpreter, ``sys.path``) chose and the key they made,
with the signatures of every file that decided it (*guards*): the rules' and the inspect
package's sources, libcst, the built-in rules directory and its modules, and with plugins each
``sys.path`` directory and the ``entry_points.txt`` of every distribution in it. A later scan with
the same selection whose guards all still match (``recall``) knows the key without importing a
rule, and when every file's row is still valid (warmscan.py) nothing imports libcst at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any, cast

from ..caches.keys import cache_key
from ..caches.racy import settled, settled_stat
from ..caches.location import write_cache_file
from ..fs.reader import inside, read_regular
from ..core.values import Finding, Severity
from .files import Row

FORMAT = b"driftscan-scancache-2"
MAX_BYTES = 256 << 20  # a cache file larger than this is not read
MEMOS = 8  # selections remembered per cache file
_SEVERITIES = {s.value: s for s in Severity}


def _signature(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


_BUILTIN_RULES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules")


def selection_id(select: Iterable[str], ignore: Iterable[str], plugins: bool, extra_rule_modules: Iterable[str],
                 unused_noqa: bool, prefilter: bool, max_bytes: int | None) -> str:
    """What chooses the rules and shapes each row, besides the rules' code (see ``recall``)."""
    return cache_key(sys.version, list(sys.path), list(select), list(ignore), plugins, list(extra_rule_modules),
                     unused_noqa, prefilter, max_bytes)


def guard_paths(sources: Iterable[str], plugins: bool) -> list[str]:
    """The files whose signatures decide the rules a selection gets: ``sources`` (the rules' and
    the inspect package's), the built-in rules directory and its modules, and with plugins every
    ``sys.path`` directory and the entry-point files of the distributions in it (a plugin
    installed, removed or changed changes one of them)."""
    paths = set(sources)
    paths.add(_BUILTIN_RULES)
    try:
        paths.update(os.path.join(_BUILTIN_RULES, n) for n in os.listdir(_BUILTIN_RULES) if n.endswith(".py"))
    except OSError:
        pass
    if plugins:
        for entry in sys.path:
            directory = os.path.abspath(entry or ".")
            paths.add(directory)
            try:
                names = os.listdir(directory)
            except OSError:
                continue
            paths.update(os.path.join(directory, n, "entry_points.txt") for n in names
                         if n.endswith((".dist-info", ".egg-info")))
    return sorted(paths)


def _guard(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # recorded as absent: it must still be absent
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode]


def _read_document(path: str) -> object:
    """The JSON document behind a cache file's format line and checksum; None when there is
    none, or it is damaged or of another format."""
    try:
        data = read_regular(path, MAX_BYTES, what="cache")
    except OSError:
        return None
    head, _, payload = data.partition(b"\n")
    parts = head.split(b" ")
    if len(parts) != 2 or parts[0] != FORMAT or hashlib.blake2b(payload, digest_size=16).hexdigest().encode() != parts[1]:
        return None
    try:
        return json.loads(payload)
    except (ValueError, RecursionError, MemoryError):
        return None


def _write_document(directory: str, path: str, document: dict[str, object]) -> None:
    """Write ``document`` to ``path`` (in ``directory``) atomically behind its checksum; a cache
    that cannot be written is silently skipped."""
    payload = json.dumps(document, separators=(",", ":")).encode()
    data = FORMAT + b" " + hashlib.blake2b(payload, digest_size=16).hexdigest().encode() + b"\n" + payload
    write_cache_file(path, data, prefix=".scancache-")


def _guards_hold(guards: object) -> bool:
    return type(guards) is list and all(
        type(g) is list and len(g) == 2 and type(g[0]) is str and _guard(g[0]) == g[1] for g in guards)


def _finding(raw: object) -> Finding | None:
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
        self._entries: dict[str, list[Any]] = {}  # path -> a JSON row (``store``), checked when read
        self._dirty = False
        self._memos: dict[str, object] = {}
        self.hits = 0
        self.misses = 0

    def _place(self, roots: Iterable[str]) -> bool:
        roots = [os.path.realpath(r) for r in roots]
        if any(inside(root, self.directory) for root in roots):
            return False
        name = hashlib.sha256("\0".join(sorted(roots)).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self.path = os.path.join(self.directory, name + ".json")
        return True

    def _hashed(self, key: str) -> str:
        return hashlib.sha256(f"{self.version}\0{key}".encode("utf-8", "surrogateescape")).hexdigest()

    def open(self, roots: Iterable[str], key: str) -> bool:
        """Load the cache of a scan of ``roots`` with code signature ``key``; False (no cache
        for this scan) when the cache directory lies inside one of the roots."""
        if not self._place(roots):
            return False
        self._key = self._hashed(key)
        loaded = self._load()
        same = loaded.get("key") == self._key
        self._entries = loaded["entries"] if same else {}
        memos = loaded.get("memos") if same else None
        self._memos = memos if type(memos) is dict else {}
        return True

    def recall(self, roots: Iterable[str], selection: str) -> tuple[str, ...] | None:
        """The rule codes an earlier scan of ``roots`` with this ``selection`` chose, when every
        file that decided them is unchanged (then the cache is open with that scan's key and
        entries, as ``open`` would have left it); None otherwise."""
        if not self._place(roots):
            return None
        loaded = self._load()
        memos = loaded.get("memos")
        memo = memos.get(self._hashed(selection)) if type(memos) is dict else None
        if type(memo) is not dict:
            return None
        codes, guards = memo.get("codes"), memo.get("guards")
        if type(codes) is not list or not all(type(c) is str for c in codes) or not _guards_hold(guards):
            return None
        self._key, self._entries, self._memos = loaded["key"], loaded["entries"], cast("dict[str, object]", memos)
        return tuple(codes)

    def remember(self, selection: str, codes: Iterable[str], sources: Iterable[str], plugins: bool) -> None:
        """Record which rules ``selection`` chose, guarded by the files that decided it
        (``guard_paths``); the last ``MEMOS`` selections are kept (a scan from a script and one
        from ``python -m`` differ in ``sys.path``)."""
        memo = {"codes": list(codes), "guards": [[p, _guard(p)] for p in guard_paths(sources, plugins)]}
        name = self._hashed(selection)
        if self._memos.get(name) != memo:
            others = [(k, v) for k, v in self._memos.items() if k != name][-(MEMOS - 1):]
            self._memos, self._dirty = {**dict(others), name: memo}, True

    def _load(self) -> dict[str, Any]:
        """The cache file's content, ``{}`` when there is none or it is damaged; ``entries`` is a dict."""
        loaded = _read_document(self.path) if self.path is not None else None  # placed: a path
        if type(loaded) is not dict or type(loaded.get("key")) is not str or type(loaded.get("entries")) is not dict:
            return {}
        return loaded

    def lookup(self, path: str, st: os.stat_result) -> Row | None:
        """The row stored for ``path`` if its signature is ``st``'s, else None."""
        entry = self._entries.get(path)
        row = self._row(path, entry, st) if entry is not None else None
        if row is None:
            self.misses += 1
        else:
            self.hits += 1
        return row

    @staticmethod
    def _row(path: str, entry: object, st: os.stat_result) -> Row | None:
        if type(entry) is not list or len(entry) != 4 or entry[0] != _signature(st):
            return None
        _, raw_findings, nbytes, parsed = entry
        if type(raw_findings) is not list or type(nbytes) is not int or type(parsed) is not bool:
            return None
        findings = _findings(raw_findings)
        return None if findings is None else (path, findings, nbytes, parsed, None)

    def store(self, path: str, st: os.stat_result, row: Row, started_ns: int) -> None:
        """Remember a file's row, unless the file changed too shortly before ``started_ns``."""
        if not settled_stat(st, started_ns):
            return
        _, findings, nbytes, parsed, error = row
        if error is not None or findings is None:
            return
        self._entries[path] = [_signature(st), [_pack(f) for f in findings], nbytes, parsed]
        self._dirty = True

    def save(self, live: Mapping[str, object] | Iterable[str]) -> None:
        """Write the entries of the files still scanned (``live``), atomically; a cache that
        cannot be written is silently skipped."""
        if self.path is None:
            return
        entries = {p: e for p, e in self._entries.items() if p in live}
        if not self._dirty and len(entries) == len(self._entries):
            return
        document: dict[str, object] = {"key": self._key, "entries": entries}
        if self._memos:
            document["memos"] = self._memos
        _write_document(self.directory, self.path, document)
        self._entries, self._dirty = entries, False


def _pack(finding: Finding) -> list[object]:
    return [finding.code, finding.name, finding.severity.value, finding.line, finding.column, finding.message,
            finding.snippet, finding.artifact_pattern]


def _findings(raw: object) -> list[Finding] | None:
    if type(raw) is not list:
        return None
    found: list[Finding] = []
    for item in raw:
        finding = _finding(item)
        if finding is None:
            return None
        found.append(finding)
    return found


class OutcomeMemo:
    """The audit's inspect stage remembered (lint/drifts.py): for one set of drifted files and
    one selection, each file's findings, the dump writers and the scan's errors. Used only when
    every file's signature and every guard (``guard_paths``) is the one recorded, and stored only
    when every file changed more than ``RACY_NS`` before the stage began; a damaged or forged
    file is a miss. One file per selection and set of files, in the directory the caller names."""

    def __init__(self, directory: str, selection: str, files: Iterable[str]) -> None:
        files = sorted(files)
        digest = hashlib.sha256("\0".join([selection, *files]).encode("utf-8", "surrogateescape")).hexdigest()
        self.directory = directory
        self.path = os.path.join(directory, digest[:32] + ".json")
        self.files = files
        self.started_ns = time.time_ns()

    def _stats(self) -> dict[str, list[int]] | None:
        out = {}
        for path in self.files:
            try:
                out[path] = _signature(os.stat(path))
            except OSError:
                return None
        return out

    def recall(self) -> tuple[dict[str, list[Finding]], list[tuple[str, Finding]], list[tuple[str, str]]] | None:
        """(findings by file, (file, finding) of every dump writer, (file, error) of the scan), or None."""
        doc = _read_document(self.path)
        if type(doc) is not dict or doc.get("files") != self._stats() or not _guards_hold(doc.get("guards")):
            return None
        by_path, writers, errors = doc.get("by_path"), doc.get("writers"), doc.get("errors")
        if type(by_path) is not dict or type(writers) is not list or type(errors) is not list:
            return None
        found: dict[str, list[Finding]] = {}
        for path, raw in by_path.items():
            findings = _findings(raw)
            if path not in self.files or findings is None:
                return None
            found[path] = findings
        wrote: list[tuple[str, Finding]] = []
        for item in writers:
            if type(item) is not list or len(item) != 2 or item[0] not in self.files:
                return None
            finding = _finding(item[1])
            if finding is None or not finding.artifact_pattern:
                return None
            wrote.append((item[0], finding))
        if not all(type(e) is list and len(e) == 2 and all(type(x) is str for x in e) for e in errors):
            return None
        return found, wrote, [(e[0], e[1]) for e in errors]

    def store(self, by_path: Mapping[str, Iterable[Finding]], writers: Iterable[tuple[str, Finding]],
              errors: Iterable[tuple[str, str]], sources: Iterable[str], plugins: bool) -> None:
        """Remember the stage's outcome (see the class docstring); silently skipped when a file is
        too recent or the cache cannot be written."""
        stats = self._stats()
        if stats is None or any(not settled(sig[1], sig[2], self.started_ns) for sig in stats.values()):
            return
        doc: dict[str, object] = {"files": stats, "guards": [[p, _guard(p)] for p in guard_paths(sources, plugins)],
               "by_path": {p: [_pack(f) for f in fs] for p, fs in by_path.items() if p in stats},
               "writers": [[p, _pack(f)] for p, f in writers], "errors": [list(e) for e in errors]}
        _write_document(self.directory, self.path, doc)


class ContentMemo:
    """Findings by file content: for one selection of rules, ``(path, sha256 of the content)`` →
    the findings (changes.py: the originals of drifted files, whose content RECORD vouches for).
    The content is the key, so no racy window applies; the guards (``guard_paths``) hold for the
    whole file, which is replaced when they do not. A damaged or forged file is empty."""

    def __init__(self, directory: str, selection: str) -> None:
        digest = hashlib.sha256(selection.encode("utf-8", "surrogateescape")).hexdigest()
        self.directory = directory
        self.path = os.path.join(directory, "content-" + digest[:32] + ".json")
        self._entries: dict[str, list[object]] = {}  # name -> packed findings (``_pack``), checked when read
        self._guards: list[list[object]] | None = None
        self._dirty = False
        self._load()

    def _load(self) -> None:
        doc = _read_document(self.path)
        if type(doc) is dict and type(doc.get("entries")) is dict and _guards_hold(doc.get("guards")):
            self._entries, self._guards = doc["entries"], doc["guards"]

    @staticmethod
    def _name(path: str, content: bytes) -> str:
        return path + "\0" + hashlib.sha256(content).hexdigest()

    def get(self, path: str, content: bytes) -> list[Finding] | None:
        return _findings(self._entries.get(self._name(path, content)))

    def put(self, path: str, content: bytes, findings: Iterable[Finding], sources: Iterable[str],
            plugins: bool) -> None:
        guards: list[list[object]] = [[p, _guard(p)] for p in guard_paths(sources, plugins)]
        if guards != self._guards:  # other rules' code than the entries were made with: start over
            self._entries, self._guards = {}, guards
        self._entries[self._name(path, content)] = [_pack(f) for f in findings]
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        _write_document(self.directory, self.path, {"guards": self._guards, "entries": self._entries})
        self._dirty = False

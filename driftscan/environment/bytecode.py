"""Bytecode that does not match its source: a ``__pycache__`` entry Python will run instead of
the drifted ``.py`` beside it (docs/environments.md, "Bytecode that does not match its source").

Python's source loader (``importlib._bootstrap_external.SourceLoader.get_code``) reads
``<dir>/__pycache__/<stem>.<tag>[.opt-N].pyc`` and uses it when its 16-byte header passes:

- bytes 0-3, the magic number, are the interpreter's own (else the file is recompiled);
- bytes 4-7, the flags: 0 is a timestamp pyc, then bytes 8-11 must equal ``int(st_mtime) &
  0xFFFFFFFF`` of the source and bytes 12-15 ``st_size & 0xFFFFFFFF``; bit 0 set is a hash pyc
  (PEP 552) whose bytes 8-15 are ``importlib.util.source_hash`` of the source it was compiled
  from, checked against the source only when bit 1 (check_source) is set; any other bit makes
  the file invalid (recompiled).

A pyc that passes is run without a look at the source's content. Whether it was compiled from
other content is decided here only from what the tree proves (``stale``'s basis), never guessed:
nothing is run, and nothing is reported when none of them holds.
"""

from __future__ import annotations

import enum
import hashlib
import importlib.util
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..core.values import DriftKind, FileCheck, FileState, Hash
from ..fs.confined import lstat_below, open_dir, parts_of, unlink_below
from ..fs.reader import read_head, read_regular
from .ownership import Ownership

HEADER = 16
READ_LIMIT = 64 << 20  # bytes of a source or a pyc hashed here; a larger one is not judged
_OWN_TAG = sys.implementation.cache_tag
_U32 = 0xFFFFFFFF


class PycKind(str, enum.Enum):
    TIMESTAMP = "timestamp"
    UNCHECKED_HASH = "unchecked-hash"
    CHECKED_HASH = "checked-hash"


class Basis(str, enum.Enum):
    """How it is known that the pyc was compiled from other content than the source has now."""

    RECORD_HASH = "record-hash"  # the pyc still has the bytes its RECORD row hashes; the source does not
    INSTALL_TIME = "install-time"  # the installer compiled it (a RECORD row) no later than it wrote RECORD
    SAME_SECOND = "same-second"  # the source's mtime is later than the pyc's, in the second the header holds
    SOURCE_HASH = "source-hash"  # a hash pyc of this interpreter's tag: its hash is not the source's


@dataclass(frozen=True)
class Header:
    magic: bytes
    flags: int
    field1: int  # a timestamp pyc: the source's mtime (seconds, 32 bits); else half the source hash
    field2: int  # its size (32 bits); else the other half
    raw: bytes

    @property
    def kind(self) -> PycKind | None:
        if self.flags == 0:
            return PycKind.TIMESTAMP
        if self.flags == 1:
            return PycKind.UNCHECKED_HASH
        if self.flags == 3:
            return PycKind.CHECKED_HASH
        return None  # other bits: invalid, Python recompiles it


def parse_header(data: bytes) -> Header | None:
    if len(data) < HEADER:
        return None
    return Header(data[:4], int.from_bytes(data[4:8], "little"), int.from_bytes(data[8:12], "little"),
                  int.from_bytes(data[12:16], "little"), data[:HEADER])


def pyc_tag(name: str) -> str:
    """``mod.cpython-312.opt-1.pyc`` → ``cpython-312``."""
    return name.split(".")[1] if name.count(".") >= 2 else ""


def magic_accepted(magic: bytes, tag: str) -> bool:
    """Whether the interpreter of ``tag`` takes this magic number: exactly for the interpreter
    driftscan runs on; for another, every CPython 3 magic has the form ``<n ≥ 3000 LE>\\r\\n``."""
    if tag == _OWN_TAG:
        return magic == importlib.util.MAGIC_NUMBER
    return magic[2:] == b"\r\n" and int.from_bytes(magic[:2], "little") >= 3000


def timestamp_matches(header: Header, st: os.stat_result) -> bool:
    """The header check ``_validate_timestamp_pyc`` makes: seconds of the float ``st_mtime``
    truncated by ``int()`` (as the loader does: not ``st_mtime_ns // 10**9``, which can differ
    where the float rounds up), and the size, each cut to 32 bits."""
    return header.field1 == int(st.st_mtime) & _U32 and header.field2 == st.st_size & _U32


def pycs_of(source: str, listings: dict[str, list[str]] | None = None) -> Iterator[str]:
    """The ``__pycache__`` files Python may read for ``source``: ``<stem>.<tag>[.opt-N].pyc``.
    ``listings``: each ``__pycache__`` listed once for many sources of one directory."""
    directory, name = os.path.split(source)
    stem = name[:-3]
    cache = os.path.join(directory, "__pycache__")
    names = listings.get(cache) if listings is not None else None
    if names is None:
        try:
            names = sorted(os.listdir(cache))
        except OSError:
            names = []
        if listings is not None:
            listings[cache] = names
    for n in names:
        if n.startswith(stem + ".") and n.endswith(".pyc") and n.count(".") >= 2:
            yield os.path.join(cache, n)


@dataclass(frozen=True)
class Stale:
    pyc: str
    source: str
    kind: PycKind
    basis: Basis
    header: Header
    pyc_stat: os.stat_result
    source_stat: os.stat_result

    def evidence(self) -> str:
        used = ("its header holds the source's current modification second and size, so Python runs it "
                "without reading the source" if self.kind is PycKind.TIMESTAMP
                else "an unchecked hash pyc: Python runs it without reading the source")
        why = {
            Basis.RECORD_HASH: "it still has the bytes its RECORD row lists while the source no longer has "
                               "its recorded content",
            Basis.INSTALL_TIME: "the installer compiled it (its RECORD lists it, and it was written no later "
                                "than that RECORD) from the recorded content, which the source no longer has",
            Basis.SAME_SECOND: "the source was modified after it was written, within the second its header "
                               "records",
            Basis.SOURCE_HASH: "its source hash is not the hash of the source's content",
        }[self.basis]
        return f"bytecode compiled from other content than {os.path.basename(self.source)} has: {why}; {used}"

    def check(self, source_check: FileCheck) -> FileCheck:
        expected = FileState(source=self.source, size=self.source_stat.st_size,
                             mtime_ns=self.source_stat.st_mtime_ns)
        actual = FileState(type="file", size=self.pyc_stat.st_size, mtime_ns=self.pyc_stat.st_mtime_ns,
                           bytecode=self.kind.value, basis=self.basis.value)
        if self.kind is PycKind.TIMESTAMP:
            actual["header_mtime"] = self.header.field1
            actual["header_size"] = self.header.field2
        return FileCheck(DriftKind.STALE_BYTECODE, self.pyc, source_check.root, source_check.distribution,
                         expected, actual, self.evidence())


def judge(pyc: str, source: str, source_st: os.stat_result, own: Ownership | None,
          record_mtime_ns: int | None, root: str | None = None) -> Stale | None:
    """The stale pyc of a drifted ``source`` (its content differs from its RECORD row), or None
    when Python would not run ``pyc`` or nothing proves it was compiled from other content.
    ``root``: a pyc that resolves outside it (a ``__pycache__`` linked elsewhere) is not read."""
    try:
        pyc_st = os.lstat(pyc)
        if not stat.S_ISREG(pyc_st.st_mode):
            return None
        head, _ = read_head(pyc, HEADER, follow=False, root=root)
    except OSError:
        return None
    header = parse_header(head)
    if header is None or header.kind is None or not magic_accepted(header.magic, pyc_tag(os.path.basename(pyc))):
        return None
    kind = header.kind
    if kind is PycKind.CHECKED_HASH:
        return None  # Python hashes the source and recompiles on a mismatch
    if kind is PycKind.TIMESTAMP and not timestamp_matches(header, source_st):
        return None  # Python recompiles it at the next import
    basis = _basis(pyc, pyc_st, source, source_st, header, own, record_mtime_ns)
    return Stale(pyc, source, kind, basis, header, pyc_st, source_st) if basis is not None else None


def may_run_instead(source: str, source_st: os.stat_result, root: str | None = None) -> bool:
    """Whether some pyc of ``source`` has a header Python would accept for it as it is now (a
    timestamp pyc matching its mtime second and size, or an unchecked hash pyc): the one case in
    which a modified ``source`` can have a stale pyc, for a caller that settles files one by one
    (the warm audit) and leaves that case to the full pass."""
    for pyc in pycs_of(source):
        try:
            if not stat.S_ISREG(os.lstat(pyc).st_mode):
                continue
            head, _ = read_head(pyc, HEADER, follow=False, root=root)
        except OSError:
            continue
        header = parse_header(head)
        if header is None or header.kind is None or header.kind is PycKind.CHECKED_HASH:
            continue
        if header.kind is PycKind.UNCHECKED_HASH or timestamp_matches(header, source_st):
            return True
    return False


def _basis(pyc: str, pyc_st: os.stat_result, source: str, source_st: os.stat_result, header: Header,
           own: Ownership | None, record_mtime_ns: int | None) -> Basis | None:
    if header.kind is PycKind.UNCHECKED_HASH and pyc_tag(os.path.basename(pyc)) == _OWN_TAG:
        try:
            data = read_regular(source, READ_LIMIT, what="source file", follow=False)
        except OSError:
            return None
        return Basis.SOURCE_HASH if importlib.util.source_hash(data) != header.raw[8:16] else None
    rows = own.rows_of(pyc) if own is not None else []
    for i in rows:
        recorded = own.hash(i) if own is not None else None
        if recorded is not None and _digest_matches(pyc, recorded):
            return Basis.RECORD_HASH
    if rows and record_mtime_ns is not None and pyc_st.st_mtime_ns <= record_mtime_ns:
        return Basis.INSTALL_TIME
    # The race itself: the source written, compiled, written again, all in the second the header
    # holds. A source dated in the future (its second is not the pyc's) is not taken for one.
    if header.kind is PycKind.TIMESTAMP and source_st.st_mtime_ns > pyc_st.st_mtime_ns \
            and pyc_st.st_mtime_ns // 1_000_000_000 & _U32 == header.field1:
        return Basis.SAME_SECOND
    return None


def _digest_matches(path: str, recorded: Hash) -> bool:
    if recorded.encoding != "base64" or recorded.algorithm not in hashlib.algorithms_available:
        return False
    try:
        data = read_regular(path, READ_LIMIT, what="pyc", follow=False)
    except OSError:
        return False
    return hashlib.new(recorded.algorithm, data).digest() == recorded.digest


def stale_bytecode(checks: Iterable[FileCheck], own: Ownership | None = None) -> list[FileCheck]:
    """A ``stale-bytecode`` check for each pyc Python would run instead of a modified ``.py``."""
    out: list[FileCheck] = []
    listings: dict[str, list[str]] = {}
    for c in checks:
        if c.kind is not DriftKind.MODIFIED or not c.path.endswith(".py") or not c.regular_file:
            continue
        try:
            source_st = os.lstat(c.path)
        except OSError:
            continue
        if not stat.S_ISREG(source_st.st_mode):
            continue
        record_mtime_ns = None
        if c.distribution is not None:
            try:
                record_mtime_ns = os.lstat(os.path.join(c.distribution.metadata_dir, "RECORD")).st_mtime_ns
            except OSError:
                pass
        for pyc in pycs_of(c.path, listings):
            found = judge(pyc, c.path, source_st, own, record_mtime_ns, c.root)
            if found is not None:
                out.append(found.check(c))
    return out


def _written_matches(header: Header | None, name: str, st: os.stat_result, data: bytes | None) -> bool:
    """Whether Python would run a pyc with ``header`` for a source just written with stat ``st``
    (and content ``data``, when read): what a write must not leave behind."""
    if header is None or header.kind is None or not magic_accepted(header.magic, pyc_tag(name)):
        return False
    if header.kind is PycKind.TIMESTAMP:
        return timestamp_matches(header, st)
    if header.kind is PycKind.UNCHECKED_HASH:
        # Run whatever the source; kept only when it is provably the written content's.
        return not (pyc_tag(name) == _OWN_TAG and data is not None and importlib.util.source_hash(data) == header.raw[8:16])
    return False  # a checked hash pyc: Python checks it against the new content itself


def remove_stale_after_write(base: str, rel: str, data: bytes | None = None) -> tuple[list[str], list[str]]:
    """After ``base/rel`` (a ``.py``) was written: remove each ``__pycache__/<stem>.*.pyc`` of it
    that Python would still run instead of the new content — a timestamp pyc whose header holds the
    new file's modification second and size (compiled within that second from what was there
    before), an unchecked hash pyc not provably of the new content. Reached below ``base`` without
    following a symlink (``fs.confined``), nothing else touched. (removed paths, why others could
    not be)."""
    removed: list[str] = []
    failed: list[str] = []
    if not rel.endswith(".py"):
        return removed, failed
    try:
        parts = parts_of(rel)
        st = lstat_below(base, rel)
        cache = open_dir(base, [*parts[:-1], "__pycache__"])
    except (OSError, ValueError):
        return removed, failed  # no __pycache__ (or none reachable below base): nothing to leave behind
    try:
        names = sorted(n for n in os.listdir(cache)
                       if n.startswith(parts[-1][:-3] + ".") and n.endswith(".pyc") and n.count(".") >= 2)
    finally:
        os.close(cache)
    for name in names:
        pyc_rel = "/".join([*parts[:-1], "__pycache__", name])

        def still_matches(fd: int, name: str = name) -> str | None:
            header = parse_header(os.read(fd, HEADER))
            return None if _written_matches(header, name, st, data) else "compiled for this content: kept"

        why = unlink_below(base, pyc_rel, still_matches)
        path = os.path.join(base, *pyc_rel.split("/"))
        if why is None:
            removed.append(path)
        elif why != "compiled for this content: kept":
            failed.append(f"{path}: {why}")
    return removed, failed

"""uv's archive pointers: which wheel (by the digest uv computed of it) each cache archive came from.

Beside each wheel-index symlink ``wheels-v*/…/<name>/<version>-<tags>`` (→ ``archive-v*/<id>``)
uv keeps a pointer file, msgpack, that names the archive again and the hashes of the wheel it
unpacked there: ``<stem>.http`` for a wheel downloaded from an index or a URL, ``<stem>.rev`` for
a wheel file on disk (``uv pip install ./x.whl``, ``--find-links DIR``). So a lockfile's wheel
hash leads to an archive, and the archive's own ``*.dist-info/RECORD`` is the wheel's, outside
the audited tree (docs/installers.md §2).

What uv 0.13 writes (checked on 0.13.9; read in uv's source: ``HttpArchivePointer``,
``PathArchivePointer``, ``Archive``):
- ``.http``: the ``Archive`` as msgpack, followed by uv's HTTP cache policy (not msgpack) and its
  length; only the leading msgpack value is read.
- ``.rev``: ``[timestamp, Archive]``.
- ``Archive``: ``[id, hashes, filename, version, size]``, or the same as a map keyed by those
  names (newer uv); ``hashes`` a list of ``{"Sha256": hex}`` (also read: ``[algorithm, hex]`` and
  ``{"algorithm": …, "digest": …}``). A ``.rev`` of a wheel installed without hashes asked for
  holds no hash at all: a pointer with no digests.

The cache is data: a pointer file is read only when it is a regular file of at most 1 MiB (a
FIFO, a symlink or a larger file is not opened or not read), decoded by the bounded decoder, and
taken only when it names the very archive its index symlink leads to and a wheel of the
distribution looked up, at the index entry's version. Anything else is skipped with the reason
(``Rejected``); an unknown layout yields no pointer. Nothing here raises for the cache's sake.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from ...core.values import RecordEntry
from ...formats.msgpack import MsgpackError, decode_prefix
from ...formats.record import parse_record
from ...fs.reader import LIMITS, os_error, read_regular
from .cache import _norm, archive_dirs, index_roots, indexed_archives

MAX_POINTER = 1 << 20  # bytes: uv's pointers are a few hundred
MAX_ENTRIES = 10_000  # entries of one <name>/ directory of the index (uv keeps four per wheel)
SUFFIXES = (".http", ".rev")
# uv's HashAlgorithm, in its declaration order (a serialiser may write a variant's index) and
# the length of each digest in hex.
ALGORITHMS = ("md5", "sha256", "sha384", "sha512", "blake2b")
_HEX_LENGTH = {"md5": 32, "sha256": 64, "sha384": 96, "sha512": 128, "blake2b": 128}
_HEX = re.compile(r"[0-9a-fA-F]+")
_ARCHIVE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True)
class WheelPointer:
    archive: str  # the absolute archive directory, archive-v*/<id>
    entry: str  # the index symlink that leads to it
    pointer: str  # the pointer file beside the symlink
    filename_stem: str  # "1.17.0-py2.py3-none-any": the symlink's name
    digests: dict[str, str]  # algorithm (lower case) → hex digest (lower case) of the wheel uv unpacked
    wheel_filename: str = ""  # the wheel's file name as the pointer gives it
    size: int | None = None  # the wheel's size in bytes, when the pointer gives it


@dataclass(frozen=True)
class Rejected:
    pointer: str  # the pointer file, or the index entry when there is no usable pointer
    reason: str


@dataclass(frozen=True)
class PointerScan:
    pointers: tuple[WheelPointer, ...] = ()
    rejected: tuple[Rejected, ...] = field(default=())


class _Unusable(Exception):
    """Why one pointer file is not taken (never leaves this module)."""


def wheel_pointers(cache_dir: str | None, name: str, version: str | None) -> list[WheelPointer]:
    """The pointers of every wheel of ``name`` ``version`` (None: every version) that uv's wheel
    index holds, from any source: the registry, other indexes, find-links, URLs, wheel files.
    Pointers that cannot be used are left out; ``scan_pointers`` says why."""
    return list(scan_pointers(cache_dir, name, version).pointers)


def scan_pointers(cache_dir: str | None, name: str, version: str | None) -> PointerScan:
    """``wheel_pointers`` with the pointer files (or index entries) skipped and the reason for each."""
    if not cache_dir:
        return PointerScan()
    roots = index_roots(cache_dir)
    linked = {i.entry: i.archive for i in indexed_archives(cache_dir, name, version, roots)}
    archive_roots = {os.path.normpath(r) for r in archive_dirs(cache_dir)}
    prefix = f"{version}-" if version is not None else ""
    pointers: list[WheelPointer] = []
    rejected: list[Rejected] = []
    with_pointer: set[str] = set()
    for root in roots:
        directory = os.path.join(root, _norm(name))
        try:
            with os.scandir(directory) as entries:
                listed = [e.name for _, e in zip(range(MAX_ENTRIES + 1), entries)]
        except OSError:
            continue
        if len(listed) > MAX_ENTRIES:
            rejected.append(Rejected(directory, f"more than {MAX_ENTRIES} entries: not looked at"))
            continue
        names = sorted(n for n in listed if n.startswith(prefix) and n.endswith(SUFFIXES))
        for file_name in names:
            path = os.path.join(directory, file_name)
            entry = os.path.splitext(path)[0]
            with_pointer.add(entry)
            archive = linked.get(entry)
            if archive is None:
                rejected.append(Rejected(path, _no_archive(entry)))
                continue
            try:
                pointers.append(_read_pointer(path, entry, archive, name, archive_roots))
            except _Unusable as why:
                rejected.append(Rejected(path, str(why)))
    for entry in sorted(set(linked) - with_pointer):
        rejected.append(Rejected(entry, "no pointer file (.http or .rev) beside this index entry"))
    return PointerScan(tuple(pointers), tuple(rejected))


def _no_archive(entry: str) -> str:
    try:
        mode = os.lstat(entry).st_mode
        target = os.readlink(entry) if stat.S_ISLNK(mode) else None
    except OSError:
        return "no index symlink beside the pointer"
    if target is None:
        return "the index entry beside the pointer is not a symlink"
    return (f"the index symlink leads to {target!r}, not to an archive directory of this cache "
            "(missing, or elsewhere)")


def _read_pointer(path: str, entry: str, archive: str, name: str, archive_roots: set[str]) -> WheelPointer:
    try:
        data = read_regular(path, MAX_POINTER, what="uv pointer", follow=False)
    except OSError as exc:
        raise _Unusable(f"cannot be read: {_why(exc)}") from None
    try:
        value, _ = decode_prefix(data, max_depth=8, max_items=1_000)
    except MsgpackError as exc:
        raise _Unusable(f"not a pointer uv writes: {exc}") from None
    if path.endswith(".rev"):
        value = _field(value, 1, "archive")  # [timestamp, archive]
    archive_id = _field(value, 0, "id")
    hashes = _field(value, 1, "hashes")
    filename = _field(value, 2, "filename")
    bucket = _field(value, 3, "version", required=False)
    size = _field(value, 4, "size", required=False)
    if not isinstance(archive_id, str) or not _ARCHIVE_ID.fullmatch(archive_id):
        raise _Unusable("its archive id is not one uv writes")
    if archive_id != os.path.basename(archive):
        raise _Unusable(f"names archive {archive_id!r}, but its index symlink leads to "
                        f"{os.path.basename(archive)!r}")
    if isinstance(bucket, int) and not isinstance(bucket, bool) and \
            os.path.basename(os.path.dirname(archive)) != f"archive-v{bucket}":
        raise _Unusable(f"names an archive of archive-v{bucket}, but its index symlink leads into "
                        f"{os.path.basename(os.path.dirname(archive))}")
    if os.path.normpath(os.path.dirname(archive)) not in archive_roots:
        raise _Unusable("its archive is not in this cache's archive directories")
    if not isinstance(filename, str) or not filename.endswith(".whl") or \
            _norm(filename.split("-", 1)[0]) != _norm(name):
        raise _Unusable(f"names the wheel {filename!r}, not one of {name}")
    if filename.split("-")[1:2] != os.path.basename(entry).split("-")[:1]:
        raise _Unusable(f"names the wheel {filename!r}, not one of version {os.path.basename(entry).split('-')[0]}")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise _Unusable("its wheel size is not a count of bytes")
    return WheelPointer(archive=os.path.abspath(archive), entry=entry, pointer=path,
                        filename_stem=os.path.basename(entry), digests=_digests(hashes),
                        wheel_filename=filename, size=size)


def _why(exc: OSError) -> str:
    """The reader's own refusal ("a symlink (to …), not followed") rather than ELOOP's "symlink loop"."""
    return exc.strerror if exc.strerror and exc.strerror.startswith("a symlink") else os_error(exc)


def _field(value: object, index: int, key: str, *, required: bool = True) -> object:
    """A struct's field as rmp_serde writes it: an array's ``index``-th element or a map's ``key``."""
    if isinstance(value, list):
        if index < len(value):
            return value[index]
    elif isinstance(value, dict):
        if key in value:
            return value[key]
    else:
        raise _Unusable(f"not a pointer uv writes: {type(value).__name__} where a struct belongs")
    if required:
        raise _Unusable(f"not a pointer uv writes: no {key}")
    return None


def _digests(hashes: object) -> dict[str, str]:
    if not isinstance(hashes, list):
        raise _Unusable("its hashes are not a list")
    out: dict[str, str] = {}
    for item in hashes:
        if isinstance(item, dict) and len(item) == 1 and "algorithm" not in item:
            [(algorithm, digest)] = item.items()  # {"Sha256": hex}
        elif isinstance(item, dict):
            algorithm, digest = item.get("algorithm"), item.get("digest")
        elif isinstance(item, list) and len(item) == 2:
            algorithm, digest = item
        else:
            raise _Unusable("a hash is not one uv writes")
        if isinstance(algorithm, int) and not isinstance(algorithm, bool) and 0 <= algorithm < len(ALGORITHMS):
            algorithm = ALGORITHMS[algorithm]
        if not isinstance(algorithm, str) or algorithm.lower() not in _HEX_LENGTH:
            raise _Unusable(f"a hash names an unknown algorithm {algorithm!r}")
        algorithm = algorithm.lower()
        if not isinstance(digest, str) or len(digest) != _HEX_LENGTH[algorithm] or not _HEX.fullmatch(digest):
            raise _Unusable(f"its {algorithm} digest is not {_HEX_LENGTH[algorithm]} hex digits")
        if out.get(algorithm, digest.lower()) != digest.lower():
            raise _Unusable(f"it gives two different {algorithm} digests")
        out[algorithm] = digest.lower()
    return out


# -- the archive's own RECORD ---------------------------------------------------------------

def archive_record(archive: str, name: str, version: str) -> dict[str, RecordEntry] | None:
    """The RECORD of ``name`` ``version``'s dist-info inside an archive (the wheel's own RECORD,
    as uv unpacked it), path → row; None when there is none, it cannot be read, or it is malformed
    (``archive_record_or_reason`` says which)."""
    return archive_record_or_reason(archive, name, version)[0]


def archive_record_path(archive: str, name: str, version: str) -> tuple[str | None, str | None]:
    """(the RECORD of ``name`` ``version``'s dist-info inside the archive, or None and why not)."""
    try:
        with os.scandir(archive) as entries:
            infos = [e.name for e in entries if e.name.endswith(".dist-info") and e.is_dir(follow_symlinks=False)]
    except OSError as exc:
        return None, f"cannot list the archive: {os_error(exc)}"
    wanted = (_norm(name), version)
    matching = [i for i in infos if (_norm(i[:-len(".dist-info")].rpartition("-")[0]),
                                     i[:-len(".dist-info")].rpartition("-")[2]) == wanted]
    if len(matching) != 1:
        found = ", ".join(sorted(infos)) or "none"
        return None, f"no single dist-info of {name} {version} in the archive (found: {found})"
    return os.path.join(archive, matching[0], "RECORD"), None


def archive_record_or_reason(archive: str, name: str, version: str
                             ) -> tuple[dict[str, RecordEntry] | None, str | None]:
    """(``archive_record``'s answer, or None and why not)."""
    record, why = archive_record_path(archive, name, version)
    if record is None:
        return None, why
    try:
        data = read_regular(record, LIMITS["RECORD"], what="RECORD", follow=False, root=archive)
    except OSError as exc:
        return None, f"its RECORD cannot be read: {_why(exc)}"
    try:
        parsed = parse_record(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "its RECORD is not UTF-8"
    if parsed.issues:
        first = parsed.issues[0]
        return None, f"malformed RECORD, line {first.line}: {first.message}"
    return {entry.path: entry for entry in parsed.entries}, None

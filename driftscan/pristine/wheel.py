"""Wheels as sources: opened safely, read by exact member name, never trusted for sizes.

A wheel here may be one the audited tree names (direct_url.json), a cache body, or a download.
The file is opened through ``fileio.open_regular`` (a regular file, non-blocking, fstat-checked),
its central directory is located and size-checked by hand before ``zipfile`` reads it (a forged
end record cannot make zipfile load gigabytes), and members are looked up by exact name.
"""

from __future__ import annotations

import errno
import os
import struct
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from ..fs.reader import open_regular
from ..core.values import Distribution, RecordEntry
from ..formats.record import INSTALLER_FILES as INSTALLER_FILES  # re-exported: the files installers write
from ..formats.record import hash_text, parse_hash, parse_record
from .base import PristineCopy, SourceKind, WrongRow
from .names import expand_tags, installed_tags, same_release

MAX_WHEEL = 16 << 30  # the largest wheels (CUDA builds of torch) are a few GB
CD_CAP = 64 << 20  # a central directory read for reading members (torch's: about 2 MB)
OWN_RECORD_MAX = 64 << 20  # a wheel's own RECORD read to check members against (torch's: about 2 MB)

_EOCD = struct.Struct("<4s4H2LH")
_LOC64 = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_CDH = struct.Struct("<4s6H3L5H2L")
_EOCD_SIG, _LOC64_SIG, _EOCD64_SIG, _CDH_SIG = b"PK\x05\x06", b"PK\x06\x07", b"PK\x06\x06", b"PK\x01\x02"


def central_directory(f: BinaryIO, size: int, cap: int) -> bytes:
    """The raw central directory of the zip ``f`` (``size`` bytes long), at most ``cap`` bytes
    read from the end record's word; ValueError when there is none or it is too big."""
    tail_len = min(size, _EOCD.size + 0xFFFF)
    f.seek(size - tail_len)
    tail = f.read(tail_len)
    pos = tail.rfind(_EOCD_SIG)
    while pos >= 0:  # the record is the one whose comment ends the file
        if pos + _EOCD.size <= len(tail) and pos + _EOCD.size + _EOCD.unpack_from(tail, pos)[-1] == len(tail):
            break
        pos = tail.rfind(_EOCD_SIG, 0, pos)
    if pos < 0:
        raise ValueError("not a zip file (no end of central directory record)")
    end = size - tail_len + pos
    _, _, _, _, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, pos)
    if count == 0xFFFF or 0xFFFFFFFF in (cd_size, cd_offset):  # zip64: the real values are in its record
        if end < _LOC64.size + _EOCD64.size:
            raise ValueError("a zip64 end record is missing")
        f.seek(end - _LOC64.size)
        if f.read(4) != _LOC64_SIG:
            raise ValueError("a zip64 locator is missing")
        end -= _LOC64.size + _EOCD64.size
        f.seek(end)
        record = f.read(_EOCD64.size)
        if len(record) != _EOCD64.size or record[:4] != _EOCD64_SIG:
            raise ValueError("a zip64 end record is missing")
        cd_size = _EOCD64.unpack(record)[7]
    if cd_size > cap:
        raise ValueError(f"its central directory has {cd_size} bytes, more than the {cap} read")
    if cd_size > end:
        raise ValueError("its central directory lies outside the file")
    f.seek(end - cd_size)
    data = f.read(cd_size)
    if len(data) != cd_size:
        raise ValueError("truncated central directory")
    return data


def member_names(cd: bytes) -> Iterator[str]:
    """The member names a central directory lists (ValueError on a malformed one)."""
    pos = 0
    while pos < len(cd):
        if pos + _CDH.size > len(cd) or cd[pos:pos + 4] != _CDH_SIG:
            raise ValueError("malformed central directory")
        fields = _CDH.unpack_from(cd, pos)
        flags, name_len, extra_len, comment_len = fields[3], fields[10], fields[11], fields[12]
        raw = cd[pos + _CDH.size:pos + _CDH.size + name_len]
        yield raw.decode("utf-8" if flags & 0x800 else "cp437", "replace")
        pos += _CDH.size + name_len + extra_len + comment_len


def installed_outside(path: str) -> bool:
    """A RECORD path that leaves site-packages (bin scripts, headers): rewritten or moved at
    install, so no wheel member is its original."""
    return ".." in path.replace("\\", "/").split("/") or path.startswith("/")




def installer_written(path: str, dist: Distribution) -> bool:
    info, sep, rest = path.partition("/")
    return bool(sep) and rest in INSTALLER_FILES and info == os.path.basename(dist.metadata_dir.rstrip("/"))


def member_candidates(path: str, installed_info: str, wheel_info: str | None,
                      data_dirs: Sequence[str]) -> list[str]:
    """The member names (in this order) an installed RECORD path may come from: itself, or
    ``{name}-{ver}.data/purelib|platlib/…``; the installed dist-info's own files from the
    wheel's dist-info. Empty for a path that is absolute, climbs, or holds a NUL."""
    if not path or "\0" in path or "\\" in path or path.startswith("/"):
        return []
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return []
    if parts[0].endswith(".dist-info"):
        if parts[0] == installed_info and wheel_info:
            return ["/".join([wheel_info, *parts[1:]])]
        return [path]
    return [path, *(f"{d}/{scheme}/{path}" for d in data_dirs for scheme in ("purelib", "platlib"))]


def layout(names: Sequence[str], dist: Distribution) -> tuple[str | None, tuple[str, ...]]:
    """The wheel's own ``*.dist-info`` directory (the one holding RECORD, preferring the
    installed one's name) and its ``*.data`` directories, from its member names."""
    installed = os.path.basename(dist.metadata_dir.rstrip("/"))
    infos: list[str] = []
    data: list[str] = []
    for name in names:
        top, sep, rest = name.partition("/")
        if top.endswith(".dist-info") and rest == "RECORD":
            infos.append(top)
        elif sep and top.endswith(".data") and top not in data:
            data.append(top)
    wheel_info = installed if installed in infos else (infos[0] if len(infos) == 1 else None)
    return wheel_info, tuple(data)


# Verdicts of members already inflated in this process: a wheel that two sources name (the wheel
# direct_url.json names, found again by --wheels or through a hard link) is not inflated twice.
# Keyed by the open file's identity (device, inode, size, mtime, ctime: the same file, unchanged)
# and the member's own record; only verdicts, never bytes, so a bounded dict is enough.
VERDICTS_MAX = 4096
_verdicts: OrderedDict[tuple[object, ...], str | None] = OrderedDict()
_verdicts_lock = threading.Lock()
_UNKNOWN = "unknown"  # a verdict is None (verified) or a reason; this marks "not cached"


class ZipCopy(PristineCopy):
    """A wheel (a file or a pip cache body): members by exact name, decompressed only as far as
    the member's declared size and the installed RECORD's, whichever is smaller (plus one byte)."""

    def __init__(self, source: SourceKind, path: str, distribution: Distribution, file: BinaryIO,
                 size: int) -> None:
        super().__init__(source, path, distribution)
        self._file = file
        try:
            st = os.fstat(file.fileno())
            self._identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            central_directory(file, size, CD_CAP)  # refuses before zipfile loads it
            file.seek(0)
            self._zip = zipfile.ZipFile(file)
            self._info, self._data = layout(self._zip.namelist(), distribution)
        except BaseException:
            file.close()
            raise
        self._installed = os.path.basename(distribution.metadata_dir.rstrip("/"))

    def _member(self, entry: RecordEntry) -> zipfile.ZipInfo | None:
        for name in member_candidates(entry.path, self._installed, self._info, self._data):
            info = self._zip.NameToInfo.get(name)
            if info is not None and not info.is_dir():
                return info
        return None

    def has(self, entry: RecordEntry) -> bool:
        return self._member(entry) is not None

    @property
    def dist_info(self) -> str | None:
        """The wheel's own ``*.dist-info`` directory name (the one holding its RECORD), if one."""
        return self._info

    def executable(self, entry: RecordEntry) -> bool:
        info = self._member(entry)
        return info is not None and bool((info.external_attr >> 16) & 0o111)

    def wheel_tags(self) -> frozenset[str]:
        """The ``Tag:`` lines of the wheel's own ``*.dist-info/WHEEL`` (what the installer copied
        into the installed dist-info), expanded; empty when it has none."""
        info = self._zip.NameToInfo.get(f"{self._info}/WHEEL") if self._info else None
        if info is None or info.file_size > 64 << 10:
            return frozenset()
        with self._zip.open(info) as f:
            text = f.read(64 << 10).decode("utf-8", "replace")
        tags: set[str] = set()
        for line in text.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip().lower() == "tag":
                tags |= expand_tags(value)
        return frozenset(tags)

    def check(self, entry: RecordEntry, out: BinaryIO | None = None, limit: int | None = None) -> str | None:
        too_big = entry.size is not None and limit is not None and entry.size > limit  # refused unread
        info = self._member(entry) if entry.hash is not None and not too_big else None
        if info is None or entry.hash is None:
            return super().check(entry, out, limit)
        key = (*self._identity, info.filename, info.header_offset, info.CRC, info.compress_size, info.file_size,
               entry.hash.algorithm, entry.hash.digest, entry.size, limit if entry.size is None else None)
        with _verdicts_lock:
            cached = _verdicts.get(key, _UNKNOWN)
            if cached is not _UNKNOWN:
                _verdicts.move_to_end(key)
        # A failure stands whatever the caller wanted; a success still streams the bytes to ``out``
        # (verified again as they go).
        if cached is not _UNKNOWN and (cached is not None or out is None):
            return cached
        why = super().check(entry, out, limit)
        with _verdicts_lock:
            _verdicts[key] = why
            _verdicts.move_to_end(key)
            while len(_verdicts) > VERDICTS_MAX:
                _verdicts.popitem(last=False)
        return why

    def own_record(self) -> dict[str, RecordEntry] | None:
        """The wheel's own RECORD (``*.dist-info/RECORD`` in it), by member name; None when it has
        none, or one too big or unreadable (a RECORD of a wheel is never trusted for its size)."""
        text = self.own_record_bytes()
        if text is None:
            return None
        return {e.path: e for e in parse_record(text.decode("utf-8", "replace")).entries}

    def own_record_bytes(self) -> bytes | None:
        """The bytes of the wheel's own RECORD, read no further than ``OWN_RECORD_MAX``; None as
        for ``own_record``."""
        info = self._zip.NameToInfo.get(f"{self._info}/RECORD") if self._info else None
        if info is None or info.file_size > OWN_RECORD_MAX:
            return None
        try:
            with self._zip.open(info) as f:
                text = f.read(OWN_RECORD_MAX + 1)
        except Exception:  # noqa: BLE001 - a corrupt zip or a bad CRC: no RECORD to go by
            return None
        return None if len(text) > OWN_RECORD_MAX else text

    def unfaithful(self, entries: Sequence[RecordEntry]) -> dict[str, str]:
        """Of the installed RECORD rows ``entries`` (each a file the wheel would install), those
        whose member does not match the wheel's *own* RECORD row for it — the bytes an installer
        writes (pip and uv copy the member, and keep the wheel's row as the installed RECORD's) —
        with why; rows the wheel has no member for are left out. A wheel without a readable RECORD
        vouches for none of its members."""
        own = self.own_record()
        out: dict[str, str] = {}
        for entry in entries:
            info = self._member(entry)
            if info is None:
                continue
            row = own.get(info.filename) if own is not None else None
            if own is None:
                out[entry.path] = "the wheel has no readable RECORD"
            elif row is None or row.hash is None:
                out[entry.path] = f"the wheel's RECORD gives no hash for its member {info.filename}"
            else:
                why = self.check(RecordEntry(entry.path, row.hash, row.size, row.line))
                if why is not None:
                    out[entry.path] = f"its member {info.filename} does not match the wheel's own RECORD ({why})"
        return out

    def is_release_of(self, dist: Distribution) -> bool:
        """The wheel's own dist-info names ``dist``'s name and version, and its WHEEL's tags meet
        the installed WHEEL's (when that names any): this is a wheel of that very release."""
        if not self._info or not self._info.endswith(".dist-info"):
            return False
        name, sep, version = self._info[:-len(".dist-info")].rpartition("-")
        if not sep or not same_release(dist, name, version):
            return False
        inside = installed_tags(dist)
        return not inside or bool(self.wheel_tags() & inside)

    def wrong_row(self, entry: RecordEntry, installed_hash: str, installed_size: int) -> WrongRow | None:
        """A ``WrongRow`` when this wheel ships the installed file as it is while its own RECORD
        row for it — the same row as the installed one (hash and size) — does not match its member;
        else None. ``installed_hash`` ("sha256=...") and ``installed_size`` are the installed
        file's. Nothing here trusts the wheel for being there: the member must hash to the
        installed bytes, and the installer must have copied this very row."""
        info = self._member(entry)
        own = self.own_record() if info is not None and entry.hash is not None else None
        row = own.get(info.filename) if own is not None and info is not None else None
        if info is None or row is None or row.hash is None or row.hash != entry.hash or row.size != entry.size:
            return None
        try:
            current = parse_hash(installed_hash, allow_hex=False)
        except ValueError:
            return None
        if (current.algorithm, current.digest, installed_size) == (row.hash.algorithm, row.hash.digest, row.size):
            return None  # the installed bytes match the row: no wrong row here
        if self.check(RecordEntry(entry.path, current, installed_size, entry.line)) is not None:
            return None  # the member is not the installed bytes
        if self.check(entry) is None:
            return None  # the member matches the row: the installed file is what differs
        return WrongRow(entry.path, info.filename, os.path.basename(self.path), hash_text(row.hash))

    def _open(self, entry: RecordEntry) -> tuple[BinaryIO, int | None] | None:
        info = self._member(entry)
        if info is None:
            return None
        return self._zip.open(info), info.file_size  # type: ignore[return-value]  # a ZipExtFile, typed IO[bytes]

    def close(self) -> None:
        super().close()
        try:
            self._zip.close()
        finally:
            self._file.close()


def open_wheel(path: str, source: SourceKind, dist: Distribution, *, follow: bool = True,
               max_size: int = MAX_WHEEL) -> ZipCopy:
    """A wheel file as a ZipCopy; OSError, ValueError or zipfile.BadZipFile when it is none."""
    file, size = open_file(path, follow=follow, max_size=max_size)
    return ZipCopy(source, path, dist, file, size)


def open_file(path: str, *, follow: bool = True, max_size: int = MAX_WHEEL) -> tuple[BinaryIO, int]:
    """A regular file, open for reading (non-blocking open, type checked before and after), and
    its size; OSError for anything else or anything bigger than ``max_size``."""
    fd, st = open_regular(path, follow=follow)
    if st.st_size > max_size:
        os.close(fd)
        raise OSError(errno.EFBIG, f"{st.st_size} bytes, more than the {max_size} a wheel may have here")
    return os.fdopen(fd, "rb"), st.st_size


def wheel_members_error(exc: BaseException) -> str:
    """Why a wheel could not be opened, in a reason's words."""
    if isinstance(exc, zipfile.BadZipFile):
        return f"not a readable zip file ({exc})"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc) or type(exc).__name__

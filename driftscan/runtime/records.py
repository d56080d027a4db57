"""Reading another process's runtime records (written by ``recorder.py``) and comparing them with
the files on disk now: what ``driftscan procs`` asks of a running process.

A record file is data another process wrote, and may be forged: it is opened without following a
symlink, must be a regular file owned by the process's user, is read up to a fixed size, and every
line is checked (exact keys, types, absolute paths without NUL, counts capped). A file that fails
any check gives that process's ``ProcessRecords`` an ``error`` and no modules; nothing raises.
"""

from __future__ import annotations

import enum
import json
import os
import stat
from dataclasses import dataclass

from . import location
from .recorder import FORMAT, HASH_LIMIT, MAX_BYTES, MAX_RECORDS, VERSION

# The header and status lines come on top of the module lines' cap.
READ_LIMIT = MAX_BYTES + 64 * 1024
MAX_LINE = 16 * 1024
MAX_INT = 2**64
_HEADER_KEYS = {"format", "version", "pid", "start_ticks", "uid", "executable", "max_records", "max_bytes"}
_MODULE_KEYS = {"name", "path", "dev", "ino", "size", "mtime_ns", "blake2b"}
_HEX = frozenset("0123456789abcdef")


class RecorderState(enum.Enum):
    RECORDING = "recording"  # the file holds every import so far (bar the last of a quiet spell)
    TRUNCATED = "truncated"  # the caps were reached: later imports are not in it
    DISABLED = "disabled"  # the recorder failed and stopped: later imports are not in it


class ErrorKind(enum.Enum):
    UNSAFE = "unsafe"  # not a regular file of that user, or the directory is not theirs alone
    TOO_LARGE = "too-large"
    MALFORMED = "malformed"
    WRONG_PROCESS = "wrong-process"  # the header names another process (PID, start time or user)
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class RecordsError:
    kind: ErrorKind
    detail: str


@dataclass(frozen=True)
class ModuleRecord:
    name: str
    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    blake2b: str | None  # hex digest of the content at import; None when not hashed


@dataclass(frozen=True)
class ProcessRecords:
    pid: int
    start_ticks: int
    uid: int
    path: str
    executable: str = ""
    modules: tuple[ModuleRecord, ...] = ()
    state: RecorderState = RecorderState.RECORDING
    detail: str = ""  # why the recorder stopped, when it did
    error: RecordsError | None = None


class ChangeKind(enum.Enum):
    MISSING = "missing"  # no file at the path any more
    REPLACED = "replaced"  # another file at the path (a rename over it, a reinstall)
    MODIFIED = "modified"  # the same file, its size or mtime changed (an edit in place)
    CONTENT = "content"  # same size and mtime, different content (the recorded hash says so)
    UNREADABLE = "unreadable"  # the path cannot be checked (permission, not a regular file)


@dataclass(frozen=True)
class ChangedModule:
    module: ModuleRecord
    kind: ChangeKind
    same_content: bool | None = None  # for REPLACED/MODIFIED: the content still hashes the same
    detail: str = ""


class _Malformed(Exception):
    def __init__(self, kind: ErrorKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def read_records(pid: int, start_ticks: int, uid: int, directory: str | None = None) -> ProcessRecords | None:
    """That process's records; None when it has no record file. A file that cannot be trusted gives
    a ``ProcessRecords`` whose ``error`` says why (never an exception)."""
    directory = directory or location.default_directory()
    path = os.path.join(directory, location.file_name(pid, start_ticks))
    empty = ProcessRecords(pid, start_ticks, uid, path)
    try:
        data = _read(directory, path, uid)
        if data is None:
            return None
        return _parse(data, empty)
    except _Malformed as bad:
        return ProcessRecords(pid, start_ticks, uid, path, error=RecordsError(bad.kind, bad.detail))
    except location.UnsafeDirectory as exc:
        return ProcessRecords(pid, start_ticks, uid, path, error=RecordsError(ErrorKind.UNSAFE, str(exc)))
    except (OSError, ValueError) as exc:
        return ProcessRecords(pid, start_ticks, uid, path, error=RecordsError(ErrorKind.UNREADABLE, str(exc)))


def _read(directory: str, path: str, uid: int) -> bytes | None:
    try:
        location.check_directory(directory, uid)
    except FileNotFoundError:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _Malformed(ErrorKind.UNSAFE, f"cannot open without following a link: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Malformed(ErrorKind.UNSAFE, "not a regular file")
        if st.st_uid != uid:
            raise _Malformed(ErrorKind.UNSAFE, f"owned by uid {st.st_uid}, not the process's {uid}")
        if st.st_size > READ_LIMIT:
            raise _Malformed(ErrorKind.TOO_LARGE, f"{st.st_size} bytes (at most {READ_LIMIT})")
        chunks = []
        left = READ_LIMIT + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > READ_LIMIT:
            raise _Malformed(ErrorKind.TOO_LARGE, f"more than {READ_LIMIT} bytes")
        return data
    finally:
        os.close(fd)


def _parse(data: bytes, empty: ProcessRecords) -> ProcessRecords:
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise _Malformed(ErrorKind.MALFORMED, "not ASCII") from None
    lines = text.split("\n")
    lines.pop()  # after the last newline: empty, or a line the recorder is writing now
    if not lines:
        raise _Malformed(ErrorKind.MALFORMED, "no header line")
    if len(lines) > MAX_RECORDS + 2:
        raise _Malformed(ErrorKind.TOO_LARGE, f"{len(lines)} lines (at most {MAX_RECORDS + 2})")
    header = _object(lines[0], 1)
    if set(header) != _HEADER_KEYS or header["format"] != FORMAT or header["version"] != VERSION:
        raise _Malformed(ErrorKind.MALFORMED, "line 1: not a driftscan runtime header")
    for key in ("pid", "start_ticks", "uid", "max_records", "max_bytes"):
        _int(header[key], 1, key)
    if not isinstance(header["executable"], str) or "\0" in header["executable"]:
        raise _Malformed(ErrorKind.MALFORMED, "line 1: executable is not a path")
    if (header["pid"], header["start_ticks"], header["uid"]) != (empty.pid, empty.start_ticks, empty.uid):
        raise _Malformed(ErrorKind.WRONG_PROCESS,
                         f"written for pid {header['pid']} started at {header['start_ticks']} by uid {header['uid']}")
    modules: list[ModuleRecord] = []
    state, detail = RecorderState.RECORDING, ""
    for number, line in enumerate(lines[1:], start=2):
        if state is not RecorderState.RECORDING:
            raise _Malformed(ErrorKind.MALFORMED, f"line {number}: after the {state.value} status")
        item = _object(line, number)
        if "status" in item:
            state, detail = _status(item, number)
            continue
        modules.append(_module(item, number))
    return ProcessRecords(empty.pid, empty.start_ticks, empty.uid, empty.path, header["executable"],
                          tuple(modules), state, detail)


def _object(line: str, number: int) -> dict[str, object]:
    if len(line) > MAX_LINE:
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: longer than {MAX_LINE} characters")

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        out = dict(items)
        if len(out) != len(items):
            raise _Malformed(ErrorKind.MALFORMED, f"line {number}: a key twice")
        return out

    def constant(name: str) -> object:
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: {name}")

    try:
        value = json.loads(line, object_pairs_hook=pairs, parse_constant=constant, parse_float=constant)
    except (ValueError, RecursionError):
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: not JSON") from None
    if not isinstance(value, dict):
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: not an object")
    return value


def _int(value: object, number: int, key: str) -> int:
    if type(value) is not int or not 0 <= value < MAX_INT:
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: {key} is not a count")
    return value


def _status(item: dict[str, object], number: int) -> tuple[RecorderState, str]:
    if item.get("status") == "truncated" and set(item) == {"status", "records"}:
        _int(item["records"], number, "records")
        return RecorderState.TRUNCATED, f"stopped after {item['records']} records"
    if item.get("status") == "disabled" and set(item) == {"status", "reason"} and isinstance(item["reason"], str):
        return RecorderState.DISABLED, item["reason"][:300]
    raise _Malformed(ErrorKind.MALFORMED, f"line {number}: not a status")


def _module(item: dict[str, object], number: int) -> ModuleRecord:
    if set(item) != _MODULE_KEYS:
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: not a module record")
    name, path, digest = item["name"], item["path"], item["blake2b"]
    if not isinstance(name, str) or not name or len(name) > 1024 or "\0" in name:
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: name is not a module name")
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path or len(path) > 4096:
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: path is not an absolute path")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64 and set(digest) <= _HEX):
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: blake2b is not a digest")
    size = _int(item["size"], number, "size")
    if digest is not None and size > HASH_LIMIT:
        raise _Malformed(ErrorKind.MALFORMED, f"line {number}: a digest of a file larger than {HASH_LIMIT}")
    return ModuleRecord(name, path, _int(item["dev"], number, "dev"), _int(item["ino"], number, "ino"), size,
                        _int(item["mtime_ns"], number, "mtime_ns"), digest)


def changed(records: ProcessRecords) -> list[ChangedModule]:
    """The recorded modules whose file is no longer the one imported, in record order."""
    out: list[ChangedModule] = []
    for module in records.modules:
        change = _compare(module)
        if change is not None:
            out.append(change)
    return out


def _compare(module: ModuleRecord) -> ChangedModule | None:
    # The recorded path itself, as the recorder stat'ed it; nothing else is looked up.
    try:
        st = os.stat(module.path)
    except FileNotFoundError:
        return ChangedModule(module, ChangeKind.MISSING)
    except (OSError, ValueError) as exc:
        return ChangedModule(module, ChangeKind.UNREADABLE, detail=str(exc))
    if not stat.S_ISREG(st.st_mode):
        return ChangedModule(module, ChangeKind.UNREADABLE, detail="not a regular file")
    if (st.st_dev, st.st_ino) != (module.dev, module.ino):
        return ChangedModule(module, ChangeKind.REPLACED, _same_content(module, st))
    if (st.st_size, st.st_mtime_ns) != (module.size, module.mtime_ns):
        return ChangedModule(module, ChangeKind.MODIFIED, _same_content(module, st))
    if module.blake2b is not None and _same_content(module, st) is False:
        return ChangedModule(module, ChangeKind.CONTENT, False)
    return None


def _same_content(module: ModuleRecord, st: os.stat_result) -> bool | None:
    """Whether the file now hashes as recorded; None when that cannot be said."""
    if module.blake2b is None or st.st_size != module.size:
        return None if module.blake2b is None else False
    from hashlib import blake2b
    try:
        fd = os.open(module.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None
        data = os.read(fd, HASH_LIMIT + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return blake2b(data, digest_size=32).hexdigest() == module.blake2b


def remove_stale(directory: str | None = None) -> list[str]:
    """Remove the record files of processes that are gone (no such PID, or a PID reused since:
    another start time) and that the caller owns; the names of the files removed."""
    directory = directory or location.default_directory()
    uid = os.getuid()
    removed: list[str] = []
    try:
        location.check_directory(directory, uid)
        names = os.listdir(directory)
    except (OSError, location.UnsafeDirectory):
        return removed
    for name in names:
        parsed = location.parse_file_name(name)
        if parsed is None or location.start_ticks(parsed[0]) == parsed[1]:
            continue
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                os.unlink(path)
                removed.append(name)
        except OSError:
            continue
    return removed

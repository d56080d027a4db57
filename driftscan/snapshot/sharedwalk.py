"""Hashing a whole tree on two cores from the first directory listed: ``driftscan snapshot``
(``hash_shared``), and ``driftscan diff --no-cache`` of a large tree (``settle_shared``).

A forked child is started before the walk. This process lists the directories (``os.scandir``:
a file's type comes from the listing, no ``lstat``) and puts the files it finds, a few dozen at
a time, into a pipe the child reads: each message is exactly ``PIPE_BUF`` bytes, so a write is
atomic and a read of that size takes one whole message, whichever process reads it. When the
walk is done this process reads from the same pipe too, until it is empty; while the pipe is
full, it hashes the files it found itself. No sequential walk before the hashing and no static
split by size: whichever process is free takes the next message.

A regular file (as the listing tells it) is opened ``O_NOFOLLOW | O_NONBLOCK`` and checked
with ``fstat`` before a byte is read, as ``fileio.open_regular`` does after an ``lstat``: the
type is known before the open (a device node or FIFO is never opened on purpose; one swapped
in since is refused by the fstat), and a symlink swapped in is refused by the open. Its entry
comes from that fstat (size, mode, mtime, ctime) and the bytes read. Any other entry (a symlink,
a FIFO, a directory entry of unknown type that could not be stat'ed) goes through
``manifest._entry`` as every file did before. Each process formats its own entries as JSON
members (``manifest.format_member``).

The child's answer is written as it goes, a marshalled chunk every ``SPOOL_FILES`` files, into a
spool (an anonymous memory file, ``memfd_create``, or an unlinked temporary file) that this
process reads once the child has ended: sent whole at the end through a pipe, 9 MB of members
from a 40,000-file venv took 0.04-0.07 s after the last file was hashed, with this process
waiting. A child that fails leaves its files to this process: every file without an answer is
done here, and nothing it spooled is used.

Balance at the end: while the pipe is full the walk goes on, keeping what it cannot send in a
backlog (it used to hash a message itself at once), and tops the pipe up from the backlog as
the child makes room, likely-large files first. When the walk is done this process takes from
the backlog too, large files first and small ones last, so that the two processes end within
a few small files of each other: a venv's largest files (vLLM's, 300 MB and more) are listed
last, and hashed last they left one process idle for a few hundredths of a second.
"""

from __future__ import annotations

import errno
import fcntl
import marshal
import mmap
import os
import select
import stat
import struct
import tempfile
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TypeGuard, cast


from ..fs.helpers import Child, may_fork
from ..formats.jsondiff import as_text
from ..formats.manifest import (
    TEXT_NAMES,
    TEXT_SUFFIXES,
    CODE_SUFFIXES,
    ManifestEntry,
    _bookkeeping_file,
    _entry,
    format_member,
    hash_fd,
    is_bookkeeping,
)
from ..fs.reader import NOFOLLOW, READ_FLAGS
from ..core.values import Problem
from ..modeldir.provenance.manifestdir import MATCHED, SettleOpened

MAX_FILES = 32  # files a message: few enough that the last messages even the two processes out
# Names of files that are probably large get a message of their own: a model directory's few
# shards go to whichever process is free, one at a time.
LIKELY_LARGE = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".h5", ".msgpack", ".npz",
                ".so", ".a", ".whl", ".zip", ".tar", ".gz")
MESSAGE = select.PIPE_BUF  # bytes: atomic to write, and read whole
PIPE_SIZE = 1 << 20  # room for 256 messages (the default, 64 KiB, holds 16)
OPEN_FLAGS = READ_FLAGS | NOFOLLOW
PROGRESS = struct.Struct("=QQ")  # the child's bytes hashed and files done, in shared memory
SPOOL_FILES = 2048  # files a spooled chunk of the child's answer
SPOOL_CHUNK = struct.Struct("=Q")  # a chunk's length, before it
MAX_BACKLOG = 4096  # messages (4 KiB each) the walk keeps while the pipe is full; past it, it hashes
# A message: its length (2 bytes), then records, NUL-separated, each a mark and a text: "/" and a
# directory's relative prefix (for the records after it), "+" and a regular file's name, "-" and
# any other entry's name. Names hold neither NUL nor "/".
LENGTH = struct.Struct("=H")


def _size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogateescape"))


NAME_MAX = 255  # bytes: the longest file name Linux filesystems take


class _Messages:
    """The walk's files packed into messages of ``MESSAGE`` bytes, a directory at a time."""

    def __init__(self) -> None:
        self.records: list[str] = []
        self.size = LENGTH.size
        self.files = 0

    def add(self, prefix: str, regular: list[str], other: list[str]) -> tuple[list[bytes], list[bytes]]:
        """A directory's files (``fits(prefix)``); returns the messages ready to send: those of
        a likely-large file (one each), and the others."""
        records = ["+" + name for name in regular]
        if other:
            records += ["-" + name for name in other]
        ready: list[bytes] = []
        large = [r for r in records if r.endswith(LIKELY_LARGE)]
        big = [self._message(["/" + prefix, record]) for record in large]  # each alone, to whichever is free
        if large:
            taken = set(large)
            records = [r for r in records if r not in taken]
        if not records:
            return big, ready
        head = "/" + prefix
        joined = "".join(records)
        if joined.isascii():  # a byte a character
            longest, total = max(map(len, records)), len(joined)
        else:
            sizes = [_size(r) for r in records]
            longest, total = max(sizes), sum(sizes)
        total += len(records) + _size(head) + 1
        if self.files + len(records) <= MAX_FILES and self.size + total <= MESSAGE:
            self.records.append(head)  # the whole directory fits in the message begun
            self.records += records
            self.size += total
            self.files += len(records)
            return big, ready
        if self.files:
            ready.append(self.flush())
        per = max(1, min(MAX_FILES, (MESSAGE - LENGTH.size - _size(head) - 1) // (longest + 1)))
        for k in range(0, len(records), per):
            part = records[k:k + per]
            if len(part) == per:
                ready.append(self._message([head, *part]))
            else:  # the rest begins the next message
                self.records = [head, *part]
                self.size = LENGTH.size + _size(head) + 1 + sum(map(_size, part)) + len(part)
                self.files = len(part)
        return big, ready

    def flush(self) -> bytes:
        """The message begun (not empty), and a new one begun."""
        message = self._message(self.records)
        self.records, self.size, self.files = [], LENGTH.size, 0
        return message

    @staticmethod
    def _message(records: list[str]) -> bytes:
        payload = "\0".join(records).encode("utf-8", "surrogateescape")
        return (LENGTH.pack(len(payload)) + payload).ljust(MESSAGE, b"\0")


def fits(prefix: str) -> bool:
    """Whether any file of a directory fits in a message (one of 255 bytes under a prefix of a
    few KB may not: the walker hashes those itself)."""
    return _size(prefix) + 2 * (NAME_MAX + 2) + LENGTH.size <= MESSAGE


def unpack(message: bytes) -> list[tuple[str, str, bool]]:
    """A message's files: (relative prefix, name, regular by the listing)."""
    (length,) = LENGTH.unpack_from(message)
    files = []
    prefix = ""
    for record in message[LENGTH.size:LENGTH.size + length].decode("utf-8", "surrogateescape").split("\0"):
        mark, text = record[:1], record[1:]
        if mark == "/":
            prefix = text
        else:
            files.append((prefix, text, mark == "+"))
    return files


class _Hasher:
    """Makes the JSON member of each file (or its error), in one process."""

    def __init__(self, root: str, embed_limit: int, embed_code: bool, contain: str) -> None:
        self.root, self.embed_limit, self.embed_code, self.contain = root, embed_limit, embed_code, contain
        self.base = root.rstrip(os.sep) + os.sep
        self.text_suffixes = TEXT_SUFFIXES if embed_code else tuple(s for s in TEXT_SUFFIXES if s not in CODE_SUFFIXES)
        self.members: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.hashed = 0
        self.count = 0  # files done (``members`` and ``errors`` are emptied by ``take``)

    def files(self, files: list[tuple[str, str, bool]]) -> None:
        """Each file's member into ``members``, or its error into ``errors``, by relative path."""
        members, base = self.members, self.base
        for prefix, name, regular in files:
            rel = prefix + name
            try:
                if regular:
                    entry = self.regular_entry(base + rel, name)
                else:  # a symlink, a FIFO...: the per-file path, lstat first
                    entry = _entry(self.root, rel, self.embed_limit, None, self.embed_code, self.contain)
            except (OSError, ValueError) as exc:
                self.errors[rel] = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
                continue
            self.hashed += entry.size
            members[rel] = format_member(rel, entry)
        self.count += len(files)

    def done(self) -> tuple[int, int]:
        return self.hashed, self.count

    def pending(self) -> int:
        return len(self.members) + len(self.errors)

    def take(self) -> tuple[dict[str, str], dict[str, str]]:
        """The members and errors made since the last take (the child's answer, by chunks)."""
        taken = self.members, self.errors
        self.members, self.errors = {}, {}
        return taken

    def regular_entry(self, path: str, name: str) -> ManifestEntry:
        """The entry of a file the listing says is regular: open (no symlink followed, no FIFO
        waited on), fstat (a regular file still), read, hash."""
        fd = os.open(path, OPEN_FLAGS)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, f"not a regular file ({stat.filemode(st.st_mode)})")
            size = st.st_size
            keep = size <= self.embed_limit and (name.lower().endswith(self.text_suffixes) or name in TEXT_NAMES)
            digest, kept = hash_fd(fd, size, None, keep)
        finally:
            os.close(fd)
        text = as_text(kept) if kept is not None and len(kept) <= self.embed_limit else None
        return ManifestEntry(digest, size, st.st_mode, st.st_mtime_ns, text, None, st.st_ctime_ns)


_StatFields = tuple[int, int, int, float, int]  # WalkStat's, as the child sends them
# A chunk of the child's answer: _Hasher's members and errors, or _Settler's matched paths and others.
_Chunk = tuple[dict[str, str], dict[str, str]] | tuple[list[str], list[tuple[str, _StatFields | None]]]


class _Worker(Protocol):
    """What ``_shared_walk`` hands the files to, in the child and here (``_Hasher``, ``_Settler``)."""

    def files(self, files: list[tuple[str, str, bool]]) -> None: ...

    def done(self) -> tuple[int, int]: ...

    def pending(self) -> int: ...

    def take(self) -> _Chunk: ...


class _Walk:
    """This process's walk (``manifest.scan_tree(root, lstat=False)``'s: the same entries, the
    same problems), handing files out as it goes."""

    def __init__(self, root: str, worker: _Worker, send: Callable[[bytes], bool]) -> None:
        self.root, self.worker, self.send = root, worker, send
        self.found: list[tuple[str, list[str], list[str]]] = []  # every file, for a child that fails
        self.problems: list[Problem] = []
        self.messages = _Messages()
        self.files = 0
        self.large: deque[bytes] = deque()  # the backlog: messages the pipe had no room for yet
        self.small: deque[bytes] = deque()

    def run(self) -> None:
        stack = [(self.root, "")]
        join = os.path.join
        while stack:
            dirpath, prefix = stack.pop()
            subdirs = self._list(dirpath, prefix)
            subdirs.sort()
            for name in reversed(subdirs):
                rel = prefix + name
                if not is_bookkeeping(rel):
                    stack.append((join(dirpath, name), rel + "/"))
        if self.messages.files:
            self._hand_out(self.messages.flush(), self.small)

    def _list(self, dirpath: str, prefix: str) -> list[str]:
        subdirs: list[str] = []
        regular: list[str] = []
        other: list[str] = []
        try:
            with os.scandir(dirpath) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            subdirs.append(entry.name)
                            continue
                    except OSError:
                        pass
                    try:  # d_type; DT_UNKNOWN: an lstat
                        (regular if entry.is_file(follow_symlinks=False) else other).append(entry.name)
                    except OSError:
                        other.append(entry.name)  # manifest._entry's lstat tells what it is
        except OSError as exc:
            self.problems.append(Problem(exc.filename or self.root, f"cannot list directory: {exc.strerror or exc}"))
            subdirs = []  # as scan_dirs: what was listed is kept, nothing below is walked
        if not prefix or prefix == ".cache/" or ".git" in regular or ".git" in other:
            regular = [name for name in regular if not _bookkeeping_file(prefix, name)]
            other = [name for name in other if not _bookkeeping_file(prefix, name)]
        if regular or other:
            self.found.append((prefix, regular, other))
            self.files += len(regular) + len(other)
            if not fits(prefix):
                self.worker.files([(prefix, name, True) for name in regular] +
                                  [(prefix, name, False) for name in other])
            else:
                big, ready = self.messages.add(prefix, regular, other)
                for message in big:
                    self._hand_out(message, self.large)
                for message in ready:
                    self._hand_out(message, self.small)
        return subdirs

    def every_file(self) -> list[tuple[str, str, bool]]:
        """Every file the walk found: (relative prefix, name, regular by the listing)."""
        return [(prefix, name, kind) for prefix, regular, other in self.found
                for names, kind in ((regular, True), (other, False)) for name in names]

    def _hand_out(self, message: bytes, backlog: deque[bytes]) -> None:
        """Into the ``backlog`` (``large`` or ``small``), and the backlog to the pipe while it has
        room. A backlog of ``MAX_BACKLOG`` messages (a tree of millions of files, hashed slower
        than it is listed): this process hashes the oldest small one."""
        backlog.append(message)
        if not self._top_up() and len(self.large) + len(self.small) > MAX_BACKLOG:
            self.worker.files(unpack(self.small.popleft() if self.small else self.large.popleft()))

    def _top_up(self) -> bool:
        """The backlog to the pipe, likely-large files first, until the pipe is full (False) or
        the backlog empty (True)."""
        for backlog in (self.large, self.small):
            while backlog:
                if not self.send(backlog[0]):
                    return False
                backlog.popleft()
        return True

    def finish(self, tick: Callable[[], None]) -> None:
        """The backlog once the walk is done: to the pipe while it has room, to this process
        otherwise, likely-large files first and small ones last, so that both processes end on
        small files (within a few of each other)."""
        while not self._top_up():
            self.worker.files(unpack(self.large.popleft() if self.large else self.small.popleft()))
            tick()


def _shared_walk(root: str, worker: _Worker, progress: Callable[[int, int], None] | None = None) -> \
        tuple[_Walk, list[object] | None, int] | None:
    """Walk ``root`` here, handing the files out through the pipe, ``worker.files(...)`` doing
    them in a forked child and in this process; the walk (``_Walk``), the child's answer (the
    chunks of ``worker.take()`` it spooled, marshalled; None if it failed) and the bytes both
    hashed. None where the child cannot start. ``worker.done()``: its bytes hashed and files
    done so far; ``worker.pending()``: files done since the last ``take``."""
    spool = _spool_file()
    if spool is None:
        return None
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        os.close(spool)
        raise
    shared = mmap.mmap(-1, PROGRESS.size)  # MAP_SHARED: the child's progress, seen here
    try:
        try:
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        except (OSError, AttributeError):
            pass  # the default size: this process does more itself

        def take() -> bytes | None:
            message = os.read(read_fd, MESSAGE)
            return message if len(message) == MESSAGE else None

        def child(fd: int) -> None:
            os.close(write_fd)  # the pipe ends when the walker closes its end
            spooled = 0
            while (message := take()) is not None:
                worker.files(unpack(message))
                shared[:PROGRESS.size] = PROGRESS.pack(*worker.done())
                if worker.pending() >= SPOOL_FILES:
                    spooled += _write_chunk(spool, worker.take())
            spooled += _write_chunk(spool, worker.take())
            os.write(fd, SPOOL_CHUNK.pack(spooled))

        helper = Child(child)
        if not helper.started:
            return None
        try:
            os.set_blocking(write_fd, False)

            def send(message: bytes) -> bool:
                try:
                    return os.write(write_fd, message) == MESSAGE
                except BlockingIOError:
                    return False

            def tick() -> None:
                if progress is not None:
                    (mine, mine_files), theirs = worker.done(), PROGRESS.unpack(shared[:PROGRESS.size])
                    _report(progress, mine + theirs[0], mine_files + theirs[1], walk.files)

            walk = _Walk(root, worker, send)
            walk.run()
            walk.finish(tick)
            os.close(write_fd)
            write_fd = -1
            while (message := take()) is not None:
                worker.files(unpack(message))
                tick()
        except BaseException:
            helper.kill()
            raise
        answer = _read_spool(spool, helper.wait())
        hashed = worker.done()[0] + PROGRESS.unpack(shared[:PROGRESS.size])[0]
    finally:
        os.close(read_fd)
        os.close(spool)
        if write_fd >= 0:
            os.close(write_fd)
        shared.close()
    return walk, answer, hashed


def _spool_file() -> int | None:
    """A descriptor of an empty file that lives in memory and on no path (``memfd_create``; an
    unlinked temporary file where there is none): the child's answer, read here by offset."""
    try:
        return os.memfd_create("driftscan-answer", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        pass
    try:
        with tempfile.TemporaryFile() as f:
            return os.dup(f.fileno())
    except OSError:
        return None


def _write_chunk(fd: int, part: _Chunk) -> int:
    """``part`` marshalled, after its length, at the end of the spool; the bytes written."""
    data = marshal.dumps(part)
    chunk = memoryview(SPOOL_CHUNK.pack(len(data)) + data)
    while chunk:
        chunk = chunk[os.write(fd, chunk):]
    return SPOOL_CHUNK.size + len(data)


def _read_spool(fd: int, note: bytes | None) -> list[object] | None:
    """The child's chunks, in order, from the spool whose length its ``note`` gives; None if it
    failed (no note) or the spool is not whole."""
    if note is None or len(note) != SPOOL_CHUNK.size:
        return None
    (length,) = SPOOL_CHUNK.unpack(note)
    pieces, offset = [], 0
    while offset < length:
        piece = os.pread(fd, length - offset, offset)
        if not piece:
            return None
        pieces.append(piece)
        offset += len(piece)
    data = b"".join(pieces)  # one piece: itself, not a copy
    chunks: list[object] = []
    at = 0
    try:
        while at < length:
            (size,) = SPOOL_CHUNK.unpack_from(data, at)
            at += SPOOL_CHUNK.size
            chunks.append(marshal.loads(data[at:at + size]))
            at += size
    except (ValueError, EOFError, TypeError, struct.error):
        return None
    return chunks


def hash_shared(root: str, *, embed_limit: int, embed_code: bool, contain: str,
                progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, str], list[Problem]] | None:
    """Every file under ``root`` as its JSON member (``manifest.format_member``), by relative
    path, and the files and directories that could not be read, with a forked child hashing
    beside this process from the first directory listed. None where forking is not allowed or
    the child cannot start: ``manifest.build_manifest`` then does it."""
    if not may_fork():
        return None
    hasher = _Hasher(root, embed_limit, embed_code, contain)
    shared = _shared_walk(root, hasher, progress)
    if shared is None:
        return None
    walk, chunks, hashed = shared
    members, errors = hasher.members, hasher.errors
    for chunk in chunks or ():
        if _valid_chunk(chunk):  # else: its files are done here, as a failed child's
            members.update(chunk[0])
            errors.update(chunk[1])
    if len(members) + len(errors) < walk.files:  # the child failed: its files, here
        hasher.files([f for f in walk.every_file() if f[0] + f[1] not in members and f[0] + f[1] not in errors])
    problems = walk.problems + [Problem(os.path.join(root, rel), f"cannot read: {errors[rel]}") for rel in sorted(errors)]
    if progress is not None:
        progress(hashed, hashed)
    return members, problems


class WalkStat(NamedTuple):
    """The fields of a forked walker's lstat (or fstat of a regular file) that a diff uses."""

    st_mode: int
    st_size: int
    st_mtime_ns: int
    st_mtime: float
    st_ctime_ns: int  # Manifest.trusted compares it (a file the walker did not settle may still be asked)


class _Settler:
    """A cold diff's walk (no signature trusted): each small regular file of the manifest hashed
    (``manifestdir.SettleOpened``: MATCHED, or its fstat), every other entry lstat'ed, as
    ``manifest.scan_dirs`` and ``manifestdir.settle`` would have, in one process."""

    def __init__(self, root: str, settle: SettleOpened) -> None:
        self.base = root.rstrip(os.sep) + os.sep
        self.settle = settle
        self.matched: list[str] = []
        self.other: dict[str, os.stat_result | WalkStat | None] = {}
        self.count = 0  # files done (``matched`` and ``other`` are emptied by ``take``)

    def files(self, files: list[tuple[str, str, bool]]) -> None:
        base, settle, matched, other, lstat = self.base, self.settle, self.matched, self.other, os.lstat
        for prefix, name, regular in files:
            rel = prefix + name
            path = base + rel
            got = settle(rel, path) if regular else None
            if got is MATCHED:
                matched.append(rel)
                continue
            if got is None:
                try:
                    got = lstat(path)
                except (OSError, ValueError):
                    got = None
            other[rel] = cast("os.stat_result | None", got)  # SettleOpened: MATCHED, an fstat or None
        self.count += len(files)

    def done(self) -> tuple[int, int]:
        return self.settle.hashed, self.count

    def pending(self) -> int:
        return len(self.matched) + len(self.other)

    def take(self) -> tuple[list[str], list[tuple[str, _StatFields | None]]]:
        """What was settled since the last take: the matched paths and the others' stats (the
        child's answer, by chunks)."""
        taken = (self.matched, [(rel, None if st is None else (st.st_mode, st.st_size, st.st_mtime_ns, st.st_mtime,
                                                              st.st_ctime_ns)) for rel, st in self.other.items()])
        self.matched, self.other = [], {}
        return taken


# A walk's entries by relative path: an lstat (os.stat_result or WalkStat), None (it could not be
# taken), or manifestdir's MATCHED or TRUSTED for a file already settled. What compare_manifest
# takes as ``walked`` (which it types as lstats alone): Any, as no one type holds the sentinels.
WalkedEntries = dict[str, Any]


def settle_shared(root: str, settle: SettleOpened) -> tuple[WalkedEntries, list[Problem], int] | None:
    """A cold diff's walk of ``root`` on two cores (``_Settler`` in each): every entry, MATCHED
    or with its stat, the directories that could not be listed, and the bytes hashed. None where
    forking is not allowed or the child cannot start (the caller walks as before)."""
    if not may_fork():
        return None
    settler = _Settler(root, settle)
    shared = _shared_walk(root, settler)
    if shared is None:
        return None
    walk, chunks, hashed = shared
    walked: WalkedEntries = dict.fromkeys(settler.matched, MATCHED)
    walked.update(settler.other)
    for chunk in chunks or ():
        if _valid_settled(chunk):  # else: its files are done here, as a failed child's
            walked.update(dict.fromkeys(chunk[0], MATCHED))
            walked.update((rel, None if st is None else WalkStat(*st)) for rel, st in chunk[1])
    missing = [f for f in walk.every_file() if f[0] + f[1] not in walked] if len(walked) < walk.files else []
    if missing:
        before = settle.hashed
        settler.files(missing)
        walked.update(settler.other)
        walked.update(dict.fromkeys(settler.matched, MATCHED))
        hashed += settle.hashed - before
    return walked, walk.problems, hashed


_STAT_TYPES = (int, int, int, float, int)  # WalkStat's fields


def _valid_settled(chunk: object) -> TypeGuard[tuple[list[str], list[tuple[str, _StatFields | None]]]]:
    """A chunk of the child's settled files, as ``_Settler.take`` made it: matched paths, and
    (path, None or WalkStat's fields) for the others."""
    if not (type(chunk) is tuple and len(chunk) == 2 and type(chunk[0]) is list and type(chunk[1]) is list):
        return False
    if not all(type(rel) is str for rel in chunk[0]):
        return False
    for item in chunk[1]:
        if not (type(item) is tuple and len(item) == 2 and type(item[0]) is str):
            return False
        st = item[1]
        if st is not None and not (type(st) is tuple and len(st) == 5
                                   and all(type(v) is t for v, t in zip(st, _STAT_TYPES))):
            return False
    return True


def _valid_chunk(chunk: object) -> TypeGuard[tuple[dict[str, str], dict[str, str]]]:
    """A chunk of the child's members and errors, as ``_Hasher.take`` made it."""
    if not (type(chunk) is tuple and len(chunk) == 2 and all(type(part) is dict for part in chunk)):
        return False
    return all(type(k) is str and type(v) is str for part in chunk for k, v in part.items())


def _report(progress: Callable[[int, int], None], done: int, files_done: int, files: int) -> None:
    """Progress without sizes known in advance (no lstat): bytes hashed, of an estimate from
    the files done so far."""
    estimate = done * files // max(1, files_done)
    progress(done, max(estimate, done, 1))

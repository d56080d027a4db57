"""One /proc/PID entry read as data: nothing of the process is run, traced or trusted.

Only these files are read, each with a bounded read: ``exe`` (readlink), ``cmdline``, ``stat``,
``status``, ``cgroup``, ``maps`` and the ``ns/mnt`` link. Never ``mem`` or ``environ``: a process's
environment variables and working directory are never used to find anything. A process that exits
while it is read raises ``Gone``; a file the caller may not read is recorded (``denied``), not raised.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass, field

PROC = "/proc"
CMDLINE_LIMIT = 64 << 10  # bytes of argv read (the kernel's own page-sized views aside, argv can be MBs)
SMALL_LIMIT = 64 << 10  # stat, status, cgroup
MAPS_LIMIT = 16 << 20  # bytes of maps read: a vLLM worker maps a few thousand regions (~1 MB)
MAPS_LINES = 200_000  # lines of maps parsed at most
DELETED = " (deleted)"

_GONE = {errno.ENOENT, errno.ESRCH}
_DENIED = {errno.EACCES, errno.EPERM}


class Gone(Exception):
    """The process exited while it was read."""


@dataclass(frozen=True)
class Mapping:
    """A file a process maps, as ``maps`` gives it: the device and inode of what is mapped,
    whatever the path now names."""

    path: str
    dev: int  # os.makedev(major, minor)
    inode: int
    deleted: bool


@dataclass(frozen=True)
class ProcEntry:
    pid: int
    argv: tuple[str, ...]
    exe: str | None  # None: not visible (``denied``) or a kernel thread
    uid: int | None
    start_ticks: int  # clock ticks since boot
    cgroup: str
    other_mount_ns: bool | None  # None: not visible
    maps: tuple[Mapping, ...] | None  # None: not read (not asked for, or not visible)
    maps_truncated: bool = False
    denied: tuple[str, ...] = field(default=())  # the files of /proc/PID this user may not read


def pids(proc: str = PROC) -> list[int]:
    """The numeric entries of /proc."""
    return [int(name) for name in os.listdir(proc) if name.isdigit()]


def _read(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of a /proc file (a /proc file's size is 0: read until EOF or the limit)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _gone_or_denied(exc: OSError, denied: list[str], name: str) -> None:
    if exc.errno in _GONE:
        raise Gone from None
    if exc.errno in _DENIED:
        denied.append(name)
        return
    raise exc


def parse_argv(data: bytes) -> tuple[str, ...]:
    """cmdline's NUL-separated argv (a process may rewrite it: then it is one string, or none)."""
    if data.endswith(b"\0"):
        data = data[:-1]
    return tuple(os.fsdecode(arg) for arg in data.split(b"\0")) if data else ()


def parse_start_ticks(data: bytes) -> int:
    """Field 22 of ``stat`` (starttime); ``comm`` (field 2) may hold spaces and parentheses."""
    rest = data[data.rindex(b")") + 2:].split()
    return int(rest[19])


def parse_uid(data: bytes) -> int | None:
    for line in data.splitlines():
        if line.startswith(b"Uid:"):
            fields = line.split()
            return int(fields[1]) if len(fields) > 1 else None
    return None


def parse_maps(data: bytes, lines: int = MAPS_LINES, wanted: tuple[bytes, ...] | None = None
               ) -> tuple[tuple[Mapping, ...], bool]:
    """The files ``maps`` lists, each once; ``wanted``: only paths starting with one of these.
    True with them when a line limit cut the list."""
    seen: dict[tuple[str, int, int], Mapping] = {}
    truncated = False
    for k, line in enumerate(data.split(b"\n")):
        if k >= lines:
            truncated = True
            break
        # address perms offset dev inode pathname (the path is the rest, spaces and all)
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith(b"/"):
            continue
        raw = parts[5]
        if wanted is not None and not raw.startswith(wanted):
            continue
        inode = int(parts[4])
        if inode == 0:
            continue
        major, _, minor = parts[3].partition(b":")
        dev = os.makedev(int(major, 16), int(minor, 16))
        deleted = raw.endswith(DELETED.encode())
        path = os.fsdecode(raw[: -len(DELETED)] if deleted else raw)
        key = (path, dev, inode)
        if key not in seen:
            seen[key] = Mapping(path=path, dev=dev, inode=inode, deleted=deleted)
    return tuple(seen.values()), truncated


def _mount_ns(pid: int, proc: str) -> str:
    return os.readlink(f"{proc}/{pid}/ns/mnt")


def own_mount_ns(proc: str = PROC) -> str | None:
    try:
        return os.readlink(f"{proc}/self/ns/mnt")
    except OSError:
        return None


def read_entry(pid: int, *, proc: str = PROC, own_ns: str | None = None,
               maps_wanted: tuple[bytes, ...] | None = None, read_maps: bool = True) -> ProcEntry:
    """What /proc says of ``pid``. ``maps_wanted``: keep only the mappings under these path prefixes
    (the whole file is still read, within MAPS_LIMIT). Raises Gone when the process exits meanwhile."""
    base = f"{proc}/{pid}"
    denied: list[str] = []
    try:
        stat = _read(f"{base}/stat", SMALL_LIMIT)
        argv = parse_argv(_read(f"{base}/cmdline", CMDLINE_LIMIT))
        uid = parse_uid(_read(f"{base}/status", SMALL_LIMIT))
    except OSError as exc:
        if exc.errno in _GONE | _DENIED:  # hidepid, or exited: nothing to say of it
            raise Gone from None
        raise
    try:
        start = parse_start_ticks(stat)
    except (ValueError, IndexError):
        raise Gone from None  # a zombie's or a racing read's truncated stat
    exe: str | None = None
    try:
        exe = os.readlink(f"{base}/exe")
    except OSError as exc:
        if exc.errno == errno.ENOENT and argv:  # a zombie has no exe; a kernel thread has no argv
            raise Gone from None
        if exc.errno != errno.ENOENT:
            _gone_or_denied(exc, denied, "exe")
    cgroup = ""
    try:
        cgroup = os.fsdecode(_read(f"{base}/cgroup", SMALL_LIMIT))
    except OSError as exc:
        _gone_or_denied(exc, denied, "cgroup")
    other_ns: bool | None = None
    try:
        other_ns = own_ns is not None and _mount_ns(pid, proc) != own_ns
    except OSError as exc:
        _gone_or_denied(exc, denied, "ns/mnt")
    maps: tuple[Mapping, ...] | None = None
    truncated = False
    if read_maps:
        try:
            data = _read(f"{base}/maps", MAPS_LIMIT)
            truncated = len(data) >= MAPS_LIMIT
            if maps_wanted is not None and not any(w in data for w in maps_wanted):
                maps = ()
            else:
                maps, cut = parse_maps(data, wanted=maps_wanted)
                truncated = truncated or cut
        except OSError as exc:
            _gone_or_denied(exc, denied, "maps")
    return ProcEntry(pid=pid, argv=argv, exe=exe, uid=uid, start_ticks=start, cgroup=cgroup,
                     other_mount_ns=other_ns, maps=maps, maps_truncated=truncated, denied=tuple(denied))


def boot_time() -> float:
    """The wall-clock time of boot, to the clock tick: now less the time since boot
    (CLOCK_BOOTTIME), which /proc/stat's ``btime`` gives only to the second."""
    try:
        return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    except (AttributeError, OSError):  # pragma: no cover - Linux has CLOCK_BOOTTIME
        for line in _read(f"{PROC}/stat", 1 << 20).splitlines():
            if line.startswith(b"btime "):
                return float(line.split()[1])
        raise


def clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")

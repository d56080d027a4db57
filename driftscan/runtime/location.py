"""Where the runtime records live, and which process a record file belongs to.

One directory per user that driftscan owns: ``$XDG_RUNTIME_DIR/driftscan`` (a tmpfs the login
session owns and empties), else ``<user cache>/driftscan/runtime``. It is made ``0700`` and used
only while it is a real directory (not a symlink) owned by the user with no access for others.
A file is named after its process: ``<pid>-<start ticks>.jsonl``, the start time (field 22 of
``/proc/<pid>/stat``, in clock ticks since boot) telling a reused PID apart.

Standard library only: this package is loaded into other programs' processes.
"""

from __future__ import annotations

import os
import stat

SUFFIX = ".jsonl"


class UnsafeDirectory(Exception):
    """The runtime directory is not one this user alone owns."""


def default_directory() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "driftscan")
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not (cache and os.path.isabs(cache)):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "driftscan", "runtime")


def check_directory(path: str, uid: int) -> None:
    """Raise UnsafeDirectory unless ``path`` is a directory (not a symlink) owned by ``uid``
    that no one else may read, write or enter."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(f"{path}: not a directory")
    if st.st_uid != uid:
        raise UnsafeDirectory(f"{path}: owned by uid {st.st_uid}, not {uid}")
    if st.st_mode & 0o077:
        raise UnsafeDirectory(f"{path}: mode {stat.S_IMODE(st.st_mode):o} lets others in (0700 expected)")


def ensure_directory(path: str | None = None) -> str:
    """The runtime directory, made 0700 when missing (its parents with the default mode)."""
    path = path or default_directory()
    if not os.path.lexists(path):
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    check_directory(path, os.getuid())
    return path


def start_ticks(pid: int | str = "self") -> int | None:
    """Field 22 of ``/proc/<pid>/stat`` (the start time in clock ticks since boot); None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read(4096)
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces and ')': split after the last.
    rest = data[data.rfind(b")") + 2:].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def file_name(pid: int, ticks: int) -> str:
    return f"{pid}-{ticks}{SUFFIX}"


def parse_file_name(name: str) -> tuple[int, int] | None:
    """(pid, start ticks) of a record file's name; None for any other name."""
    if not name.endswith(SUFFIX):
        return None
    pid, sep, ticks = name[: -len(SUFFIX)].partition("-")
    if not (sep and pid.isdigit() and ticks.isdigit() and pid.isascii() and ticks.isascii()):
        return None
    if len(pid) > 10 or len(ticks) > 20:
        return None
    return int(pid), int(ticks)

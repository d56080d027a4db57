"""Atomic file writes: a temporary file in the target's directory, fsync, then ``os.replace``.

Readers (a CI job picking up a report, an audit reading a manifest) never see half a file, and a
failed write leaves the previous file as it was.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
import secrets

from ..core.errors import ConfigError


def output_path(path: str) -> str:
    """Where writing ``path`` really goes: a symlink's final target (the link itself is kept).
    A device, FIFO, socket or directory is refused: replacing ``/dev/null`` or a named pipe with
    a regular file, as root, would break the system for everyone else (write ``-`` for stdout)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return real
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write there: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else f"not a regular file ({stat.filemode(st.st_mode)})"
        raise ConfigError(f"{path}: {what}; an output file is only ever a regular file (use - for stdout)")
    return real


def _create_temporary(directory: str, mode: int) -> tuple[int, str]:
    """A new file next to the target, opened for writing, created with ``mode`` (the umask applies,
    as to any file a program creates: mkstemp's 0600 would make every report private)."""
    for _ in range(100):
        tmp = os.path.join(directory, f".driftscan-{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", directory)


def write_atomic(path: str, text: str | bytes | Iterable[str], *, mode: int | None = None) -> None:
    """``text`` may come in pieces (a 40,000-file manifest is not built as one string first), or
    be bytes. The file written keeps the mode of the file it replaces; a new one gets ``mode``, or
    0666 less the umask like any file a program creates.

    An OSError names ``path``, the file asked for, never the temporary file next to it."""
    given = path
    path = output_path(path)
    directory = os.path.dirname(path)
    try:
        keep = stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except FileNotFoundError:
        keep = None
    except OSError as exc:
        raise _naming(exc, given) from None
    try:
        fd, tmp = _create_temporary(directory, 0o666)
    except OSError as exc:
        raise _naming(exc, given) from None
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(text, (str, bytes)):
                f.write(text.encode("utf-8") if isinstance(text, str) else text)
            else:
                for piece in text:
                    f.write(piece.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        chosen = mode if mode is not None and keep is None else keep
        if chosen is not None:
            os.chmod(tmp, chosen)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _naming(exc, given) from None
        raise


def _naming(exc: OSError, path: str) -> OSError:
    """``exc`` about ``path`` (what the user named), whatever file the system call was on."""
    if exc.errno is None:
        return OSError(f"{path}: {exc}")
    return type(exc)(exc.errno, exc.strerror or os.strerror(exc.errno), path)

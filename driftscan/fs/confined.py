"""Paths opened below a directory without following a symlink on the way.

A checkpoint's index and an environment's tree name paths; a symlink anywhere below the
directory the user named (``files/`` → ``~/.ssh``, a package directory swapped for a link while
a restore runs) must not carry a read or a write elsewhere. So every component below ``base`` is
opened with ``dir_fd`` and ``O_NOFOLLOW`` (a directory with ``O_DIRECTORY`` too), and a write is
a temporary file created in the opened parent directory, renamed over its name with
``src_dir_fd``/``dst_dir_fd``: what a path resolves to is decided once, by the descriptors held.
``base`` itself is what the user (or the checked environment) named and is followed.

Errors are ``OSError`` whose message says what was refused (``ELOOP``/``ENOTDIR`` from a
symlink on the way read as "a symlink on the way: not followed").
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from typing import BinaryIO

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_READ = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW | _CLOEXEC


def parts_of(rel: str) -> list[str]:
    """``rel`` (``/``-separated, relative) as its components; ValueError when it is not a plain
    relative path (absolute, ``..``, a NUL, empty)."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or rel.startswith("/") or ".." in parts or any("\0" in p or os.sep in p for p in parts):
        raise ValueError(f"{rel!r}: not a plain relative path")
    return parts


def rel_below(base: str, path: str) -> str | None:
    """``path`` relative to ``base`` (``/``-separated) when it is lexically below it, else None."""
    base, path = os.path.abspath(base), os.path.abspath(path)
    prefix = base.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        return None
    return path[len(prefix):].replace(os.sep, "/")


def _why(exc: OSError, name: str) -> OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return OSError(exc.errno, f"{name}: a symlink (or not a directory) on the way: not followed")
    return exc


def open_dir(base: str, parts: list[str], create: bool = False, dir_mode: int = 0o755) -> int:
    """A descriptor of ``base/parts...``, each part opened without following a symlink;
    ``create``: missing directories are made (``dir_mode`` less the umask) on the way."""
    fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, dir_mode, dir_fd=fd)
                except FileExistsError:
                    pass
                try:
                    nxt = os.open(part, _DIR, dir_fd=fd)
                except OSError as exc:
                    raise _why(exc, part) from None
            except OSError as exc:
                raise _why(exc, part) from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_below(base: str, rel: str, limit: int) -> bytes:
    """The regular file ``base/rel``, no symlink followed below ``base``, at most ``limit`` bytes."""
    parts = parts_of(rel)
    parent = open_dir(base, parts[:-1])
    try:
        try:
            fd = os.open(parts[-1], _READ, dir_fd=parent)
        except OSError as exc:
            raise _why(exc, parts[-1]) from None
    finally:
        os.close(parent)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"{rel}: not a regular file")
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"{rel}: larger than {limit} bytes")
        chunks, total = [], 0
        while total <= limit:
            piece = os.read(fd, min(1 << 20, limit + 1 - total))
            if not piece:
                break
            chunks.append(piece)
            total += len(piece)
        if total > limit:
            raise OSError(errno.EFBIG, f"{rel}: larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def lstat_below(base: str, rel: str) -> os.stat_result:
    """``lstat`` of ``base/rel``, its directories opened without following."""
    parts = parts_of(rel)
    parent = open_dir(base, parts[:-1])
    try:
        return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    finally:
        os.close(parent)


def unlink_below(base: str, rel: str, check: Callable[[int], str | None] | None = None) -> str | None:
    """Remove the regular file ``base/rel`` (directories not followed); ``check(fd)`` on the
    opened file first may refuse (its reason). None when removed or already absent, else why not."""
    parts = parts_of(rel)
    try:
        parent = open_dir(base, parts[:-1])
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return f"now a {stat.filemode(st.st_mode)}: not deleted"
        if check is not None:
            fd = os.open(parts[-1], _READ, dir_fd=parent)
            try:
                why = check(fd)
            finally:
                os.close(fd)
            if why:
                return why
        os.unlink(parts[-1], dir_fd=parent)
        return None
    except OSError as exc:
        return _why(exc, parts[-1]).strerror or str(exc)
    finally:
        os.close(parent)


def append_below(base: str, rel: str, data: bytes, mode: int = 0o600, create_dirs: bool = False) -> None:
    """Append ``data`` to the regular file ``base/rel`` (created with ``mode`` when absent), its
    directories and the file itself opened without following a symlink; fsynced. OSError else."""
    parts = parts_of(rel)
    parent = open_dir(base, parts[:-1], create=create_dirs)
    try:
        try:
            fd = os.open(parts[-1], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC,
                         mode, dir_fd=parent)
        except OSError as exc:
            raise _why(exc, parts[-1]) from None
    finally:
        os.close(parent)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{rel}: not a regular file")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_below(base: str, rel: str, fill: Callable[[BinaryIO], bool], mode: int,
                  journal: Callable[[str, int | None, int | None], None] | None = None,
                  create_dirs: bool = False, temp_prefix: str = ".driftscan-restore-",
                  dir_mode: int = 0o755) -> str | None:
    """Write ``base/rel`` as a new file: a temporary one created in the parent directory's
    descriptor (reached without following a symlink), filled by ``fill(out)`` (False: not to be
    trusted), ``mode`` set on it, fsynced, then renamed over the name within that same directory.
    ``journal(temp path, dev, ino)`` is told the temporary name before it exists and its inode
    after. None on success, else why not (``base/rel`` is then as it was)."""
    try:
        parts = parts_of(rel)
    except ValueError as exc:
        return str(exc)
    try:
        parent = open_dir(base, parts[:-1], create=create_dirs, dir_mode=dir_mode)
    except OSError as exc:
        return f"cannot write there: {exc.strerror or exc}"
    name = parts[-1]
    temp = f"{temp_prefix}{secrets.token_hex(8)}.tmp"
    temp_path = os.path.join(base, *parts[:-1], temp)
    fd = -1
    try:
        if journal is not None:
            journal(temp_path, None, None)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=parent)
        st = os.fstat(fd)
        if journal is not None:
            journal(temp_path, st.st_dev, st.st_ino)
        with os.fdopen(fd, "wb") as out:
            fd = -1
            if not fill(out):
                raise OSError("the content to write did not verify")
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        temp = ""
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        if temp:
            try:
                os.unlink(temp, dir_fd=parent)
            except OSError:
                pass
        if isinstance(exc, OSError):
            exc = _why(exc, name)
            return exc.strerror if exc.strerror else str(exc)
        raise
    finally:
        os.close(parent)
    return None

"""Reading the real ``.git``'s files as data (``fileio.read_regular``: no symlink followed, no
FIFO opened, a size cap), refusing the repository when one is there but not a regular file."""

from __future__ import annotations

import os
import stat

from ..fs.reader import read_regular
from .errors import GitRefused

INFO_MAX = 4 << 20  # info/exclude, info/attributes, objects/info/alternates, excludes files


def describe(path: str, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        try:
            return f"a symlink (to {os.readlink(path)})"
        except OSError:
            return "a symlink"
    return f"not a regular file ({stat.filemode(st.st_mode)})"


def read_optional(path: str, limit: int, what: str) -> bytes | None:
    """A repository file that may be absent; GitRefused when it is there but not a regular file."""
    try:
        return read_regular(path, limit, what=what, follow=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GitRefused(f"{path}: {exc.strerror or exc}; the repository is not read") from None


# The files in the work tree git itself opens: per-directory ignore rules (the untracked listing),
# attributes (whenever it hashes or diffs work-tree content) and submodule settings. git opens
# them with a blocking open(2), so a FIFO (or a device) there holds git until the timeout.
CONTROL_NAMES = frozenset((".gitignore", ".gitattributes", ".gitmodules"))
_SAFE = (stat.S_ISREG, stat.S_ISDIR)


def blocking_control_file(top: str) -> str | None:
    """Why the repository must not be handed to git: a control file in the work tree at ``top``
    that git's open() could block on (a FIFO, a device, a socket, or a symlink to one); None when
    there is none. Every directory is listed (``.git`` directories are not descended into); a
    directory that cannot be listed is skipped (git cannot list it either)."""
    todo = [top]
    while todo:
        directory = todo.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.name in CONTROL_NAMES:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISLNK(st.st_mode):
                        try:
                            st = os.stat(entry.path)  # stat never opens: safe on a FIFO
                        except OSError:
                            continue  # dangling: nothing to open
                    if not any(ok(st.st_mode) for ok in _SAFE):
                        return f"{entry.path} is {_kind(entry.path, st)}, which git would block on opening"
                elif entry.name != ".git" and entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
            except OSError:
                continue
    return None


def _kind(path: str, st: os.stat_result) -> str:
    kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
            else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else f"not a regular file ({stat.filemode(st.st_mode)})")
    return f"{describe(path, os.lstat(path))} to {kind}" if os.path.islink(path) else kind

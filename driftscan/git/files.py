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

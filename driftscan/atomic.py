"""Atomic file writes: a temporary file in the target's directory, fsync, then ``os.replace``.

Readers (a CI job picking up a report, an audit reading a manifest) never see half a file, and a
failed write leaves the previous file as it was.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from .errors import ConfigError


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


def write_atomic(path: str, text: str | Iterable[str], *, mode: int | None = None) -> None:
    """``text`` may come in pieces (a 40,000-file manifest is not built as one string first)."""
    import tempfile  # here, not at start-up: most runs write nothing

    path = output_path(path)
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".driftscan-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            if isinstance(text, str):
                f.write(text)
            else:
                f.writelines(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

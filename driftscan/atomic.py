"""Atomic file writes: a temporary file in the target's directory, fsync, then ``os.replace``.

Readers (a CI job picking up a report, an audit reading a manifest) never see half a file, and a
failed write leaves the previous file as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def write_atomic(path: str, text: str | Iterable[str], *, mode: int | None = None) -> None:
    """``text`` may come in pieces (a 40,000-file manifest is not built as one string first)."""
    import tempfile  # here, not at start-up: most runs write nothing

    directory = os.path.dirname(os.path.abspath(path))
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

"""Where driftscan's caches live: the user cache directory, never the audited tree. Its own
module so that a command that only looks a cache up imports nothing else."""

from __future__ import annotations

import os
import sys


def user_cache_dir() -> str:
    if os.environ.get("DRIFTSCAN_CACHE_DIR"):
        return os.environ["DRIFTSCAN_CACHE_DIR"]
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA", os.path.expanduser("~")), "driftscan", "cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/driftscan")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "driftscan")


def write_cache_file(path: str, data: bytes, prefix: str = ".cache-") -> None:
    """Write ``data`` to ``path`` atomically (a temporary file beside it, renamed over it); a
    cache that cannot be written is silently skipped: it is only a cache."""
    import tempfile  # only when something is written

    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)
            raise
    except OSError:
        pass

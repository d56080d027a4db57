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


# The cache subdirectories restore and reapply write to (their journals, the reapply ledger,
# originals kept for later runs).
WRITTEN_SUBDIRS = ("restore", "reapply", "originals")


def refuse_inside(roots) -> None:
    """ConfigError when driftscan's cache directory, or one of the subdirectories a writing
    command uses, resolves inside one of ``roots`` (an environment or model directory being
    audited or written): a cache there would write into the audited tree. Nothing is created."""
    from ..core.errors import ConfigError

    base = user_cache_dir()
    real_roots = [os.path.realpath(r) for r in roots if r]
    for sub in ("", *WRITTEN_SUBDIRS):
        path = os.path.join(base, sub) if sub else base
        real = os.path.realpath(path)
        for root in real_roots:
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                where = f"{path} resolves to {real}" if real != os.path.abspath(path) else path
                raise ConfigError(f"driftscan's cache {where}, inside the audited tree {root}: nothing written "
                                  "(set DRIFTSCAN_CACHE_DIR to a directory outside it)")

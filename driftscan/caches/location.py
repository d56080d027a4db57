"""Where driftscan's caches live: the user cache directory, never the audited tree. Its own
module so that a command that only looks a cache up imports nothing but the confined file access."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import BinaryIO

from ..core.errors import ConfigError
from ..fs.confined import rel_below, replace_below


def user_cache_dir() -> str:
    if os.environ.get("DRIFTSCAN_CACHE_DIR"):
        return os.environ["DRIFTSCAN_CACHE_DIR"]
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA", os.path.expanduser("~")), "driftscan", "cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/driftscan")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "driftscan")


def below_cache(path: str) -> tuple[str, str]:
    """``path`` as (base, relative path): below the cache directory when it is there (the cache
    directory is the user's to choose and is followed; nothing below it is), else below its own
    directory (a cache file the user named elsewhere)."""
    root = os.path.abspath(user_cache_dir())
    rel = rel_below(root, path)
    if rel is None:
        return os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    return root, rel


def write_cache_file(path: str, data: bytes, prefix: str = ".cache-", mode: int = 0o600,
                     dir_mode: int = 0o755) -> str | None:
    """Write ``data`` to ``path`` atomically: every directory below the cache directory opened
    (or made) without following a symlink, a temporary file created in the opened parent and
    renamed over the name within it (``fs.confined``). A cache subdirectory swapped for a link
    (into the audited tree, say) fails this write: nothing is written through it. None when
    written, else why not; callers that only keep a cache skip it: it is only a cache."""
    base, rel = below_cache(path)

    def fill(out: BinaryIO) -> bool:
        out.write(data)
        return True

    try:
        os.makedirs(base, exist_ok=True)
    except OSError as exc:
        return f"{path}: cannot write there: {exc.strerror or exc}; not written"
    why = replace_below(base, rel, fill, mode, create_dirs=True, temp_prefix=prefix, dir_mode=dir_mode)
    return f"{path}: {why}; not written" if why else None


# The cache subdirectories restore, reapply and patch apply write to (their journals, the reapply
# ledger, originals kept for later runs, the record of the patches applied).
WRITTEN_SUBDIRS = ("restore", "reapply", "originals", "patches")


def refuse_inside(roots: Iterable[str | None]) -> None:
    """ConfigError when driftscan's cache directory, or one of the subdirectories a writing
    command uses, resolves inside one of ``roots`` (an environment or model directory being
    audited or written): a cache there would write into the audited tree. Nothing is created."""
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

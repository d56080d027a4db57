"""uv's cache: where it is, and which cached file a venv file is hard-linked (or symlinked) to.

uv installs by linking files from ``<cache>/archive-v0/<id>/`` (an unpacked wheel). An in-place
edit of such a file edits the cache copy too, so a reinstall relinks the edited file and every
venv sharing the cache sees the edit (docs/installers.md §2).
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass


def _tool_dir(env: dict[str, str] | None, override: str, xdg: tuple[str, str], home: tuple[str, ...],
              windows: tuple[str, ...]) -> str | None:
    """A tool's own directory by its rule: ``override``'s variable, else the platform default
    (``xdg``: the XDG variable and the folder under it; ``home``: the path under ~ without it)."""
    env = dict(os.environ) if env is None else env
    if env.get(override):
        return os.path.abspath(env[override])
    if sys.platform == "win32":
        base = env.get("LOCALAPPDATA")
        return os.path.join(base, *windows) if base else None
    if env.get(xdg[0]):
        return os.path.join(env[xdg[0]], xdg[1])
    user_home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(user_home, *home) if user_home and user_home != "~" else None


def default_uv_cache(env: dict[str, str] | None = None) -> str | None:
    """UV_CACHE_DIR, else uv's platform default ($XDG_CACHE_HOME/uv, ~/.cache/uv, %LOCALAPPDATA%)."""
    return _tool_dir(env, "UV_CACHE_DIR", ("XDG_CACHE_HOME", "uv"), (".cache", "uv"), ("uv", "cache"))


@dataclass(frozen=True)
class CacheCopy:
    path: str  # the file inside archive-v0
    same_file: bool  # hard link or symlink target: the venv's edit is in the cache too


def _archive(cache_dir: str) -> str:
    return os.path.join(cache_dir, "archive-v0")


def _candidates(cache_dir: str | None, record_path: str):
    """``archive-v0/<id>/<record_path>`` for every cached archive: one path per archive, no walk."""
    if not cache_dir:
        return
    try:
        ids = os.scandir(_archive(cache_dir))
    except OSError:
        return
    # record_path is the tree's (a RECORD row): "../../../../etc/shadow" must not climb out.
    if os.path.isabs(record_path) or ".." in record_path.replace("\\", "/").split("/") or "\0" in record_path:
        return
    with ids:
        for entry in ids:
            yield os.path.join(entry.path, record_path)


def find_cache_copy(cache_dir: str | None, path: str, record_path: str) -> CacheCopy | None:
    """Find the cache file that ``path`` (a venv file with ``st_nlink > 1``) is a hard link of,
    by device and inode."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    for candidate in _candidates(cache_dir, record_path):
        try:
            other = os.stat(candidate)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return CacheCopy(candidate, True)
    return None


def find_pristine_copy(cache_dir: str | None, record_path: str, digest_matches) -> str | None:
    """A cached copy of ``record_path`` whose content matches RECORD (``digest_matches(path)``)."""
    for candidate in _candidates(cache_dir, record_path):
        try:
            regular = stat.S_ISREG(os.lstat(candidate).st_mode)  # a link inside the cache is not followed
        except OSError:
            continue
        if regular and digest_matches(candidate):
            return candidate
    return None


def default_virtualenv_app_data(env: dict[str, str] | None = None) -> str | None:
    """virtualenv's app-data directory, where ``--symlink-app-data`` venvs link their seed packages
    (pip, setuptools) from: VIRTUALENV_OVERRIDE_APP_DATA, else $XDG_DATA_HOME/virtualenv or
    ~/.local/share/virtualenv. Like uv's cache, a place driftscan's own environment names."""
    return _tool_dir(env, "VIRTUALENV_OVERRIDE_APP_DATA", ("XDG_DATA_HOME", "virtualenv"),
                     (".local", "share", "virtualenv"), ("pypa", "virtualenv"))

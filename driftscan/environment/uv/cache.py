"""uv's cache: where it is, and which cached file a venv file is hard-linked (or symlinked) to.

uv installs by linking files from ``<cache>/archive-v0/<id>/`` (an unpacked wheel). An in-place
edit of such a file edits the cache copy too, so a reinstall relinks the edited file and every
venv sharing the cache sees the edit (docs/installers.md §2).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
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


def _candidates(cache_dir: str | None, record_path: str) -> Iterator[str]:
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


def find_pristine_copy(cache_dir: str | None, record_path: str, digest_matches: Callable[[str], bool]) -> str | None:
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


# -- the cache's own archives -----------------------------------------------------------------
# uv 0.13 unpacks each wheel into ``archive-v0/<id>/`` and keeps, per source, a symlink to it:
# ``wheels-v8/pypi/<name>/<version>-<tag>`` (the registry) or ``wheels-v8/<index|url|path>/<hash>/
# <name>/<version>-<tag>`` (other indexes, find-links, URLs, wheel files). The suffixes change between
# uv releases, so they are matched by pattern. Everything here is the cache's: listings are
# bounded, no symlink is followed except the index's into this cache's own archive directories,
# and an ``archive-v*`` directory or ``archive-v*/<id>`` that is itself a symlink (uv follows it, as
# the OS resolves its index's links) only when it resolves inside the cache directory named; one
# leading out of it is not followed and is listed as not checked (``links_out``).

MAX_ARCHIVES = 100_000  # archive directories listed for an audit of the whole cache
MAX_SOURCES = 4_096  # <hash> directories of one wheels-v*/<kind>/ looked at per distribution


def within(cache_dir: str, path: str) -> bool:
    """Whether ``path`` resolves (symlinks followed) to a directory strictly inside ``cache_dir``."""
    real_root, real = os.path.realpath(cache_dir), os.path.realpath(path)
    return real.startswith(real_root.rstrip(os.sep) + os.sep) and os.path.isdir(real)


def _dir_in_cache(cache_dir: str, entry: os.DirEntry[str]) -> bool:
    """A real directory, or a symlink to a directory inside the cache (uv follows it too)."""
    if entry.is_dir(follow_symlinks=False):
        return True
    return entry.is_symlink() and within(cache_dir, entry.path)


def _versioned(cache_dir: str, stem: str) -> list[str]:
    """``<cache>/<stem>-v<N>`` directories (real directories, or symlinks to directories inside the
    cache), newest format first."""
    try:
        with os.scandir(cache_dir) as entries:
            found = [e.path for e in entries if e.name.startswith(stem + "-v") and e.name[len(stem) + 2:].isdigit()
                     and _dir_in_cache(cache_dir, e)]
    except OSError:
        return []
    return sorted(found, key=lambda p: -int(p.rsplit("-v", 1)[1]))


def archive_dirs(cache_dir: str) -> list[str]:
    """The ``archive-v*`` directories of a cache."""
    return _versioned(cache_dir, "archive")


def list_archives(cache_dir: str, limit: int = MAX_ARCHIVES) -> tuple[list[str], bool]:
    """Every archive directory of the cache (``archive-v*/<id>``: real directories, or symlinks to
    directories inside the cache), sorted, and whether the listing stopped at ``limit``."""
    found: list[str] = []
    for root in archive_dirs(cache_dir):
        try:
            with os.scandir(root) as ids:
                for entry in ids:
                    if len(found) >= limit:
                        return sorted(found), True
                    if _dir_in_cache(cache_dir, entry):
                        found.append(entry.path)
        except OSError:
            continue
    return sorted(found), False


def links_out(cache_dir: str, limit: int = MAX_ARCHIVES, top_only: bool = False) -> list[tuple[str, str]]:
    """(link, where it leads) for each ``archive-v*`` directory or ``archive-v*/<id>`` of the cache
    that is a symlink leading out of it (or dangling): uv follows it, driftscan does not.
    ``top_only``: the ``archive-v*`` directories alone (one listing of the cache's top)."""
    out: list[tuple[str, str]] = []
    seen = 0
    try:
        with os.scandir(cache_dir) as entries:
            tops = [e for e in entries if e.name.startswith("archive-v") and e.name[len("archive-v"):].isdigit()]
    except OSError:
        return out
    for top in tops:
        if top.is_symlink():
            if not within(cache_dir, top.path):
                out.append((top.path, os.path.realpath(top.path)))
                continue
        elif not top.is_dir(follow_symlinks=False):
            continue
        if top_only:
            continue
        try:
            with os.scandir(top.path) as ids:
                for entry in ids:
                    seen += 1
                    if seen > limit:
                        return out
                    if entry.is_symlink() and not within(cache_dir, entry.path):
                        out.append((entry.path, os.path.realpath(entry.path)))
        except OSError:
            continue
    return out


def _norm(name: str) -> str:
    return "-".join(part for part in name.lower().replace("_", "-").replace(".", "-").split("-") if part)


def _index_target(link: str, roots: list[str]) -> str | None:
    """The ``archive-v*/<id>`` path an index symlink names, if it names one of this cache's archive
    directories (no other target is taken: the link is the cache's data). Not looked at further."""
    try:
        if not stat.S_ISLNK(os.lstat(link).st_mode):
            return None
        target = os.path.normpath(os.path.join(os.path.dirname(link), os.readlink(link)))
    except OSError:
        return None
    if os.path.dirname(target) not in roots or os.path.basename(target) in ("", ".", ".."):
        return None
    return target


def _archive_of(cache_dir: str, link: str, roots: list[str]) -> str | None:
    """The archive directory an index symlink names, if it is one of this cache's and a directory
    there (or a symlink to one inside the cache)."""
    target = _index_target(link, roots)
    if target is None:
        return None
    try:
        mode = os.lstat(target).st_mode
    except OSError:
        return None
    return target if stat.S_ISDIR(mode) or (stat.S_ISLNK(mode) and within(cache_dir, target)) else None


@dataclass(frozen=True)
class IndexedArchive:
    archive: str  # archive-v*/<id>
    entry: str  # the wheels-v*/… symlink that names it: what a new install from that source links


def index_roots(cache_dir: str) -> list[str]:
    """The directories of uv's wheel index that hold ``<name>/`` directories: ``wheels-v*/<kind>``
    (the registry's ``pypi``) and ``wheels-v*/<kind>/<hash>`` (other indexes, find-links, URLs,
    wheel files). Listed once, shared by every distribution looked up."""
    roots: list[str] = []
    for wheels in _versioned(cache_dir, "wheels"):
        try:
            with os.scandir(wheels) as kinds:
                kind_dirs = [e.path for e in kinds if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for kind in kind_dirs:
            roots.append(kind)  # wheels-v*/pypi/<name>
            try:
                with os.scandir(kind) as sources:
                    roots += [source.path for _, source in zip(range(MAX_SOURCES), sources)
                              if source.is_dir(follow_symlinks=False)]  # wheels-v*/index/<hash>/<name>
            except OSError:
                continue
    return roots


def indexed_archives(cache_dir: str | None, name: str, version: str | None,
                     roots: list[str] | None = None) -> list[IndexedArchive]:
    """The archives uv's wheel index names for ``name`` ``version`` (every source: the registry,
    other indexes, find-links, URLs, wheel files): what a new install of it links from.
    ``version`` None: every version the index holds. ``roots``: ``index_roots(cache_dir)``, when
    the caller looks up several distributions."""
    if not cache_dir:
        return []
    archive_roots = [os.path.normpath(r) for r in archive_dirs(cache_dir)]
    wanted, prefix = _norm(name), (f"{version}-" if version is not None else "")
    out: list[IndexedArchive] = []
    for root in index_roots(cache_dir) if roots is None else roots:
        try:
            with os.scandir(os.path.join(root, wanted)) as entries:
                links = [e.path for e in entries if e.name.startswith(prefix) and e.is_symlink()]
        except OSError:
            continue
        for link in sorted(links):
            archive = _archive_of(cache_dir, link, archive_roots)
            if archive is not None:
                out.append(IndexedArchive(archive, link))
    return out


def indexed_links_out(cache_dir: str | None, name: str, roots: list[str] | None = None) -> list[tuple[str, str]]:
    """(archive, where it leads) for each ``archive-v*/<id>`` that uv's wheel index names for
    ``name`` (any version) and that is a symlink leading out of the cache (or dangling): driftscan
    does not follow it, so it is not checked."""
    if not cache_dir:
        return []
    archive_roots = [os.path.normpath(r) for r in archive_dirs(cache_dir)]
    out: dict[str, str] = {}
    for root in index_roots(cache_dir) if roots is None else roots:
        try:
            with os.scandir(os.path.join(root, _norm(name))) as entries:
                links = [e.path for e in entries if e.is_symlink()]
        except OSError:
            continue
        for link in links:
            target = _index_target(link, archive_roots)
            if target is None or target in out:
                continue
            try:
                leads_out = stat.S_ISLNK(os.lstat(target).st_mode) and not within(cache_dir, target)
            except OSError:
                continue
            if leads_out:
                out[target] = os.path.realpath(target)
    return sorted(out.items())


MAX_INDEX_ENTRIES = 200_000  # wheel index entries looked at for an audit of the whole cache


def all_indexed_archives(cache_dir: str, limit: int = MAX_INDEX_ENTRIES) -> list[IndexedArchive]:
    """Every (archive, index symlink) pair of uv's wheel index: ``wheels-v*/pypi/<name>/*`` and
    ``wheels-v*/<kind>/<hash>/<name>/*``, at most ``limit`` entries looked at."""
    roots = [os.path.normpath(r) for r in archive_dirs(cache_dir)]
    out: list[IndexedArchive] = []
    seen = 0

    def visit(directory: str, depth: int) -> None:
        nonlocal seen
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError:
            return
        for entry in listed:
            seen += 1
            if seen > limit:
                return
            if entry.is_symlink():
                archive = _archive_of(cache_dir, entry.path, roots)
                if archive is not None:
                    out.append(IndexedArchive(archive, entry.path))
            elif depth < 3 and entry.is_dir(follow_symlinks=False):
                visit(entry.path, depth + 1)

    for wheels in _versioned(cache_dir, "wheels"):
        visit(wheels, 0)
    return sorted(out, key=lambda i: (i.archive, i.entry))


def archive_holding(cache_dir: str | None, copy: str) -> str | None:
    """The archive directory (``<cache>/archive-v*/<id>``) a cache file ``copy`` is inside."""
    if not cache_dir:
        return None
    for root in archive_dirs(cache_dir):
        rel = os.path.relpath(copy, root)
        if not rel.startswith(".."):
            first = rel.split(os.sep, 1)[0]
            return os.path.join(root, first) if first not in ("", ".") else None
    return None

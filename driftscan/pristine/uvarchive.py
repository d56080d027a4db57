"""uv's unpacked wheels (``<cache>/archive-v0/<id>/``) as sources, and why one is poisoned.

uv installs by hard-linking from these directories, so an in-place edit of a venv file edits
the cache copy too (FACTS §2): a cache copy that does not verify is reported as such, with
whether it still shares its inode with the installed file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from ..fs.reader import open_regular
from ..core.values import Distribution, RecordEntry
from .base import PristineCopy, SourceKind
from .names import canonical_version, normalize_name
from .wheel import member_candidates

_DIST_INFO = ".dist-info"
MAX_ARCHIVES = 100_000  # entries of archive-v0 looked at


def _key(dist_info: str) -> tuple[str, str] | None:
    name, sep, version = dist_info[:-len(_DIST_INFO)].rpartition("-")
    return (normalize_name(name), canonical_version(version)) if sep and name and version else None


class ArchiveIndex:
    """Which archive directories hold which dist-info: one listing of archive-v0 and of each
    archive, built on first use and shared by every distribution looked up."""

    def __init__(self, cache_dir: str) -> None:
        self.cache_dir = cache_dir
        self.root = os.path.join(cache_dir, "archive-v0")
        self._by_name: dict[str, list[str]] | None = None
        self._by_key: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def _build(self) -> dict[str, list[str]]:
        by_name: dict[str, list[str]] = {}
        try:
            with os.scandir(self.root) as ids:
                archives = [e.path for _, e in zip(range(MAX_ARCHIVES), ids) if e.is_dir(follow_symlinks=False)]
        except OSError:
            archives = []
        for archive in sorted(archives):
            try:
                with os.scandir(archive) as entries:
                    names = [e.name for e in entries if e.name.endswith(_DIST_INFO) and e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            for name in names:
                by_name.setdefault(name, []).append(archive)
                key = _key(name)
                if key is not None:
                    self._by_key.setdefault(key, []).append((archive, name))
        return by_name

    def archives(self, dist: Distribution) -> Iterator[tuple[str, str]]:
        """(archive directory, its dist-info name) for each archive of ``dist``: those whose
        dist-info has the installed one's name and a RECORD, then same name and version spelled
        otherwise."""
        if self._by_name is None:
            self._by_name = self._build()
        installed = os.path.basename(dist.metadata_dir.rstrip("/"))
        found = [(a, installed) for a in self._by_name.get(installed, [])]
        found += [pair for pair in self._by_key.get((normalize_name(dist.name), canonical_version(dist.version)), [])
                  if pair[1] != installed]
        for archive, info in found:
            try:
                if stat.S_ISREG(os.lstat(os.path.join(archive, info, "RECORD")).st_mode):
                    yield archive, info
            except OSError:
                continue


class UvArchiveCopy(PristineCopy):
    """Members are the files ``<archive>/<member>``: regular files only, no symlink followed
    (``O_NOFOLLOW``, and a path resolving outside the archive is refused)."""

    def __init__(self, archive: str, info: str, distribution: Distribution) -> None:
        super().__init__(SourceKind.UV_CACHE, archive, distribution)
        self._info = info
        try:
            with os.scandir(archive) as entries:
                self._data = tuple(sorted(e.name for e in entries
                                          if e.name.endswith(".data") and e.is_dir(follow_symlinks=False)))
        except OSError:
            self._data = ()
        self._installed = os.path.basename(distribution.metadata_dir.rstrip("/"))
        self._opened: dict[str, os.stat_result] = {}  # member path → its fstat, for explain()

    @property
    def dist_info(self) -> str:
        """The archive's ``*.dist-info`` directory name (the unpacked wheel's own)."""
        return self._info

    def _candidates(self, entry: RecordEntry) -> list[str]:
        return [os.path.join(self.path, *name.split("/"))
                for name in member_candidates(entry.path, self._installed, self._info, self._data)]

    def has(self, entry: RecordEntry) -> bool:
        for candidate in self._candidates(entry):
            try:
                if stat.S_ISREG(os.lstat(candidate).st_mode):
                    return True
            except OSError:
                continue
        return False

    def executable(self, entry: RecordEntry) -> bool:
        for candidate in self._candidates(entry):
            try:
                st = os.lstat(candidate)
            except OSError:
                continue
            return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)
        return False

    def _open(self, entry: RecordEntry) -> tuple[BinaryIO, int | None] | None:
        for candidate in self._candidates(entry):
            try:
                fd, st = open_regular(candidate, follow=False, root=self.path)
            except FileNotFoundError:
                continue
            self._opened[entry.path] = st
            return os.fdopen(fd, "rb"), st.st_size
        return None

    def explain(self, entry: RecordEntry, why: str) -> str:
        st = self._opened.get(entry.path)
        if st is None or why.startswith(("not in", "unreadable", "RECORD")):
            return f"{entry.path}: {why}"
        try:
            installed = os.lstat(os.path.join(self.distribution.site_packages, *entry.path.split("/")))
            shared = (installed.st_dev, installed.st_ino) == (st.st_dev, st.st_ino)
        except OSError:
            shared = False
        if shared:
            how = "a hard link shared with a venv: poisoned; it shares its inode with the installed file"
        elif st.st_nlink > 1:
            how = f"a hard link shared with a venv ({st.st_nlink} links): poisoned"
        else:
            return f"{entry.path} does not match RECORD: the cached copy is edited ({why})"
        return f"{entry.path} does not match RECORD: the cached copy is edited ({how})"

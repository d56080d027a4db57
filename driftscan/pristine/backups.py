"""Backups people keep beside the file they edit (``weight_utils.py.bak``, ``config.py.orig``,
``deepseek_v2.py~``) as a distribution's originals.

A sibling is only a candidate: its bytes go through the same RECORD check as every other
source's (``PristineCopy.check``), so a backup taken after the edit, or of another version, is
never used. Of several siblings of one file the first that verifies is the one; each is opened
as a regular file, never through a symlink, and read no further than RECORD's size.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import BinaryIO

from ..core.values import Distribution, RecordEntry, SourceKind
from ..fs.paths import BACKUP_SUFFIXES, backup_names
from ..fs.reader import open_regular
from .base import PristineCopy

SHOWN = 3  # backups named in the copy's description before "and N more"


class BackupCopy(PristineCopy):
    """The originals that backups beside the drifted files of one distribution hold."""

    def __init__(self, dist: Distribution, siblings: dict[str, list[str]]) -> None:
        first = next(iter(siblings.values()))[0]
        super().__init__(SourceKind.BACKUP, first, dist)
        self._siblings = siblings  # RECORD path -> its backups that exist, in BACKUP_SUFFIXES order
        self._chosen: dict[str, str] = {}  # RECORD path -> the backup whose bytes verified
        self._trying: str | None = None

    @property
    def where(self) -> str:
        names = [os.path.relpath(p, self.distribution.site_packages) for p in self.chosen_paths()]
        if not names:
            names = [os.path.relpath(s[0], self.distribution.site_packages) for s in self._siblings.values()]
        shown = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
        return f"{shown} (beside the edited files in {self.distribution.site_packages})"

    def chosen_paths(self) -> list[str]:
        """The backups whose bytes verified, one per RECORD path."""
        return list(self._chosen.values())

    def chosen_items(self) -> list[tuple[str, str]]:
        """(RECORD path, the backup whose bytes verified) pairs."""
        return list(self._chosen.items())

    def has(self, entry: RecordEntry) -> bool:
        return entry.path in self._siblings

    def _open(self, entry: RecordEntry) -> tuple[BinaryIO, int | None] | None:
        path = self._trying or self._chosen.get(entry.path)
        if path is None:
            return None
        fd, st = open_regular(path, follow=False, root=self.distribution.site_packages)
        return os.fdopen(fd, "rb"), st.st_size

    def check(self, entry: RecordEntry, out: BinaryIO | None = None, limit: int | None = None) -> str | None:
        if entry.path not in self._chosen:
            why = f"not in {self.source.label}"
            for sibling in self._siblings.get(entry.path, ()):
                self._trying = sibling
                try:
                    why = super().check(entry, None, limit) or ""
                finally:
                    self._trying = None
                if not why:
                    self._chosen[entry.path] = sibling
                    break
                why = f"{os.path.basename(sibling)}: {why}"
            else:
                return why
            if out is None:
                return None
        return super().check(entry, out, limit)


def backup_candidate(dist: Distribution, wanted: Sequence[RecordEntry], notes: list[str]) -> BackupCopy | None:
    """The backups beside ``wanted``'s installed files (regular files only), or None with a note."""
    siblings: dict[str, list[str]] = {}
    for entry in wanted:
        found = []
        for name in backup_names(os.path.join(dist.site_packages, entry.path)):
            try:
                st = os.lstat(name)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and (entry.size is None or st.st_size == entry.size):
                found.append(name)
        if found:
            siblings[entry.path] = found
    if not siblings:
        notes.append(f"backups beside the files (no {', '.join('*' + s for s in BACKUP_SUFFIXES)} of the same size)")
        return None
    return BackupCopy(dist, siblings)

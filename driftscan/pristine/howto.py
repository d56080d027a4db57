"""How to get an original driftscan did not find: the exact lines a user can run.

Three ways, the same for every command that needs originals (checkpoint, restore, reapply):
``--wheels DIR`` (a directory holding the installed release's wheel), ``--fetch`` (driftscan
runs ``pip download`` itself), or the ``pip download`` line that fills such a directory, with
the installed wheel's tags and the environment's index settings (as ``--fetch`` would use).
The name and version come from the tree's METADATA: they are validated as ``--fetch`` does and
quoted for the shell; a name pip could not be asked for gets no ``pip download`` line.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from ..caches.location import user_cache_dir
from ..core.values import Distribution, RecordEntry
from .base import Lookup
from .fetch import _NAME, _VERSION, index_arguments, tag_arguments
from .names import installed_tags


def wheels_dir() -> str:
    """Where the suggested ``pip download -d`` puts wheels: ``wheels/`` in driftscan's cache
    directory (outside every audited tree; ``--wheels`` reads it back)."""
    return os.path.join(user_cache_dir(), "wheels")


def download_line(dist: Distribution, python_version: str | None, venv: str | None, dest: str,
                  tags: frozenset[str] | None = None) -> str | None:
    """``pip download --no-deps --only-binary :all: [tags] [index] NAME==VERSION -d DEST``: the
    installed release's wheel, for ``--wheels DEST``; None when the name or version is not one
    pip could be asked for. ``tags``: instead of ``dist``'s own WHEEL's (a release not installed)."""
    if not _NAME.fullmatch(dist.name) or not _VERSION.fullmatch(dist.version):
        return None
    index_args, _ = index_arguments(venv)
    return shlex.join(["pip", "download", "--no-deps", "--only-binary", ":all:",
                       *tag_arguments(tags if tags is not None else installed_tags(dist), python_version),
                       *index_args, f"{dist.name}=={dist.version}", "-d", dest])


@dataclass(frozen=True)
class WaysToOriginal:
    """The three ways to an original of ``requirement``, as lines to show."""

    requirement: str  # NAME==VERSION
    download: str | None  # the pip download line (into ``wheels``), or None
    wheels: str  # the directory that line fills

    def text(self) -> str:
        """One line: "pass --wheels DIR (…), or --fetch; to fill DIR: pip download …"."""
        fill = f"; to fill it: {self.download}" if self.download else ""
        return (f"pass --wheels {shlex.quote(self.wheels)} (a directory holding the {self.requirement} wheel) "
                f"or --fetch{fill}")


def ways_to_original(dist: Distribution, python_version: str | None, venv: str | None) -> WaysToOriginal:
    where = wheels_dir()
    return WaysToOriginal(f"{dist.name}=={dist.version}", download_line(dist, python_version, venv, where), where)


def why_no_original(lookup: Lookup | None, entry: RecordEntry, uv_edited: bool = False) -> str:
    """Why this very file has no verified original, in a line (not why its distribution's other
    files have one). ``uv_edited``: the file shares its inode with uv's cache copy."""
    if lookup is None:
        return "no original was looked for"
    if entry.hash is None:
        return "RECORD gives no hash for it: nothing to verify an original against"
    copy = lookup.copy
    if copy is None:
        return lookup.reason or "no verified original found"
    why = copy.check(entry)
    said = f"{copy.source.label} {copy.where}: " + (copy.explain(entry, why) if why else f"{entry.path} verifies there")
    if uv_edited and "poisoned" not in said:
        said += "; it was edited through uv's hard link, so uv's cache copy is edited too"
    rejected = [f"{r.source.label} {r.path} (rejected: {r.reason})" for r in lookup.rejected
                if r.path != copy.path and entry.path in r.reason]
    return "; ".join([said, *rejected])

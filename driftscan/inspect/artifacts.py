"""Dumps left on disk: glob what a dump call writes, refusing patterns that are too broad.

A finding's ``artifact_pattern`` (see paths.py) says what files a dump call writes. Looking
for them is only safe when the pattern is specific: ``/tmp/nomla_*_*.pt`` is, ``/tmp/*.pt``
(any tensor anyone saved to /tmp) or ``/tmp/*`` is not — reporting those files as debug
artifacts, or offering to delete them, would be wrong.

A pattern is *too broad* when it is not absolute, uses ``**``, or its last component has
wildcards and no constant letter or digit besides the extension (``*.pt``, ``*_*.npy``,
``*``). A last component without wildcards names one file and is always specific.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from dataclasses import dataclass

_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}$")
_TOKEN = re.compile(r"\[[^\]]+\]|.", re.S)


@dataclass(frozen=True)
class ArtifactGroup:
    """The files one pattern matches now (regular files only, sorted)."""

    pattern: str
    paths: tuple[str, ...]
    total_bytes: int
    too_broad: bool = False


def _split_glob(component: str) -> tuple[str, bool]:
    """The constant characters of a glob component, and whether it has any wildcard.
    A one-character bracket (``[*]``, as paths.py escapes) is a literal character."""
    constant: list[str] = []
    wild = False
    for m in _TOKEN.finditer(component):
        token = m.group(0)
        if token in ("*", "?"):
            wild = True
        elif token.startswith("[") and len(token) > 1:
            if len(token) == 3:
                constant.append(token[1])
            else:
                wild = True
        else:
            constant.append(token)
    return "".join(constant), wild


def is_too_broad(pattern: str) -> bool:
    expanded = os.path.expanduser(pattern)
    if not expanded.startswith("/") or "**" in expanded:
        return True
    last = expanded.rstrip("/").rsplit("/", 1)[-1]
    if not last:
        return True  # the root directory itself
    constant, wild = _split_glob(last)
    if not wild:
        return False
    return not any(c.isalnum() for c in _EXTENSION.sub("", constant))


def artifact_pattern(glob_text: str | None) -> str | None:
    """The pattern worth looking for on disk, or None (unknown, relative or too broad)."""
    if not glob_text or not glob_text.startswith(("/", "~")) or is_too_broad(glob_text):
        return None
    return glob_text


def find_artifacts(pattern: str) -> ArtifactGroup | None:
    """Files matching ``pattern`` now; None when there are none.

    A too-broad pattern is not globbed: the result has ``too_broad=True`` and no paths, so the
    caller can say "pattern too broad, skipped".
    """
    if is_too_broad(pattern):
        return ArtifactGroup(pattern, (), 0, too_broad=True)
    paths: list[str] = []
    total = 0
    for path in glob.iglob(os.path.expanduser(pattern)):
        try:
            st = os.lstat(path)
        except OSError:
            continue  # removed since it was listed
        if stat.S_ISREG(st.st_mode):
            paths.append(path)
            total += st.st_size
    if not paths:
        return None
    return ArtifactGroup(pattern, tuple(sorted(paths)), total)

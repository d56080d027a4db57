"""Where a model directory's files came from: one module per kind of record, and the order they
are tried in.

A directory is of the first kind whose ``recognise`` says so: a hub cache repository (by its
place), download metadata (``hf download --local-dir``), a git work tree, then an in-tree
driftscan manifest. Provenance comes before an in-tree manifest: the question is "what was
edited since it was downloaded"; the manifest still serves as a source of original text. A
manifest the user names is used before any of them. ``interface.py`` says what a module defines.
"""

from __future__ import annotations

import os

from ...core.errors import TargetError
from ...core.values import LayoutKind
from ...formats.manifest import MANIFEST_NAME
from ...fs.paths import printable
from ..layout import ModelDirLayout
from . import gitclone, hubcache, localdir, manifestdir
from .interface import Provenance

PROVENANCES: tuple[Provenance, ...] = (hubcache, localdir, gitclone, manifestdir)  # in the order tried


def provenance_of(kind: LayoutKind) -> Provenance | None:
    return next((p for p in PROVENANCES if p.KIND is kind), None)


def detect_layout(path: str, *, revision: str | None = None, manifest: str | None = None) -> ModelDirLayout:
    """Raises TargetError when ``path`` does not exist or is not a directory; nothing else."""
    if not os.path.lexists(path):
        raise TargetError(f"{printable(path)}: no such directory")
    if not os.path.isdir(path):
        raise TargetError(f"{printable(path)}: not a directory")
    path = os.path.abspath(path)
    if manifest is not None:
        return ModelDirLayout(path, path, LayoutKind.MANIFEST, manifest=os.path.abspath(manifest))
    in_tree = os.path.join(path, MANIFEST_NAME)
    fallback = in_tree if os.path.isfile(in_tree) else None
    for provenance in PROVENANCES:
        layout = provenance.recognise(path, revision, fallback)
        if layout is not None:
            return layout
    return ModelDirLayout(path, path, LayoutKind.UNKNOWN)

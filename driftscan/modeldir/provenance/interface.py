"""What a provenance module provides: the seam between a model directory's records of where its
files came from and the checks every kind shares (``check.py``, ``consistency.py``, ``remedies.py``).

A provenance module (``localdir.py``, ``hubcache.py``, ``gitclone.py``, ``manifestdir.py``)
defines:

- ``KIND``: its ``LayoutKind``; ``ABSENT``: what a directory of no known kind lacks, in the
  report's words ("download metadata"; None when the kind is recognised by its place, not by a
  record); ``SELF_AUDITED``: an audit of the directory alone finds its drift, so
  ``driftscan checkpoint --model-dir`` can save it before a remedy destroys it.
- ``recognise(path, revision, in_tree_manifest) -> ModelDirLayout | None``: whether ``path`` is
  of its kind, looking at names and small records only.
- ``audit(ctx, layout, revision) -> KindResult | None``: every file against the records (None:
  the records cover nothing here after all; the in-tree manifest, if any, is used instead).
- ``way_back(check, root, commit, memo) -> WayBack``: how to get a modified or missing file's
  original back (``memo``: a dict the module may keep answers in for one result's checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ...core.values import FileCheck, LayoutKind
from ..check import Context, KindResult
from ..layout import ModelDirLayout


@dataclass(frozen=True)
class WayBack:
    remedy: str
    evidence: str = ""  # appended to the drift's evidence (where a guess in the remedy came from)


class Provenance(Protocol):
    @property
    def KIND(self) -> LayoutKind: ...

    @property
    def ABSENT(self) -> str | None: ...

    @property
    def SELF_AUDITED(self) -> bool: ...

    def recognise(self, path: str, revision: str | None, in_tree_manifest: str | None) -> ModelDirLayout | None: ...

    def audit(self, ctx: Context, layout: ModelDirLayout, revision: str | None) -> KindResult | None: ...

    def way_back(self, check: FileCheck, root: str, commit: str | None, memo: dict[Any, Any]) -> WayBack: ...

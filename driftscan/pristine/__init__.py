"""Where a distribution's original (pristine) files come from: the wheel direct_url.json names,
``--wheels`` directories, uv's cache, pip's HTTP cache, the originals driftscan kept before, or
(``--fetch``) a download.

Every byte handed out has been verified against the installed RECORD row it is asked for
(docs/pristine-sources.md).
"""

from .base import Lookup, PristineCopy, PristineOptions, Rejected, SourceKind
from .search import NOT_A_WHEEL, PristineSet, find_pristine

__all__ = ["NOT_A_WHEEL", "Lookup", "PristineCopy", "PristineOptions", "PristineSet", "Rejected", "SourceKind",
           "find_pristine"]

"""Files that tools derive from a module and keep beside it, and installer bookkeeping: no drift.

Each entry says who writes the file and how driftscan finds the module it derives from; a
derived file whose module exists is data the tool rewrites at will (bytecode is the model).
The table is the one place to add such a cache; docs/environments.md lists it, and every
entry is tested on the real tool (tests/e2e/test_derived_files.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_PYCACHE = "__pycache__"


@dataclass(frozen=True)
class DerivedCache:
    """Files in a module's ``__pycache__`` named after it: ``<stem>.<anything matching>``."""

    name: str
    writer: str
    pattern: re.Pattern[str]  # the file name after "<module stem>."


DERIVED_CACHES = (
    # numba's @jit(cache=True): "<stem>.<qualname>-<line>.py<XY>[abiflags].nbi" (the index) and
    # ".<n>.nbc" (one per compiled signature), seen with numba 0.6x.
    DerivedCache("numba cache", "numba @jit(cache=True)", re.compile(r"^.+-\d+\.py\d+[a-z]*(?:\.nbi|\.\d+\.nbc)$")),
)


def derived_source(path: str) -> tuple[str, DerivedCache] | None:
    """The module a file in a ``__pycache__`` derives from (``pkg/__pycache__/m.f-3.py311.nbi``
    → ``pkg/m.py``) and the cache it belongs to; None when no table entry matches.
    (Bytecode has its own rules: ownership.bytecode_source.)"""
    parent, _, name = path.rpartition(os.sep)
    if os.path.basename(parent) != _PYCACHE:
        return None
    stem, dot, rest = name.partition(".")  # module names hold no dots: the stem ends at the first
    if not dot or not stem:
        return None
    for cache in DERIVED_CACHES:
        if cache.pattern.match(rest):
            return os.path.join(os.path.dirname(parent), stem + ".py"), cache
    return None


# uv pip install --target DIR keeps a lock file at the top of DIR (empty; uv 0.13).
UV_TARGET_LOCK = ".lock"


def is_installer_bookkeeping(site: str, entry: os.DirEntry[str]) -> bool:
    """Files an installer keeps at the top of a directory it installs into, outside any RECORD
    (an empty one only: a lock file with content is not uv's)."""
    if entry.name != UV_TARGET_LOCK or os.path.dirname(entry.path) != site:
        return False
    try:
        return entry.stat(follow_symlinks=False).st_size == 0 and entry.is_file(follow_symlinks=False)
    except OSError:
        return False

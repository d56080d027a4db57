"""Which directory of an environment a path's ``relpath`` is relative to (``paths.relpath``)."""

from __future__ import annotations

import os

from ..core.values import Target


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def root_of(target: Target, path: str) -> str:
    for site in target.site_packages:
        if _inside(path, site):
            return site
    if target.venv and _inside(path, target.venv):
        return target.venv
    return os.path.dirname(path)

"""Verification: a Python environment against its RECORDs (``pipeline.verify``), model
directories and snapshot roots (``tree``, ``snapshot``), git checkouts (``git``).

The environment pipeline lives in ``pipeline.py`` so that importing any of this package's other
modules (``snapshot`` and ``diff`` import ``verify.snapshot``) does not import it: it is half of
an audit's start-up. ``driftscan.verify.verify`` still names it, imported on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["verify"]


def __getattr__(name: str) -> Any:
    if name == "verify":
        from .pipeline import verify

        return verify
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

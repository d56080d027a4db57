"""Paths as people and JSON see them: undecodable bytes shown as escapes, never a crash."""

from __future__ import annotations


def printable(path: str) -> str:
    """``os.fsdecode`` leaves lone surrogates for non-UTF-8 bytes; show them as ``\\xNN``."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

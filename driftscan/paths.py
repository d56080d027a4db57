"""Paths as people and JSON see them: undecodable bytes shown as escapes, never a crash."""

from __future__ import annotations


def printable(path: str) -> str:
    """``os.fsdecode`` leaves lone surrogates for non-UTF-8 bytes; show them as ``\\xNN``."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def printable_tree(value):
    """``printable`` applied to every string inside nested dicts and lists (report payloads)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_tree(k): printable_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_tree(v) for v in value]
    return value

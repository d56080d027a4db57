"""Paths as people and JSON see them: undecodable bytes shown as escapes, never a crash."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, TypeVar, cast, overload
import dataclasses
import enum

_Report = TypeVar("_Report")


def ancestors(start: str) -> Iterator[str]:
    """``start`` (made absolute) and every directory above it, up to the filesystem's root: the
    walk-up behind "the nearest directory holding X" (a project file, a ``.venv``, a ``.git``)."""
    here = os.path.abspath(start)
    while True:
        yield here
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent


def printable(path: str) -> str:
    """``os.fsdecode`` leaves lone surrogates for non-UTF-8 bytes; show them as ``\\xNN``."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@overload
def printable_tree(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def printable_tree(value: list[Any] | tuple[Any, ...]) -> list[Any]: ...
@overload
def printable_tree(value: object) -> object: ...


def printable_tree(value: object) -> object:
    """``printable`` applied to every string inside nested dicts and lists (report payloads)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_tree(k): printable_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_tree(v) for v in value]
    return value


# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
# isolates that can make a line read differently from what it says (CVE-2021-42574).
_UNSAFE = {c for c in range(0x20) if c not in (0x09, 0x0A)} | set(range(0x7F, 0xA0)) | \
    {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _UNSAFE}


def inert(text: str) -> str:
    """Text safe to show on a terminal: a file name from the audited tree cannot move the
    cursor, set the title, recolour or clear the screen, or reorder what a line says."""
    return text.translate(_ESCAPES)


def relpath(path: str, root: str) -> str:
    """``path`` relative to ``root`` with forward slashes, as reports and RECORD write it."""
    return os.path.relpath(path, root).replace(os.sep, "/")


_LINE_BREAKS = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85,
                                                                           0x2028, 0x2029)}


def one_line(text: str) -> str:
    """``inert``, and line breaks and tabs escaped too: a value from the tree (a file name, a
    path in code) shown on one line of text output cannot fake the lines after it."""
    return inert(text).translate(_LINE_BREAKS)


# Multi-line by nature: each renderer shows them indented under a marker (made inert when written).
MULTI_LINE = frozenset({"diff", "content_preview"})


def line_safe(model: _Report, keep: frozenset[str] = MULTI_LINE) -> _Report:
    """A copy of a report (a datamodel.DataModel, or a pydantic model) whose strings are all
    ``one_line`` (but fields named in ``keep``, multi-line by nature), for text renderers; JSON
    keeps the real values."""
    def clean(value: object, key: str | None = None) -> object:
        if isinstance(value, enum.Enum):
            return value
        if isinstance(value, str):
            return value if key in keep else one_line(value)
        if isinstance(value, dict):
            return {k: clean(v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v, key) for v in value]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return dataclasses.replace(value, **{f.name: clean(getattr(value, f.name), f.name)
                                                 for f in dataclasses.fields(value) if f.init})
        return value

    if dataclasses.is_dataclass(model):
        return cast(_Report, clean(model))  # a dataclass of the same type
    from pydantic import BaseModel

    assert isinstance(model, BaseModel)  # not a dataclass: a pydantic model
    return cast(_Report, type(model).model_validate(clean(model.model_dump(mode="json"))))


# The names people and tools give a backup beside a file they edit: `cp x x.bak`, patch's and
# merge tools' x.orig, Emacs's and vim's x~.
BACKUP_SUFFIXES = (".bak", ".orig", "~", ".backup")


def backup_names(path: str) -> tuple[str, ...]:
    """The sibling paths that would be backups of ``path``, in the order they are tried."""
    return tuple(path + suffix for suffix in BACKUP_SUFFIXES)

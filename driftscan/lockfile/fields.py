"""Typed access to a parsed lockfile's fields: every wrong type is one LockError line naming the
file and the field."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.utils import InvalidName, canonicalize_name

from .model import LockedFile, LockError

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
MAX_PACKAGES = 200_000
MAX_NOTES = 200  # a hostile lock could earn a note per package: the rest are counted


def capped(notes: list[str]) -> tuple[str, ...]:
    """``notes``, the first ``MAX_NOTES`` of them and a count of the rest."""
    if len(notes) <= MAX_NOTES:
        return tuple(notes)
    return (*notes[:MAX_NOTES], f"... and {len(notes) - MAX_NOTES} more notes")


class Fields:
    """The reader of one file's fields; ``where`` strings name a field as "package[3].wheels[0].url"."""

    def __init__(self, path: str):
        self.path = path

    def error(self, where: str, what: str) -> LockError:
        return LockError(f"{self.path}: {where}: {what}")

    def table(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(where, f"expected a table, found {_kind(value)}")
        return value

    def array(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.error(where, f"expected an array, found {_kind(value)}")
        return value

    def tables(self, parent: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
        """``parent[key]``, an array of tables (absent: empty)."""
        items = self.array(parent.get(key, []), _at(where, key))
        return [self.table(item, f"{_at(where, key)}[{i}]") for i, item in enumerate(items)]

    def string(self, parent: dict[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
        value = parent.get(key)
        if value is None:
            if required:
                raise self.error(where or "top level", f"no {key!r}")
            return None
        if not isinstance(value, str):
            raise self.error(_at(where, key), f"expected a string, found {_kind(value)}")
        return value

    def integer(self, parent: dict[str, Any], key: str, where: str) -> int | None:
        value = parent.get(key)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.error(_at(where, key), f"expected a size in bytes, found {str(value)[:40]}")
        return value

    def name(self, parent: dict[str, Any], key: str, where: str) -> str:
        raw = self.string(parent, key, where, required=True)
        assert raw is not None
        return self.canonical(raw, _at(where, key))

    def canonical(self, raw: str, where: str) -> str:
        try:
            return canonicalize_name(raw, validate=True)
        except InvalidName:
            raise self.error(where, f"{raw[:80]!r} is not a valid package name (PEP 508)") from None

    def groups(self, parent: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        """``parent[key]``, an array of dependency-group names, normalized as PEP 735 names are
        (absent: empty)."""
        out = []
        for i, raw in enumerate(self.array(parent.get(key, []), _at(where, key))):
            if not isinstance(raw, str):
                raise self.error(f"{_at(where, key)}[{i}]", f"expected a group name, found {_kind(raw)}")
            out.append(canonicalize_name(raw))
        return tuple(dict.fromkeys(out))

    def sha256(self, value: str | None, where: str) -> str | None:
        """A "sha256:HEX" hash as lower-case hex; another algorithm gives None (not checked)."""
        if value is None:
            return None
        algorithm, sep, digest = value.partition(":")
        if not sep:
            raise self.error(where, f"not a hash of the form 'algorithm:digest': {value[:80]!r}")
        if algorithm.lower() != "sha256":
            return None
        return self.hex256(digest, where)

    def hex256(self, digest: str, where: str) -> str:
        if not _HEX64.fullmatch(digest):
            raise self.error(where, f"not a sha256 digest (64 hex digits): {digest[:80]!r}")
        return digest.lower()

    def file(self, filename: str | None, url: str | None, sha256: str | None, size: int | None) -> LockedFile:
        """A locked artifact; its file name, when the lock gives none, is the URL's or path's last
        segment (text only: nothing is opened)."""
        if filename is None and url:
            last = urlsplit(url).path.rsplit("/", 1)[-1] if "://" in url else url.replace("\\", "/").rsplit("/", 1)[-1]
            filename = unquote(last) or None
        return LockedFile(filename=filename, url=url, sha256=sha256, size=size,
                          is_wheel=bool(filename and filename.endswith(".whl")))


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _kind(value: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a float"}.get(type(value), type(value).__name__)

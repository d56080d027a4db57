"""Write a patch's manifest line into the manifest itself, as npm and pnpm do theirs.

The manifest is a file the user keeps (pyproject.toml, driftscan.toml), so it is edited as text:
one line replaced, or inserted, every other byte kept (comments, formatting, line endings, the
other tables). No TOML writer could promise that. The edit is only made where it is plainly
safe: the table has its own ``[...]`` header and the entry, when already there, is one line of
its own. The new text is then read back (tomllib, and manifest.py's reader): it must say exactly
what the old one said plus this entry, else nothing is written.
"""

from __future__ import annotations

import copy
import enum
import json
import os
import re
import stat
import sys
from dataclasses import field
from typing import Annotated, Any

from ..core.datamodel import DataModel, InlineEnum, datamodel, describe
from ..core.errors import ConfigError
from ..fs.atomic import write_atomic
from ..formats.tomlfile import TOML_MAX  # the configuration reader's bound (config/find.py: the same)
from ..fs.reader import read_regular
from .manifest import PYPROJECT, Entry, ManifestError, from_table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["PinResult", "PinStatus", "entry_line", "pin", "pin_patch"]

_HEADER_START = re.compile(r"^[ \t]*\[")
_BLANK_OR_COMMENT = re.compile(r"^[ \t]*(#.*)?$")


class PinStatus(str, enum.Enum):
    ADDED = "added"  # the manifest had no line for this patch
    REPLACED = "replaced"  # its line pinned something else (an older sha256): replaced
    UNCHANGED = "unchanged"  # its line already said this: nothing written


@datamodel
class PinResult(DataModel):
    manifest: str = field(metadata=describe("the manifest file the line was written to"))
    key: str = field(metadata=describe("the patch file as the manifest names it (relative to the manifest)"))
    status: Annotated[PinStatus, InlineEnum(PinStatus)] = field(metadata=describe("added | replaced | unchanged"))


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def entry_line(key: str, distribution: str, version: str, sha256: str) -> str:
    """The manifest line that pins ``key`` to ``distribution`` ``==version`` and ``sha256``."""
    return (f"{_quoted(key)} = {{ distribution = {_quoted(distribution)}, version = {_quoted('==' + version)}, "
            f"sha256 = {_quoted(sha256)} }}")


def _table_path(manifest: str) -> tuple[str, ...]:
    return ("tool", "driftscan", "patches") if os.path.basename(manifest) == PYPROJECT else ("patches",)


def _parse(text: str) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = tomllib.loads(text)  # (tomli, on 3.10, is untyped)
        return doc
    except (tomllib.TOMLDecodeError, RecursionError):
        return None


def _header_path(line: str) -> tuple[str, ...] | None:
    """The key path of a ``[table]`` header line (``[[array]]`` too), read as TOML reads it; None
    for any other line."""
    if not _HEADER_START.match(line):
        return None
    doc = _parse(line)
    if doc is None:
        return None
    path: list[str] = []
    node: Any = doc
    while isinstance(node, (dict, list)) and node:
        if isinstance(node, list):  # [[array]]: one table in it
            node = node[-1]
            continue
        if len(node) != 1:
            return None
        key, node = next(iter(node.items()))
        path.append(key)
    return tuple(path)


def _get(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = doc
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _split_comment(line: str, value: dict[str, Any]) -> str:
    """The trailing comment of a key line (with the spaces before it), kept when it is replaced."""
    for at in [i for i, ch in enumerate(line) if ch == "#"]:
        if _parse(line[:at]) == value:
            rest = line[:at]
            return line[len(rest.rstrip(" \t")):]
    return ""


def _read(manifest: str) -> str:
    try:
        st = os.lstat(manifest)
    except FileNotFoundError:
        raise ConfigError(f"{manifest}: no such file: nothing pinned (create it, or give --manifest FILE)") from None
    except OSError as exc:
        raise ConfigError(f"{manifest}: {exc.strerror or exc}: nothing pinned") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(f"{manifest}: a symlink: not followed, nothing pinned (name the file itself)")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{manifest}: not a regular file: nothing pinned")
    try:
        raw = read_regular(manifest, TOML_MAX, what="patch manifest", follow=False)
    except OSError as exc:
        raise ConfigError(f"{manifest}: {exc.strerror or exc}: nothing pinned") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{manifest}: not UTF-8 (byte {exc.start}): TOML files are UTF-8; nothing pinned") from None


def _entries(table: Any, manifest: str) -> list[Entry]:
    return from_table(table, manifest) if isinstance(table, dict) else []


def _edited(manifest: str, text: str, key: str, line: str, spec: dict[str, Any]) -> tuple[str, PinStatus]:
    """The new text of the manifest, and what the edit is."""
    where = ".".join(_table_path(manifest))
    path = _table_path(manifest)
    doc = _parse(text)
    if doc is None:
        raise ConfigError(f"{manifest}: not valid TOML: nothing pinned")
    table = _get(doc, path)
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{manifest}: {where} is not a table: nothing pinned")
    nl = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    header = next((i for i, ln in enumerate(lines) if _header_path(ln) == path), None)
    if header is None:
        if table is not None:
            raise ConfigError(f"{manifest}: {where} is defined without its own [{where}] header (dotted keys, "
                              "an inline table, or [...] headers of its entries): not edited, nothing pinned; add the line by hand")
        if text and not text.endswith(("\n", "\r")):
            text += nl
        gap = nl if text.strip() and not text.endswith(nl + nl) else ""
        return f"{text}{gap}[{where}]{nl}{line}{nl}", PinStatus.ADDED
    end = next((i for i in range(header + 1, len(lines)) if _header_path(lines[i]) is not None), len(lines))
    last = header
    for i in range(header + 1, end):
        body = lines[i].rstrip("\r\n")
        if _BLANK_OR_COMMENT.match(body):
            continue
        last = i
        alone = _parse(body)
        if alone is not None and list(alone) == [key] and alone[key] == (table or {}).get(key):
            if alone[key] == spec:
                return text, PinStatus.UNCHANGED
            ending = lines[i][len(body):]
            indent = body[:len(body) - len(body.lstrip(" \t"))]
            lines[i] = indent + line + _split_comment(body, alone) + ending
            return "".join(lines), PinStatus.REPLACED
    if table is not None and key in table:
        raise ConfigError(f"{manifest}: the entry {key!r} is not one line of its own in [{where}] (a multi-line "
                          "or dotted definition): not edited, nothing pinned; update it by hand")
    if not lines[last].endswith(("\n", "\r")):
        lines[last] += nl
    lines.insert(last + 1, line + nl)
    return "".join(lines), PinStatus.ADDED


def pin(manifest: str, key: str, line: str, *, write: bool = True) -> PinResult:
    """Put the manifest line ``line`` (whose key is ``key``) into the manifest file ``manifest``:
    the key's line replaced, else the line added to the table (the table added at the end when
    missing). ConfigError, nothing written, when that cannot be done safely. ``write=False``: every
    check, nothing written (to learn before writing anything else that the pin will work)."""
    alone = _parse(line)
    if alone is None or list(alone) != [key] or not isinstance(alone[key], dict):
        raise ValueError(f"not a manifest line for {key!r}: {line!r}")
    spec = alone[key]
    text = _read(manifest)
    new, status = _edited(manifest, text, key, line, spec)
    result = PinResult(manifest=manifest, key=key, status=status)
    if status is PinStatus.UNCHANGED:
        return result
    if len(new.encode("utf-8")) > TOML_MAX:
        raise ConfigError(f"{manifest}: would be larger than {TOML_MAX} bytes: nothing pinned")
    _check(manifest, text, new, key, spec)
    if write:
        try:
            write_atomic(manifest, new)
        except OSError as exc:
            raise ConfigError(f"{manifest}: not written: {exc.strerror or exc}: nothing pinned") from None
    return result


def _check(manifest: str, old: str, new: str, key: str, spec: dict[str, Any]) -> None:
    """The new text must say what the old one said, plus this entry (tomllib); and the manifest
    reader must read the entry back exactly, every other entry as it was."""
    refused = f"{manifest}: the edit would not read back as intended: not edited, nothing pinned; add the line by hand"
    path = _table_path(manifest)
    before, after = _parse(old), _parse(new)
    if before is None or after is None:
        raise ConfigError(f"{manifest}: the edit would not be valid TOML (is a table above it inline, or "
                          "defined by dotted keys?): not edited, nothing pinned; add the line by hand")
    expected = copy.deepcopy(before)
    node = expected
    for part in path:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(refused)
    node[key] = spec
    if after != expected:
        raise ConfigError(refused)
    try:
        wanted = from_table({key: spec}, manifest)[0]
        old_entries = {e.shown: e for e in _entries(_get(before, path), manifest)}
        new_entries = {e.shown: e for e in _entries(_get(after, path), manifest)}
    except ManifestError as exc:
        raise ConfigError(f"{exc}: nothing pinned") from None
    got = new_entries.pop(key, None)
    old_entries.pop(key, None)
    if got is None or (got.distribution, got.specifier, got.sha256) != (wanted.distribution, wanted.specifier,
                                                                         wanted.sha256):
        raise ConfigError(refused)
    if new_entries != old_entries:
        raise ConfigError(refused)


def pin_patch(manifest: str, patch: str, distribution: str, version: str, sha256: str, *,
              write: bool = True) -> PinResult:
    """Pin the patch file ``patch`` in ``manifest``: its key is its path relative to the manifest's
    directory, as the manifest reader resolves it."""
    base = os.path.dirname(os.path.abspath(manifest))
    key = os.path.relpath(os.path.abspath(patch), base).replace(os.sep, "/")
    return pin(manifest, key, entry_line(key, distribution, version, sha256), write=write)


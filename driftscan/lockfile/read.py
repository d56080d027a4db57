"""``read_lock``: a lockfile read as data, bounded, with every failure one LockError line."""

from __future__ import annotations

import os
import sys
from typing import Any

from ..fs.reader import read_regular
from .fields import MAX_PACKAGES
from .flat import parse_pdm, parse_poetry, parse_pylock
from .model import Lock, LockError, LockFormat
from .requirements import parse_requirements
from .uvlock import parse_uv

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["LOCK_MAX", "MAX_PACKAGES", "LockError", "detect_format", "read_lock"]

LOCK_MAX = 64 << 20  # the largest real locks (monorepos) are a few MB


def read_lock(path: str) -> Lock:
    """The packages ``path`` pins. Only ``path`` is read: nothing the lock names is opened,
    fetched or run."""
    try:
        raw = read_regular(path, LOCK_MAX, what="lockfile")
    except OSError as exc:
        raise LockError(f"{path}: {_os_reason(exc)}") from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")  # an editor's byte-order mark
    except UnicodeDecodeError as exc:
        raise LockError(f"{path}: not UTF-8 (byte {exc.start}): lockfiles are UTF-8") from None
    fmt = _format_from_name(path)
    doc: dict[str, Any] | None = None
    if fmt is not LockFormat.REQUIREMENTS:
        doc = _toml(path, text)
        if fmt is None:
            fmt = _format_from_content(path, doc)
    if fmt is LockFormat.REQUIREMENTS:
        lock = parse_requirements(path, text)
    else:
        assert doc is not None
        parser = {LockFormat.UV: parse_uv, LockFormat.PYLOCK: parse_pylock, LockFormat.PDM: parse_pdm,
                  LockFormat.POETRY: parse_poetry}[fmt]
        _count(path, doc)
        lock = parser(path, doc)
    if len(lock.packages) > MAX_PACKAGES:
        raise LockError(f"{path}: {len(lock.packages)} packages, more than the {MAX_PACKAGES} a lock may have")
    return lock


def detect_format(path: str, text: str) -> LockFormat:
    """The format of a lockfile named ``path`` holding ``text``."""
    fmt = _format_from_name(path)
    if fmt is not None:
        return fmt
    return _format_from_content(path, _toml(path, text))


def _format_from_name(path: str) -> LockFormat | None:
    name = os.path.basename(path)
    if name == "uv.lock":
        return LockFormat.UV
    if name == "pylock.toml" or (name.startswith("pylock.") and name.endswith(".toml") and name.count(".") == 2):
        return LockFormat.PYLOCK
    if name == "pdm.lock":
        return LockFormat.PDM
    if name == "poetry.lock":
        return LockFormat.POETRY
    if name.endswith((".txt", ".in")):
        return LockFormat.REQUIREMENTS
    return None


def _format_from_content(path: str, doc: dict[str, Any]) -> LockFormat:
    metadata = doc.get("metadata")
    if "package" in doc and doc.get("version") == 1 and "revision" in doc:
        return LockFormat.UV
    if "lock-version" in doc:
        return LockFormat.PYLOCK
    if isinstance(metadata, dict) and "lock_version" in metadata:
        return LockFormat.PDM
    if isinstance(metadata, dict) and "content-hash" in metadata:
        return LockFormat.POETRY
    raise LockError(f"{path}: not a lockfile driftscan knows (uv.lock, pylock.toml, pdm.lock, poetry.lock, "
                    "requirements .txt/.in)")


def _toml(path: str, text: str) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = tomllib.loads(text)  # (tomli, on 3.10, is untyped)
        return doc
    except tomllib.TOMLDecodeError as exc:
        raise LockError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise LockError(f"{path}: not usable TOML: nested too deeply") from None


def _count(path: str, doc: dict[str, Any]) -> None:
    """Refuse a lock with more packages than any real one before parsing them one by one."""
    for key in ("package", "packages"):
        items = doc.get(key)
        if isinstance(items, list) and len(items) > MAX_PACKAGES:
            raise LockError(f"{path}: {len(items)} packages, more than the {MAX_PACKAGES} a lock may have")


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "not found"
    return str(exc.strerror or exc)

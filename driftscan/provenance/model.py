"""The values of a provenance check: where the wheel came from, each RECORD row that differs
from the wheel's own, and the verdict for one distribution."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ProvenanceSource(str, enum.Enum):
    """Where the wheel whose digest matched was found (pristine's SourceKind values that can hold
    a whole wheel, plus ``none``)."""

    DIRECT_URL = "direct_url"
    WHEELS = "wheels"
    UV_CACHE = "uv-cache"  # uv's cache pointers (filled in by the uv cache's own lookup)
    PIP_CACHE = "pip-cache"
    FETCH = "fetch"
    NONE = "none"


class RowChangeKind(str, enum.Enum):
    CHANGED = "changed"  # both RECORDs hash the path, and the hashes (or sizes) differ
    ADDED = "added"  # an installed row (with a hash) the wheel does not have
    REMOVED = "removed"  # a wheel row the installed RECORD lacks


class FileState(str, enum.Enum):
    """What the file on disk holds now, for a row that changed."""

    MATCHES_WHEEL = "matches-wheel"
    MATCHES_INSTALLED_ROW = "matches-installed-row"
    NEITHER = "neither"
    MISSING = "missing"
    NOT_CHECKED = "not-checked"  # not a regular file, unreadable, or nothing to compare with


@dataclass(frozen=True)
class RowChange:
    path: str  # the installed RECORD path (relative to site-packages)
    kind: RowChangeKind
    installed_hash: str | None  # "sha256=<urlsafe base64>", as RECORD spells it
    wheel_hash: str | None
    file_state: FileState


@dataclass(frozen=True)
class Provenance:
    distribution: str
    version: str
    metadata_dir: str
    lock: str | None  # the lockfile the expected digest came from (None: direct_url.json)
    wheel_sha256: str | None  # the expected digest, hex
    wheel: str | None  # the wheel's file name, when found
    source: ProvenanceSource
    verified: bool  # the wheel was found by its digest and its RECORD compared with the installed one
    reason: str | None  # why not verified, one line
    how_to: str | None  # what would make it verifiable (--wheels DIR after a pip download, or --fetch)
    rows: tuple[RowChange, ...]
    rows_compared: int

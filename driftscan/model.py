"""Frozen values that flow through the pipeline: discover → verify → inspect → classify.

Only plain data lives here; behaviour belongs to the layer that produces it. The pydantic
models at the edge (``report.py``) are built from these.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class DriftKind(str, enum.Enum):
    MODIFIED = "modified"
    MISSING = "missing"
    ADDED = "added"
    TYPE_CHANGED = "type-changed"
    ORPHANED_METADATA = "orphaned-metadata"
    CLOBBERED = "clobbered"
    ORPHANED_BYTECODE = "orphaned-bytecode"
    DEBUG_ARTIFACTS = "debug-artifacts"
    STALE_METADATA = "stale-metadata"  # a model file newer than its download metadata, content unchecked
    CORRUPT = "corrupt"  # present but unreadable as what it claims to be (a safetensors header, an index)
    HEAD_MOVED = "head-moved"  # an editable install's repository is no longer at the recorded commit


class Scope(str, enum.Enum):
    PACKAGE = "package"
    ENVIRONMENT = "environment"
    DATA = "data"
    SOURCE = "source"
    EXTERNAL = "external"


class Severity(str, enum.Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 1, "medium": 2, "high": 3}[self.value]


# Hash and RecordEntry are NamedTuples, not dataclasses: a venv has tens of thousands of RECORD
# rows, and a tuple is built several times faster and takes less memory than a frozen dataclass.
class Hash(NamedTuple):
    """A RECORD hash: the algorithm named in the row and the digest it promises."""

    algorithm: str
    digest: bytes
    encoding: str = "base64"  # "hex" for Debian-style rows

    def __str__(self) -> str:
        return f"{self.algorithm}={self.digest.hex()}"


class RecordEntry(NamedTuple):
    path: str  # as written in RECORD, "/"-separated, relative to site-packages
    hash: Hash | None
    size: int | None
    line: int


@dataclass(frozen=True)
class Target:
    """What to audit, resolved without running the target's interpreter."""

    kind: str  # "venv" | "prefix" | "site-packages" | "interpreter"
    venv: str | None
    site_packages: tuple[str, ...]
    bin_dir: str | None = None
    python_version: str | None = None
    # Other directories of the environment whose files must all be owned (include/, share/).
    extra_roots: tuple[str, ...] = ()


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    metadata_dir: str  # absolute path of the *.dist-info / *.egg-info directory
    site_packages: str
    kind: str = "dist-info"  # "dist-info" | "egg-info"
    installer: str | None = None
    entries: tuple[RecordEntry, ...] = ()
    direct_url: dict[str, Any] | None = None
    requested: bool = False
    # Top-level import names (top_level.txt), used to claim files of unlisted egg-info dists.
    top_level: tuple[str, ...] = ()

    @property
    def editable(self) -> bool:
        info = (self.direct_url or {}).get("dir_info")  # direct_url.json is the tree's: any JSON at all
        return isinstance(info, dict) and info.get("editable") is True

    @property
    def key(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class Problem:
    """Something that could not be checked. The audit goes on; the report lists it."""

    path: str
    message: str


@dataclass(frozen=True)
class Unverifiable:
    distribution: str
    reason: str


@dataclass(frozen=True)
class Finding:
    """One debug-code finding in one file (produced by the inspect layer)."""

    code: str
    name: str
    severity: Severity
    line: int
    column: int
    message: str
    snippet: str = ""
    # For a dump call whose target path is known: a glob of the files it writes
    # (e.g. "/tmp/nomla_*.pt"), so the audit can look for dumps left on disk.
    artifact_pattern: str | None = None


@dataclass(frozen=True)
class FileCheck:
    """One drifted path as verify saw it: what was expected, what is on disk."""

    kind: DriftKind
    path: str  # absolute
    root: str  # the directory ``relpath`` is relative to
    distribution: Distribution | None = None
    expected: dict[str, Any] = field(default_factory=dict)
    actual: dict[str, Any] = field(default_factory=dict)
    evidence: str = ""
    findings: tuple[Finding, ...] = ()
    # Where the file lives: "python" (an environment), "model" (a model directory),
    # "source" (an editable install's tree), "external" (files debug code wrote elsewhere).
    area: str = "python"
    # What changed, when the original is at hand: JSON pointer changes, or a unified diff.
    json_changes: tuple[dict[str, Any], ...] = ()
    diff: str | None = None
    # The exact way back, when the layer that found the drift knows it better than classify
    # (a git checkout, a re-download of one file at the recorded commit).
    remedy_hint: str | None = None


@dataclass(frozen=True)
class Verification:
    """Everything verify learned about a target."""

    target: Target
    distributions: tuple[Distribution, ...]
    checks: tuple[FileCheck, ...]
    files_checked: int
    unverifiable: tuple[Unverifiable, ...]
    errors: tuple[Problem, ...]
    # Every path the audit compared with a reference (RECORD rows, model metadata, git).
    referenced: frozenset[str] = frozenset()


class Prediction(str, enum.Enum):
    """What reinstalling the owning distribution (with the environment's installer) does to a drift."""

    WIPED = "wiped"
    SURVIVES = "survives"
    MAY_SURVIVE = "may-survive"  # the worst case is survival, but driftscan could not confirm it


@dataclass(frozen=True)
class Drift:
    """A classified drift: a FileCheck plus what a reinstall does to it."""

    check: FileCheck
    scope: Scope
    survives_reinstall: bool
    remedy: str
    evidence: str
    prediction: Prediction = Prediction.WIPED

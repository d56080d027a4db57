"""Frozen values that flow through the pipeline: discover → verify → inspect → classify.

Only plain data lives here; behaviour belongs to the layer that produces it. The pydantic
models at the edge (``report.py``) are built from these.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from collections.abc import Set as AbstractSet
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


class Area(str, enum.Enum):
    """Where a drifted file lives; decides which layers look at it and its scope."""

    PYTHON = "python"  # an environment (site-packages, bin/, include/)
    MODEL = "model"  # a model directory
    SOURCE = "source"  # an editable install's source tree
    EXTERNAL = "external"  # files debug code wrote elsewhere (dumps)


class TargetKind(str, enum.Enum):
    """How the environment to audit was named."""

    VENV = "venv"  # a directory with pyvenv.cfg
    PREFIX = "prefix"  # an installation prefix without pyvenv.cfg
    SITE_PACKAGES = "site-packages"  # bare directories, no prefix around them
    INTERPRETER = "interpreter"  # the interpreter driftscan runs in
    NONE = "none"  # no environment at all (model directories only)


class MetadataKind(str, enum.Enum):
    DIST_INFO = "dist-info"  # a wheel install: RECORD lists every file
    EGG_INFO = "egg-info"  # setup.py install / distutils: installed-files.txt at best
    EGG_LINK = "egg-link"  # a legacy develop install: a link file standing in for metadata
    CONDA = "conda"  # a conda-meta/*.json package record (conda, mamba, micromamba, pixi)
    DPKG = "dpkg"  # a Debian package: dpkg's info/<pkg>.list and .md5sums


class LayoutKind(str, enum.Enum):
    """What a model directory's provenance is read from."""

    HF_LOCAL_DIR = "hf-local-dir"  # hf download --local-dir: .cache/huggingface/download/*.metadata
    HF_CACHE_REPO = "hf-cache-repo"  # a Hugging Face hub cache repository (snapshots/ and blobs/)
    GIT = "git"  # a git clone (git-lfs pointers resolved through the index)
    MANIFEST = "manifest"  # a driftscan manifest (snapshot) saved beside it or named by --manifest
    UNKNOWN = "unknown"  # none of these: nothing to check against


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

    kind: TargetKind
    venv: str | None
    site_packages: tuple[str, ...]
    bin_dir: str | None = None
    python_version: str | None = None
    # Other directories of the environment whose files must all be owned (include/, share/).
    extra_roots: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TargetKind(self.kind))  # API callers may pass the plain string


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    metadata_dir: str  # absolute path of the *.dist-info / *.egg-info directory
    site_packages: str
    kind: MetadataKind = MetadataKind.DIST_INFO
    installer: str | None = None
    entries: tuple[RecordEntry, ...] = ()
    direct_url: dict[str, Any] | None = None
    requested: bool = False
    # Top-level import names (top_level.txt), used to claim files of unlisted egg-info dists.
    top_level: tuple[str, ...] = ()
    # A system package manager's own build or revision (conda's build string "py311h1234_0",
    # a Debian architecture "amd64"): part of what a reinstall command must name.
    build: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", MetadataKind(self.kind))  # API callers may pass the plain string

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
    # "injected" (not in the original), "upstream" (the original has the same finding), or None
    # when no original was at hand to tell (driftscan.changes decides).
    origin: str | None = None


@dataclass(frozen=True)
class UvCacheLink:
    """A drifted file that shares its inode with uv's cache, or is a symlink into it."""

    cache_dir: str | None  # the cache driftscan was told about or found; None: not located
    copy: str | None  # the cache's copy of this file, when found
    links: int  # st_nlink of the installed file
    symlink: bool

    def as_json(self) -> dict[str, Any]:
        return {"dir": self.cache_dir, "copy": self.copy, "links": self.links, "symlink": self.symlink}


@dataclass(frozen=True)
class DumpWriter:
    """A line of drifted code that writes dumps (a finding with an artifact pattern)."""

    path: str
    line: int
    code: str


@dataclass(frozen=True)
class DumpFiles:
    """Dump files left on disk: what a debug-artifacts drift found for one pattern."""

    pattern: str
    paths: tuple[str, ...]
    total_bytes: int
    writers: tuple[DumpWriter, ...]
    # The exact list, NUL-terminated, in driftscan's cache directory (for ``xargs -0 rm``), when
    # there are too many files to name in the remedy itself.
    list_file: str | None = None

    def as_json(self) -> dict[str, Any]:
        listed = {"list_file": self.list_file} if self.list_file else {}
        return {"pattern": self.pattern, "artifacts": list(self.paths), "count": len(self.paths),
                "bytes": self.total_bytes,
                "written_by": [{"path": w.path, "line": w.line, "code": w.code} for w in self.writers], **listed}


@dataclass(frozen=True)
class PristineRef:
    """Where the original of a drifted package file was read from (a verified copy)."""

    source: str  # direct_url | wheels | uv-cache | pip-cache | fetch
    path: str

    def as_json(self) -> dict[str, str]:
        return {"source": self.source, "path": self.path}


@dataclass(frozen=True)
class FileCheck:
    """One drifted path as verify saw it: what was expected, what is on disk."""

    kind: DriftKind
    path: str  # absolute
    root: str  # the directory ``relpath`` is relative to
    distribution: Distribution | None = None
    # What the reference promises and what is on disk, as shown in the report (size, hash, type,
    # symlink_target, ...). Later layers decide nothing on these: what they act on is typed below.
    expected: dict[str, Any] = field(default_factory=dict)
    actual: dict[str, Any] = field(default_factory=dict)
    evidence: str = ""
    findings: tuple[Finding, ...] = ()
    area: Area = Area.PYTHON
    # What changed, when the original is at hand: JSON pointer changes, or a unified diff.
    json_changes: tuple[dict[str, Any], ...] = ()
    diff: str | None = None
    # The exact way back, when the layer that found the drift knows it better than classify
    # (a git checkout, a re-download of one file at the recorded commit).
    remedy_hint: str | None = None
    uv_cache: UvCacheLink | None = None  # set by verify when the file is linked with uv's cache
    dumps: DumpFiles | None = None  # set on debug-artifacts drifts
    pristine: PristineRef | None = None  # the verified original this drift was compared with
    # A binary file compared with its original: the changed byte ranges, [start, end).
    byte_ranges: tuple[tuple[int, int], ...] = ()

    @property
    def regular_file(self) -> bool:
        """On disk as a regular file (a drift of a symlink, directory or other type is not)."""
        return self.actual.get("type", "file") == "file"

    def observed(self) -> dict[str, Any]:
        """``actual`` with the typed observations, as the report shows them."""
        extra: dict[str, Any] = {}
        if self.dumps is not None:
            extra.update(self.dumps.as_json())
        if self.uv_cache is not None:
            extra["uv_cache"] = self.uv_cache.as_json()
        return {**self.actual, **extra} if extra else self.actual


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
    referenced: AbstractSet[str] = frozenset()  # a frozenset, or ownership.OwnedView (the same, compact)


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

"""What a lockfile pins, in one shape for every format."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..core.errors import DriftscanError


class LockError(DriftscanError):
    """A lockfile that cannot be read: one line naming the file and what is wrong."""


class LockFormat(str, Enum):
    UV = "uv.lock"
    PYLOCK = "pylock.toml"
    PDM = "pdm.lock"
    POETRY = "poetry.lock"
    REQUIREMENTS = "requirements"


class SourceKind(str, Enum):
    """Where a locked package comes from, as the lock says (uv.lock's ``source`` keys)."""

    REGISTRY = "registry"
    URL = "url"
    PATH = "path"
    DIRECTORY = "directory"
    EDITABLE = "editable"
    VIRTUAL = "virtual"
    GIT = "git"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class LockedFile:
    """One artifact a lock names; ``sha256`` is lower-case hex, or None when the lock gives none."""

    filename: str | None
    url: str | None
    sha256: str | None
    size: int | None
    is_wheel: bool


@dataclass(frozen=True)
class LockedPackage:
    """``name`` is canonical (PEP 503); ``location`` is the index, URL, path or git URL as written:
    data, never opened or fetched."""

    name: str
    version: str | None
    source: SourceKind
    location: str | None
    files: tuple[LockedFile, ...]
    marker: str | None
    optional: bool = False  # installed only through an extra (poetry.lock's ``optional = true``)
    # pdm.lock and poetry.lock: the dependency groups that bring the package (canonical names; empty
    # when the lock does not say), and poetry's marker per group where it gives a table of them
    groups: tuple[str, ...] = ()
    group_markers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Lock:
    """A parsed lockfile; ``notes``: what was not followed or was ignored, one line each."""

    path: str
    format: LockFormat
    packages: tuple[LockedPackage, ...]
    requires_python: str | None
    notes: tuple[str, ...]
    graph: Graph | None = None  # uv.lock only; the flat formats carry a marker per package
    # pylock.toml's top-level lists, which its markers may name (``'dev' in dependency_groups``);
    # pdm.lock's and poetry.lock's groups, ``default_groups`` the one a plain install takes
    extras: tuple[str, ...] = ()
    dependency_groups: tuple[str, ...] = ()
    default_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Selection:
    """A lock's packages for one environment: ``required`` are installed by a default install;
    ``optional`` are reachable only through extras or non-default dependency groups (installed or
    not, both fine); ``excluded`` maps a name to why it is not for this environment (the marker
    that is false here, or requires-python)."""

    lock: Lock
    required: dict[str, LockedPackage]
    optional: dict[str, LockedPackage]
    excluded: dict[str, str]


@dataclass(frozen=True)
class Edge:
    """One dependency edge of a lock's graph: to ``Lock.packages[target]``, when ``marker`` holds,
    with the target's ``extras`` activated."""

    target: int
    marker: str | None
    extras: tuple[str, ...]


@dataclass(frozen=True)
class PackageEdges:
    """A package's edges: what it always requires, per extra, and per dependency group."""

    requires: tuple[Edge, ...]
    extras: tuple[tuple[str, tuple[Edge, ...]], ...]
    groups: tuple[tuple[str, tuple[Edge, ...]], ...]


@dataclass(frozen=True)
class Graph:
    """A lock's dependency graph (uv.lock): ``edges`` parallel to ``Lock.packages``; ``roots``
    the packages a default sync installs from, ``member_roots`` the other workspace members
    (installed only by ``--all-packages`` or ``--package``); ``root_groups``: the dependency
    groups of a workspace root that is no project (uv.lock's ``[manifest.dependency-groups]``)."""

    edges: tuple[PackageEdges, ...]
    roots: tuple[int, ...]
    member_roots: tuple[int, ...]
    root_groups: tuple[tuple[str, tuple[Edge, ...]], ...] = ()

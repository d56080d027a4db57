"""What ``uv sync`` will install, read from the project's ``uv.lock`` (data: a size cap, parsed
as TOML, nothing in it followed or run).

``uv sync`` makes the project's environment exactly what the lock says: a locked distribution
whose installed version differs is reinstalled, one the lock lists that is not installed is
installed, and an installed one the lock does not list is removed. The lock is read as it is
when guard starts: a ``pyproject.toml`` changed since (uv re-locks first) or extras and groups
the sync leaves out are not known from it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import unquote

from ...fs.paths import ancestors
from ...core.errors import ConfigError
from ...formats.tomlfile import read_toml
from ...pristine.names import normalize_name


LOCK_MAX = 32 << 20  # a lock file of a very large project is a few MB
LOCK_PACKAGES_MAX = 100_000
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\Z")
_VERSION = re.compile(r"[A-Za-z0-9_.!+-]{1,100}\Z")
_LOCAL_SOURCES = ("virtual", "editable", "directory")  # the project itself, a workspace member: built, not a wheel


@dataclass(frozen=True)
class Locked:
    name: str  # normalized
    version: str | None  # None: the project itself or a local directory (built, not compared by version)


@dataclass(frozen=True)
class LockRead:
    path: str | None  # the uv.lock read, None when none was
    packages: tuple[Locked, ...] = ()
    note: str | None = None  # why it was not read, or what it cannot tell
    local_registries: tuple[str, ...] = ()  # the local directories the lock installs from (flat or file:// indexes)


def project_root(start: str) -> str | None:
    """The directory uv takes as the project from ``start``: the nearest one up with a pyproject.toml."""
    return next((d for d in ancestors(start) if os.path.isfile(os.path.join(d, "pyproject.toml"))), None)


def read_lock(project: str) -> LockRead:
    """The distributions ``<project>/uv.lock`` pins."""
    path = os.path.join(project, "uv.lock")
    if not os.path.lexists(path):
        return LockRead(None, note=f"{path}: no lock file; uv sync locks first, so what it installs is not known")
    try:
        data = read_toml(path, LOCK_MAX, what="uv.lock")
    except ConfigError as exc:
        return LockRead(None, note=f"cannot read the lock file: {str(exc)[:300]}; what uv sync installs is not known")
    packages = data.get("package") if isinstance(data, dict) else None
    if not isinstance(packages, list):
        return LockRead(None, note=f"{path}: no [[package]] table; what uv sync installs is not known")
    out: dict[str, Locked] = {}
    registries: dict[str, None] = {}
    for pkg in packages[:LOCK_PACKAGES_MAX]:
        if not isinstance(pkg, dict) or not isinstance(pkg.get("name"), str) or not _NAME.match(pkg["name"]):
            continue
        source = pkg.get("source")
        source = source if isinstance(source, dict) else {}
        version = pkg.get("version")
        local = any(k in source for k in _LOCAL_SOURCES)
        registry = source.get("registry")
        if isinstance(registry, str) and registry and ("://" not in registry or registry.startswith("file://")):
            # a path is relative to the project; the directory is only looked at for wheels, as data
            registries.setdefault(os.path.normpath(os.path.join(project, unquote(registry.removeprefix("file://")))))
        version = version if isinstance(version, str) and _VERSION.match(version) and not local else None
        name = normalize_name(pkg["name"])
        if name in out and out[name].version != version:
            version = None  # several versions (markers, forks): which one installs is not known here
        out[name] = Locked(name, version)
    return LockRead(path, tuple(sorted(out.values(), key=lambda p: p.name)), local_registries=tuple(registries),
                    note=(f"uv sync installs what {path} pins and removes what it does not list (read before "
                          "the command: a pyproject.toml changed since, which uv re-locks first, is not known)"))

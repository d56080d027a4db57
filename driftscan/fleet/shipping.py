"""What to send with the job to a node that lacks driftscan (Ray's ``runtime_env`` ``py_modules``).

driftscan itself always travels as its package directory. Its dependencies travel only when the
node cannot import them, and only as what the driver has installed: compiled ones (pydantic_core,
xxhash, libcst's parser) work on the node only if its Python version and platform are the
driver's — which Ray requires of a driver anyway. What is sent is computed here from driftscan's
declared requirements; a node's list of what it lacks is only compared against it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from importlib import metadata

import driftscan

_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _top_levels(dist: metadata.Distribution) -> set[str]:
    text = dist.read_text("top_level.txt")
    if text:
        return {line.strip() for line in text.splitlines() if line.strip() and "/" not in line}
    names = set()
    for f in dist.files or ():
        head = f.parts[0] if f.parts else ""
        if not head or head.endswith((".dist-info", ".egg-info", ".data")) or head in ("..", "__pycache__"):
            continue
        names.add(head[:-3] if head.endswith(".py") else head.split(".", 1)[0] if "." in head else head)
    return names


def _active(requirement: str) -> bool:
    """A requirement that applies here: no extra, and its marker (if any) true."""
    if ";" not in requirement:
        return True
    marker = requirement.split(";", 1)[1]
    if "extra" in marker:
        return False
    try:
        from packaging.markers import Marker

        return Marker(marker).evaluate()
    except Exception:  # noqa: BLE001 - without packaging, an unknown marker is taken to apply
        return "python_version <" not in marker


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def needed_modules() -> list[str]:
    """Top-level import names of driftscan's runtime dependencies, transitively, as installed here."""
    seen: set[str] = set()
    modules: set[str] = set()
    todo = ["driftscan"]
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if key != "driftscan":
            # top_level.txt can name what a package no longer has (xxhash's lists _xxhash, now
            # xxhash._xxhash): only names importable here are needed there.
            modules |= {m for m in _top_levels(dist) if m.isidentifier() and _importable(m)}
        for req in dist.requires or ():
            m = _REQ_NAME.match(req)
            if m and _active(req):
                todo.append(m.group(1))
    return sorted(m for m in modules if m.isidentifier())


@dataclass(frozen=True)
class Shipment:
    modules: tuple[str, ...]  # package directories, for py_modules
    names: tuple[str, ...]
    unshippable: tuple[str, ...]  # missing on the node and not a package directory here


def shipment(missing: Collection[str], needed: Collection[str] | None = None) -> Shipment:
    """driftscan plus the missing dependencies that are package directories on the driver.

    What is sent is decided from driftscan's own requirements (``needed``: ``needed_modules()``,
    from the installed driftscan's metadata), never from the node's words: a name in ``missing``
    is only compared against that list. One that is not on it is not looked up at all (a dotted
    name would make ``find_spec`` import its parent here) and is never sent."""
    wanted = set(needed_modules() if needed is None else needed)
    modules: list[str] = [os.path.dirname(os.path.abspath(driftscan.__file__))]
    names = ["driftscan"]
    unshippable = []
    for name in dict.fromkeys(missing):
        if name not in wanted or not name.isidentifier():
            unshippable.append(name)
            continue
        spec = importlib.util.find_spec(name)  # a top-level name of the driver's own requirements
        origin = spec.origin if spec else None
        if spec is None or not spec.submodule_search_locations or not origin or \
                os.path.basename(origin) != "__init__.py":
            unshippable.append(name)  # a single-file or namespace module: py_modules takes directories
            continue
        modules.append(os.path.dirname(os.path.abspath(origin)))
        names.append(name)
    return Shipment(tuple(modules), tuple(names), tuple(unshippable))

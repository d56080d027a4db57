"""Which of a lock's packages one environment gets: ``select`` (required, optional, excluded) and
``wheel_for`` (the locked wheel an installed distribution's tags match)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import parse_tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from .markers import MarkerEnvironment, lock_marker_holds, marker_holds
from .model import Edge, Graph, Lock, LockedFile, LockedPackage, Selection, SourceKind

DEFAULT_GROUP = "dev"  # the group `uv sync` installs unless told otherwise (tool.uv.default-groups is not in the lock)


def select(lock: Lock, env: MarkerEnvironment, groups: Iterable[str] = ()) -> Selection:
    """``lock``'s packages for the environment ``env`` describes: a graph walk from the workspace
    roots for uv.lock, a marker per package for the flat formats, every line of a requirements
    file (its markers still apply). ``groups``: dependency groups the install also took besides
    the lock's default ones (``--lock-group``): their packages are required too. The notes of the
    returned ``Selection.lock`` add what could not be evaluated."""
    notes: list[str] = []
    chosen = frozenset(canonicalize_name(g) for g in groups)
    known = _known_groups(lock)
    for group in sorted(chosen - known):
        notes.append(f"group {group!r}: the lock has no such group" if known or lock.graph is not None
                     else f"group {group!r}: the lock names no groups: not applied")
    python = env.get("python_full_version")
    if lock.requires_python and python:
        try:
            holds = SpecifierSet(lock.requires_python).contains(python, prereleases=True)
        except InvalidSpecifier:
            notes.append(f"requires-python {lock.requires_python!r} is not a version specifier: not checked")
            holds = True
        if not holds:
            why = f"requires-python {lock.requires_python} does not hold for Python {python}"
            excluded = {p.name: why for p in lock.packages}
            return Selection(lock=_with_notes(lock, notes), required={}, optional={}, excluded=excluded)
    if lock.graph is not None and lock.graph.roots:
        required, optional, excluded = _walk(lock, lock.graph, env, chosen, notes)
    else:
        required, optional, excluded = _flat(lock, env, chosen, notes)
    for name in list(excluded):
        if name in required or name in optional:
            del excluded[name]
    for name in list(optional):
        if name in required:
            del optional[name]
    for into in (required, optional):  # a virtual package (a workspace root with no build) is never installed
        for name in [n for n, p in into.items() if p.source is SourceKind.VIRTUAL]:
            del into[name]
    return Selection(lock=_with_notes(lock, notes), required=required, optional=optional, excluded=excluded)


def _with_notes(lock: Lock, notes: list[str]) -> Lock:
    return dataclasses.replace(lock, notes=lock.notes + tuple(notes)) if notes else lock


def _holds(marker: str | None, env: MarkerEnvironment, what: str, notes: list[str]) -> bool:
    if marker is None:
        return True
    holds = marker_holds(marker, env)
    if holds is None:
        notes.append(f"{what}: marker {marker[:200]!r} could not be evaluated: kept")
        return True
    return holds


def _known_groups(lock: Lock) -> frozenset[str]:
    if lock.graph is None:
        return frozenset(lock.dependency_groups) | frozenset(lock.default_groups)
    named = {group for edges in lock.graph.edges for group, _ in edges.groups}
    return frozenset(named | {group for group, _ in lock.graph.root_groups})


def _flat(lock: Lock, env: MarkerEnvironment, chosen: frozenset[str], notes: list[str]
          ) -> tuple[dict[str, LockedPackage], dict[str, LockedPackage], dict[str, str]]:
    required: dict[str, LockedPackage] = {}
    optional: dict[str, LockedPackage] = {}
    excluded: dict[str, str] = {}
    selected = frozenset(lock.default_groups) | chosen
    for package in lock.packages:
        optional_here = package.optional
        if package.groups:  # pdm.lock, poetry.lock 2.1: required through a selected group whose marker holds
            verdict = _by_groups(package, env, selected, lock.extras, notes)
            if isinstance(verdict, str):
                excluded.setdefault(package.name, verdict)
                continue
            optional_here = optional_here or not verdict
        elif package.marker is not None and _names_selection(package.marker):
            default = lock_marker_holds(package.marker, env, frozenset(), selected)
            every = lock_marker_holds(package.marker, env, frozenset(lock.extras),
                                      frozenset(lock.dependency_groups) | frozenset(lock.default_groups))
            if default is None or every is None:
                notes.append(f"{package.name}: marker {package.marker[:200]!r} could not be evaluated: kept")
            elif not every:
                excluded.setdefault(package.name, f"marker {package.marker}")
                continue
            else:
                optional_here = optional_here or not default
        elif not _holds(package.marker, env, package.name, notes):
            excluded.setdefault(package.name, f"marker {package.marker}")
            continue
        into = optional if optional_here else required
        if package.name in into and into[package.name] != package:
            notes.append(f"{package.name}: pinned more than once for this environment "
                         f"({into[package.name].version} and {package.version}): the first is kept")
            continue
        into[package.name] = package
    return required, optional, excluded


def _by_groups(package: LockedPackage, env: MarkerEnvironment, selected: frozenset[str], extras: tuple[str, ...],
               notes: list[str]) -> bool | str:
    """True: a selected group brings ``package`` here; False: only another group does; else why
    none does (the markers false here). A poetry package only an extra brings (``optional``) is
    marked ``extra == "NAME"``: it holds when it holds for one of the lock's extras."""
    per_group = dict(package.group_markers)
    brought = {False: False, True: False}
    false: list[str] = []
    for group in package.groups:
        marker = per_group.get(group) if package.group_markers else package.marker
        holds = marker is None or _holds(marker, env, package.name, notes) or (
            package.optional and any(marker_holds(marker, env, extra) for extra in extras))
        if holds:
            brought[group in selected] = True
        elif marker is not None and marker not in false:
            false.append(marker)
    if brought[True] or brought[False]:
        return brought[True]
    return "marker " + " / ".join(false)


def _names_selection(marker: str) -> bool:
    """Whether a marker names PEP 751's selection (``extras``, ``dependency_groups``)."""
    return "extras" in marker or "dependency_groups" in marker


def _walk(lock: Lock, graph: Graph, env: MarkerEnvironment, chosen: frozenset[str], notes: list[str]
          ) -> tuple[dict[str, LockedPackage], dict[str, LockedPackage], dict[str, str]]:
    """Two breadth-first walks (iterative: a lock's depth is data): what a default ``uv sync``
    installs (with the ``chosen`` groups), then what extras, other groups and other workspace
    members add."""
    excluded: dict[str, str] = {}
    default_starts: list[Edge] = []
    extra_starts: list[Edge] = []
    for root in graph.roots:
        default_starts.append(Edge(target=root, marker=None, extras=()))
        edges = graph.edges[root]
        for group, group_edges in edges.groups:
            (default_starts if group == DEFAULT_GROUP or group in chosen else extra_starts).extend(group_edges)
        extra_starts.extend(Edge(target=root, marker=None, extras=(extra,)) for extra, _ in edges.extras)
    for group, group_edges in graph.root_groups:
        (default_starts if group == DEFAULT_GROUP or group in chosen else extra_starts).extend(group_edges)
    for member in graph.member_roots:
        edges = graph.edges[member]
        extra_starts.append(Edge(target=member, marker=None, extras=tuple(extra for extra, _ in edges.extras)))
        extra_starts.extend(edge for _, group_edges in edges.groups for edge in group_edges)
    required = _reach(lock, graph, default_starts, env, notes, excluded)
    optional = _reach(lock, graph, extra_starts, env, notes, excluded, seen_before=required)
    return (_by_name(lock, required, notes), _by_name(lock, optional - required, notes), excluded)


def _reach(lock: Lock, graph: Graph, starts: list[Edge], env: MarkerEnvironment, notes: list[str],
           excluded: dict[str, str], seen_before: set[int] | None = None) -> set[int]:
    reached: set[int] = set()
    visited: set[tuple[int, str | None]] = set()
    queue: deque[Edge] = deque(starts)
    extras_of: dict[int, dict[str, tuple[Edge, ...]]] = {}  # looked up, not searched: a package's extras are data
    while queue:
        edge = queue.popleft()
        package = lock.packages[edge.target]
        if not _holds(edge.marker, env, f"dependency on {package.name}", notes):
            excluded.setdefault(package.name, f"marker {edge.marker}")
            continue
        reached.add(edge.target)
        edges = graph.edges[edge.target]
        for part in (None, *edge.extras):
            if (edge.target, part) in visited:
                continue
            visited.add((edge.target, part))
            if part is None:
                queue.extend(edges.requires)
            else:
                if edge.target not in extras_of:
                    extras_of[edge.target] = dict(edges.extras)
                queue.extend(extras_of[edge.target].get(part, ()))
    return reached


def _by_name(lock: Lock, indices: set[int], notes: list[str]) -> dict[str, LockedPackage]:
    out: dict[str, LockedPackage] = {}
    for i in sorted(indices):
        package = lock.packages[i]
        if package.name in out:
            notes.append(f"{package.name}: two versions reached for this environment "
                         f"({out[package.name].version} and {package.version}): the first is kept")
            continue
        out[package.name] = package
    return out


def wheel_for(package: LockedPackage, tags: Iterable[str]) -> LockedFile | None:
    """The locked wheel of ``package`` built for one of ``tags`` (the installed WHEEL's ``Tag:``
    values); None when no wheel's file name matches or none is known."""
    wanted: set[str] = set()
    for tag in tags:
        try:
            wanted.update(str(t) for t in parse_tag(tag.strip()))
        except ValueError:
            continue
    for file in package.files:
        if not file.is_wheel or not file.filename:
            continue
        try:
            file_tags = parse_wheel_filename(file.filename)[3]
        except InvalidWheelFilename:
            continue
        if any(str(t) in wanted for t in file_tags):
            return file
    return None

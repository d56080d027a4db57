"""uv.lock: uv's own lock, a graph of packages from the workspace members down."""

from __future__ import annotations

from typing import Any

from .fields import Fields, capped
from .model import Edge, Graph, Lock, LockedFile, LockedPackage, LockFormat, PackageEdges, SourceKind

_SOURCES = {kind.value: kind for kind in SourceKind if kind is not SourceKind.UNKNOWN}
_WORKSPACE = (SourceKind.EDITABLE, SourceKind.VIRTUAL)


def parse_uv(path: str, doc: dict[str, Any]) -> Lock:
    f = Fields(path)
    notes: list[str] = []
    requires_python = f.string(doc, "requires-python", "")
    if doc.get("version") != 1:
        notes.append(f"uv.lock version {str(doc.get('version'))[:20]}: read as version 1")
    rows = f.tables(doc, "package", "")
    packages: list[LockedPackage] = []
    for i, row in enumerate(rows):
        where = f"package[{i}]"
        packages.append(_package(f, row, where))
    by_name: dict[tuple[str, ...], list[int]] = {}  # by name, name+version, name+version+source
    for i, package in enumerate(packages):
        for key in ((package.name,), (package.name, package.version or ""),
                    (package.name, package.version or "", package.source.value, package.location or "")):
            by_name.setdefault(key, []).append(i)
    edges = tuple(_edges(f, row, f"package[{i}]", packages, by_name, notes) for i, row in enumerate(rows))
    manifest = f.table(doc.get("manifest", {}), "manifest")
    members = {f.canonical(m, "manifest.members") if isinstance(m, str) else "" for m in
               f.array(manifest.get("members", []), "manifest.members")}
    if "" in members:
        raise f.error("manifest.members", "expected an array of names")
    roots, member_roots = _roots(packages, members)
    if not roots:
        notes.append("no workspace member in the lock: every package is taken as required")
    root_groups = _manifest_groups(f, manifest, rows, by_name, notes)
    return Lock(path=path, format=LockFormat.UV, packages=tuple(packages), requires_python=requires_python,
                notes=capped(notes), graph=Graph(edges=edges, roots=roots, member_roots=member_roots,
                                                 root_groups=root_groups))


def _manifest_groups(f: Fields, manifest: dict[str, Any], rows: list[dict[str, Any]],
                     by_name: dict[tuple[str, ...], list[int]], notes: list[str]
                     ) -> tuple[tuple[str, tuple[Edge, ...]], ...]:
    """A non-project workspace root's groups name packages by name alone; where the resolution
    forked, each fork's package is an edge whose marker is its fork's ``resolution-markers``."""
    groups = f.table(manifest.get("dependency-groups", {}), "manifest.dependency-groups")
    out = []
    for group, items in groups.items():
        at = f"manifest.dependency-groups.{group}"
        edges = []
        for k, item in enumerate(f.array(items, at)):
            item = f.table(item, f"{at}[{k}]")
            candidates = by_name.get((f.name(item, "name", f"{at}[{k}]"),), [])
            if not candidates:
                notes.append(f"{at}[{k}]: {item.get('name')!s:.80} matches no package of the lock: not followed")
            marker = f.string(item, "marker", f"{at}[{k}]")
            for i in candidates:
                forks = [m for m in f.array(rows[i].get("resolution-markers", []), f"package[{i}].resolution-markers")
                         if isinstance(m, str)]
                fork = " or ".join(f"({m})" for m in forks) if len(candidates) > 1 and forks else None
                both = " and ".join(f"({m})" for m in (marker, fork) if m) or None
                edges.append(Edge(target=i, marker=both, extras=()))
        out.append((f.canonical(group, at), tuple(edges)))
    return tuple(out)


def _package(f: Fields, row: dict[str, Any], where: str) -> LockedPackage:
    name = f.name(row, "name", where)
    version = f.string(row, "version", where)
    source, location = _source(f, row, where)
    files: list[LockedFile] = []
    for j, wheel in enumerate(f.tables(row, "wheels", where)):
        files.append(_file(f, wheel, f"{where}.wheels[{j}]"))
    if "sdist" in row:
        files.append(_file(f, f.table(row["sdist"], f"{where}.sdist"), f"{where}.sdist"))
    return LockedPackage(name=name, version=version, source=source, location=location, files=tuple(files),
                         marker=None)


def _source(f: Fields, row: dict[str, Any], where: str) -> tuple[SourceKind, str | None]:
    if "source" not in row:
        return SourceKind.UNKNOWN, None
    source = f.table(row["source"], f"{where}.source")
    for key, kind in _SOURCES.items():
        if key in source:
            return kind, f.string(source, key, f"{where}.source")
    return SourceKind.UNKNOWN, None


def _file(f: Fields, entry: dict[str, Any], where: str) -> LockedFile:
    url = f.string(entry, "url", where) or f.string(entry, "path", where)
    return f.file(f.string(entry, "filename", where), url, f.sha256(f.string(entry, "hash", where), f"{where}.hash"),
                  f.integer(entry, "size", where))


def _edges(f: Fields, row: dict[str, Any], where: str, packages: list[LockedPackage],
           by_name: dict[tuple[str, ...], list[int]], notes: list[str]) -> PackageEdges:
    def edge_list(items: Any, at: str) -> tuple[Edge, ...]:
        out = []
        for k, dep in enumerate(f.array(items, at)):
            dat = f"{at}[{k}]"
            dep = f.table(dep, dat)
            target = _target(f, dep, dat, by_name)
            if target is None:
                notes.append(f"{dat}: {dep.get('name')!s:.80} matches no package of the lock: not followed")
                continue
            extras = tuple(f.canonical(f.string({"extra": e}, "extra", dat) or "", f"{dat}.extra")
                           for e in f.array(dep.get("extra", []), f"{dat}.extra"))
            out.append(Edge(target=target, marker=f.string(dep, "marker", dat), extras=extras))
        return tuple(out)

    def named(key: str) -> tuple[tuple[str, tuple[Edge, ...]], ...]:
        table = f.table(row.get(key, {}), f"{where}.{key}")
        return tuple((f.canonical(name, f"{where}.{key}"), edge_list(items, f"{where}.{key}.{name}"))
                     for name, items in table.items())

    return PackageEdges(requires=edge_list(row.get("dependencies", []), f"{where}.dependencies"),
                        extras=named("optional-dependencies"), groups=named("dev-dependencies"))


def _target(f: Fields, dep: dict[str, Any], where: str, by_name: dict[tuple[str, ...], list[int]]) -> int | None:
    """The package an edge names: by name, then version and source when several share the name
    (looked up, never searched: a lock may hold many packages of one name)."""
    key: tuple[str, ...] = (f.name(dep, "name", where),)
    candidates = by_name.get(key, [])
    version = f.string(dep, "version", where)
    if len(candidates) > 1 and version is not None:
        key += (version,)
        candidates = by_name.get(key, [])
    if len(candidates) > 1 and version is not None and "source" in dep:
        kind, location = _source(f, dep, where)
        candidates = by_name.get(key + (kind.value, location or ""), [])
    return candidates[0] if len(candidates) == 1 else None


def _roots(packages: list[LockedPackage], members: set[str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """What ``uv sync`` starts from: the project at the workspace root (its source is "."); the other
    workspace members only with ``--all-packages``. A workspace whose root is no project (no "."
    package) syncs every member."""
    workspace = [i for i, p in enumerate(packages)
                 if p.source in _WORKSPACE or (p.name in members and p.source is SourceKind.DIRECTORY)]
    if members:
        workspace = [i for i in workspace if packages[i].name in members]
    at_root = [i for i in workspace if packages[i].location in (".", "./")]
    if at_root:
        return tuple(at_root), tuple(i for i in workspace if i not in set(at_root))
    return tuple(workspace), ()

"""The TOML locks without a graph, one marker per package: pylock.toml (PEP 751), pdm.lock and
poetry.lock, read from the files pdm 2 and poetry 2 write."""

from __future__ import annotations

from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from .fields import Fields, capped
from .model import Lock, LockedFile, LockedPackage, LockFormat, SourceKind


def parse_pylock(path: str, doc: dict[str, Any]) -> Lock:
    f = Fields(path)
    notes: list[str] = []
    packages = []
    for i, row in enumerate(f.tables(doc, "packages", "")):
        where = f"packages[{i}]"
        files = [_pylock_file(f, wheel, f"{where}.wheels[{j}]") for j, wheel in enumerate(f.tables(row, "wheels", where))]
        location = f.string(row, "index", where)
        source = SourceKind.REGISTRY if location is not None else SourceKind.UNKNOWN
        for key, kind, field in (("vcs", SourceKind.GIT, "url"), ("directory", SourceKind.DIRECTORY, "path"),
                                 ("archive", SourceKind.URL, "url")):
            if key in row:
                table = f.table(row[key], f"{where}.{key}")
                source = kind
                location = f.string(table, field, f"{where}.{key}") or f.string(table, "path", f"{where}.{key}")
                if key == "directory" and table.get("editable") is True:
                    source = SourceKind.EDITABLE
                if key == "archive":
                    if location is not None and "://" not in location:
                        source = SourceKind.PATH
                    files.append(_pylock_file(f, table, f"{where}.archive"))
        if "sdist" in row:
            files.append(_pylock_file(f, f.table(row["sdist"], f"{where}.sdist"), f"{where}.sdist"))
        if source is SourceKind.UNKNOWN and files:
            source = SourceKind.URL
        marker = f.string(row, "marker", where)
        package_python = f.string(row, "requires-python", where)
        if package_python:
            python_marker = " and ".join(f"python_full_version {spec}" for spec in _specifiers(package_python))
            marker = f"({marker}) and {python_marker}" if marker else python_marker
        packages.append(LockedPackage(name=f.name(row, "name", where), version=f.string(row, "version", where),
                                      source=source, location=location, files=tuple(files), marker=marker))
    lists = {key: tuple(f.canonical(f.string({key: v}, key, "") or "", key) for v in f.array(doc.get(key, []), key))
             for key in ("extras", "dependency-groups", "default-groups")}
    return Lock(path=path, format=LockFormat.PYLOCK, packages=tuple(packages),
                requires_python=f.string(doc, "requires-python", ""), notes=capped(notes),
                extras=lists["extras"], dependency_groups=lists["dependency-groups"],
                default_groups=lists["default-groups"])


def _specifiers(spec: str) -> list[str]:
    try:
        return [f"{s.operator} '{s.version}'" for s in SpecifierSet(spec)]
    except InvalidSpecifier:
        return [f"== 'invalid:{spec}'"]  # makes the marker unevaluable: kept, with a note


def _pylock_file(f: Fields, entry: dict[str, Any], where: str) -> LockedFile:
    hashes = f.table(entry.get("hashes", {}), f"{where}.hashes")
    digest = hashes.get("sha256")
    if digest is not None and not isinstance(digest, str):
        raise f.error(f"{where}.hashes.sha256", "expected a string")
    url = f.string(entry, "url", where) or f.string(entry, "path", where)
    return f.file(f.string(entry, "name", where), url,
                  f.hex256(digest, f"{where}.hashes.sha256") if digest is not None else None,
                  f.integer(entry, "size", where))


def parse_pdm(path: str, doc: dict[str, Any]) -> Lock:
    return _parse_package_files(path, doc, LockFormat.PDM, marker_key="marker")


def parse_poetry(path: str, doc: dict[str, Any]) -> Lock:
    return _parse_package_files(path, doc, LockFormat.POETRY, marker_key="markers")


def _parse_package_files(path: str, doc: dict[str, Any], fmt: LockFormat, marker_key: str) -> Lock:
    """pdm.lock and poetry.lock: ``[[package]]`` with ``files = [{file|url, hash}]``."""
    f = Fields(path)
    notes: list[str] = []
    packages = []
    metadata = f.table(doc.get("metadata", {}), "metadata")
    for i, row in enumerate(f.tables(doc, "package", "")):
        where = f"package[{i}]"
        files = []
        for j, entry in enumerate(f.tables(row, "files", where)):
            at = f"{where}.files[{j}]"
            url = f.string(entry, "url", at)
            files.append(f.file(f.string(entry, "file", at), url, f.sha256(f.string(entry, "hash", at), f"{at}.hash"),
                                f.integer(entry, "size", at)))
        source, location = SourceKind.REGISTRY, None
        if "source" in row:  # poetry: [package.source] type = "git" | "url" | "file" | "directory" | "legacy"
            table = f.table(row["source"], f"{where}.source")
            kind = f.string(table, "type", f"{where}.source")
            location = f.string(table, "url", f"{where}.source")
            source = {"git": SourceKind.GIT, "url": SourceKind.URL, "file": SourceKind.PATH,
                      "directory": SourceKind.DIRECTORY, "legacy": SourceKind.REGISTRY}.get(kind or "", SourceKind.UNKNOWN)
        for key, kind in (("git", SourceKind.GIT), ("url", SourceKind.URL), ("path", SourceKind.PATH)):  # pdm
            if fmt is LockFormat.PDM and isinstance(row.get(key), str):
                source, location = kind, row[key]
        if fmt is LockFormat.PDM and row.get("editable") is True:
            source = SourceKind.EDITABLE
        groups = f.groups(row, "groups", where)
        marker, group_markers = _marker(f, row.get(marker_key), f"{where}.{marker_key}", groups, fmt, notes)
        packages.append(LockedPackage(name=f.name(row, "name", where), version=f.string(row, "version", where),
                                      source=source, location=location, files=tuple(files), marker=marker,
                                      optional=fmt is LockFormat.POETRY and row.get("optional") is True,
                                      groups=groups, group_markers=group_markers))
    python = f.string(metadata, "requires_python", "metadata") or f.string(metadata, "python-versions", "metadata")
    grouped = any(p.groups for p in packages)
    if grouped:
        default: tuple[str, ...] = (_DEFAULT_GROUP[fmt],)
        known = f.groups(metadata, "groups", "metadata") if fmt is LockFormat.PDM else ()
        groups_listed = tuple(dict.fromkeys((*default, *known, *(g for p in packages for g in p.groups))))
    else:
        default = groups_listed = ()
        if packages:  # an older lock, written before packages named their groups
            notes.append(f"{fmt.value}: groups are not told apart (no package names its groups, as in older locks): "
                         "every package is taken as required")
    # poetry's [extras] table: the extras an ``extra == "NAME"`` marker of an optional package may name
    extras = tuple(canonicalize_name(str(name)) for name in f.table(doc.get("extras", {}), "extras")) \
        if fmt is LockFormat.POETRY else ()
    return Lock(path=path, format=fmt, packages=tuple(packages), requires_python=python, notes=capped(notes),
                extras=extras, dependency_groups=groups_listed, default_groups=default)


# The group a plain install takes: ``pdm sync`` without ``--prod`` takes the dev groups too, but a
# dev package missing is no drift either way, so only this one is required.
_DEFAULT_GROUP = {LockFormat.PDM: "default", LockFormat.POETRY: "main"}


def _marker(f: Fields, marker: Any, where: str, groups: tuple[str, ...], fmt: LockFormat, notes: list[str]
            ) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """A package's marker: one string for every group, or (poetry.lock 2.1) a table with a marker
    per group, a group it leaves out having none."""
    if marker is None or isinstance(marker, str):
        return marker, ()
    if not isinstance(marker, dict):
        raise f.error(where, "expected a string")
    if fmt is not LockFormat.POETRY or not groups:  # older poetry: markers per dependency, not per package
        notes.append(f"{where}: markers given as a table: not evaluated")
        return None, ()
    per_group = []
    for group, value in marker.items():
        if not isinstance(value, str):
            raise f.error(f"{where}.{group}"[:200], "expected a string")
        per_group.append((canonicalize_name(str(group)), value))
    return None, tuple(per_group)

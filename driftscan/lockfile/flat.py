"""The TOML locks without a graph, one marker per package: pylock.toml (PEP 751), pdm.lock and
poetry.lock. pdm and poetry are read from their documented formats (neither tool runs here)."""

from __future__ import annotations

from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

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
        marker = row.get(marker_key)
        if isinstance(marker, dict):  # older poetry: markers per dependency, not per package
            notes.append(f"{where}: markers given as a table: not evaluated")
            marker = None
        elif marker is not None and not isinstance(marker, str):
            raise f.error(f"{where}.{marker_key}", "expected a string")
        packages.append(LockedPackage(name=f.name(row, "name", where), version=f.string(row, "version", where),
                                      source=source, location=location, files=tuple(files), marker=marker,
                                      optional=fmt is LockFormat.POETRY and row.get("optional") is True))
    python = f.string(metadata, "requires_python", "metadata") or f.string(metadata, "python-versions", "metadata")
    if fmt is LockFormat.PDM:
        notes.append("pdm.lock: groups are not told apart: every package is taken as required")
    return Lock(path=path, format=fmt, packages=tuple(packages), requires_python=python, notes=capped(notes))

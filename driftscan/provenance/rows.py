"""The installed RECORD against the RECORD of the wheel it was installed from, row by row.

pip and uv copy the wheel's RECORD rows into the installed one (FACTS §1): a row of a file the
wheel ships differs only when someone rewrote it. What installers add themselves is never a
change: the dist-info's INSTALLER, REQUESTED, RECORD, direct_url.json, uv_cache.json, the
``__pycache__`` bytecode pip compiles, and the console scripts in bin/ (rewritten at install, like
the wheel's ``.data/scripts``, which are not compared either).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ..core.values import Distribution, Hash, RecordEntry
from ..formats.record import hash_text, new_hash
from ..fs.reader import open_regular, read_pieces
from ..pristine.wheel import INSTALLER_FILES, installed_outside, installer_written, layout
from .model import FileState, RowChange, RowChangeKind

UNSIZED_CAP = 1 << 30  # a changed file whose rows give no size is read up to this many bytes


@dataclass(frozen=True)
class RowComparison:
    rows: tuple[RowChange, ...]
    compared: int  # wheel rows matched with an installed row, both hashed


def compare_rows(dist: Distribution, wheel_record: Mapping[str, RecordEntry]) -> tuple[RowChange, ...]:
    """Every RECORD row of ``dist`` that differs from ``wheel_record`` (the wheel's own RECORD, by
    member name), each with what its file holds now."""
    return compare(dist, wheel_record).rows


def compare(dist: Distribution, wheel_record: Mapping[str, RecordEntry]) -> RowComparison:
    """``compare_rows`` and how many rows were compared."""
    installed = _installed_rows(dist)
    outside = {_strip_up(path): path for path in installed if installed_outside(path)}
    wheel_info, data_dirs = layout(list(wheel_record), dist)
    mapped: dict[str, RecordEntry] = {}  # installed path → the wheel's row
    for member, row in wheel_record.items():
        path = _installed_path(member, dist, wheel_info, data_dirs, outside)
        if path is not None:
            mapped[path] = row._replace(path=path)
    changes: list[tuple[str, RowChangeKind, RecordEntry | None, RecordEntry | None]] = []
    compared = 0
    for path, wheel_row in mapped.items():
        mine = installed.get(path)
        if mine is None:
            changes.append((path, RowChangeKind.REMOVED, None, wheel_row))
        elif mine.hash is not None and wheel_row.hash is not None:
            compared += 1
            if mine.hash != wheel_row.hash or (mine.size is not None and wheel_row.size is not None
                                               and mine.size != wheel_row.size):
                changes.append((path, RowChangeKind.CHANGED, mine, wheel_row))
    for path, mine in installed.items():
        if path not in mapped and mine.hash is not None and not _installer_added(path, dist):
            changes.append((path, RowChangeKind.ADDED, mine, None))
    rows = tuple(RowChange(path, kind, _text(mine), _text(theirs),
                           _file_state(dist, path, mine.hash if mine else None, theirs.hash if theirs else None,
                                       [r.size for r in (mine, theirs) if r is not None]))
                 for path, kind, mine, theirs in sorted(changes, key=lambda c: (c[0], c[1].value)))
    return RowComparison(rows, compared)


def _installed_rows(dist: Distribution) -> dict[str, RecordEntry]:
    """The installed rows by path; of a path listed twice (pip lists a wheel-shipped .pyc once
    hashless and once hashed, FACTS §6a), the hashed row."""
    rows: dict[str, RecordEntry] = {}
    for entry in dist.entries:
        known = rows.get(entry.path)
        if known is None or (known.hash is None and entry.hash is not None):
            rows[entry.path] = entry
    return rows


def _installed_path(member: str, dist: Distribution, wheel_info: str | None, data_dirs: tuple[str, ...],
                    outside: Mapping[str, str]) -> str | None:
    """Where an installer puts the wheel member ``member`` (a RECORD path), or None for a member
    that is not compared: installer-rewritten scripts, headers, the wheel's own RECORD, a path that
    is absolute or climbs."""
    parts = member.split("/")
    if not member or member.startswith("/") or "\\" in member or any(p in ("", ".", "..") for p in parts):
        return None
    top, rest = parts[0], "/".join(parts[1:])
    if top == wheel_info:
        if rest in INSTALLER_FILES:
            return None  # the wheel's RECORD (hashless): the installed one is rewritten
        return f"{os.path.basename(dist.metadata_dir.rstrip('/'))}/{rest}"
    if top in data_dirs and rest:
        scheme, _, inner = rest.partition("/")
        if scheme in ("purelib", "platlib") and inner:
            return inner
        if scheme == "data" and inner:
            return outside.get(inner)  # data files land below the prefix: matched by their tail
        return None  # scripts (shebang rewritten), headers (installer-chosen directory)
    return member


def _strip_up(path: str) -> str:
    parts = path.split("/")
    while parts and parts[0] == "..":
        parts.pop(0)
    return "/".join(parts)


def _installer_added(path: str, dist: Distribution) -> bool:
    """A row an installer writes that no wheel has: its own dist-info files, bytecode it compiled,
    the console scripts and anything else it puts outside site-packages."""
    if installer_written(path, dist) or installed_outside(path):
        return True
    parts = path.split("/")
    return len(parts) >= 2 and parts[-2] == "__pycache__" and parts[-1].endswith(".pyc")


def _text(row: RecordEntry | None) -> str | None:
    return hash_text(row.hash) if row is not None and row.hash is not None else None


def _file_state(dist: Distribution, path: str, installed: Hash | None, wheel: Hash | None,
                sizes: list[int | None]) -> FileState:
    """What the file at ``path`` holds now: the wheel's bytes, the installed row's, neither.
    Read through the hardened reader, at most the largest size either row gives."""
    if installed is None and wheel is None:
        return FileState.NOT_CHECKED
    full = os.path.normpath(os.path.join(dist.site_packages, path))
    known = [s for s in sizes if s is not None]
    bound = max(known) if known else UNSIZED_CAP
    try:
        fd, st = open_regular(full)
    except FileNotFoundError:
        return FileState.MISSING
    except OSError:
        return FileState.NOT_CHECKED
    try:
        if st.st_size > bound:
            return FileState.NEITHER
        try:
            hashers = {h.algorithm: new_hash(h.algorithm) for h in (installed, wheel) if h is not None}
        except ValueError:
            return FileState.NOT_CHECKED
        total = 0
        for piece in read_pieces(fd, st.st_size):
            total += len(piece)
            if total > bound:
                return FileState.NEITHER
            for hasher in hashers.values():
                hasher.update(piece)
    except OSError:
        return FileState.NOT_CHECKED
    finally:
        os.close(fd)
    digests = {algorithm: hasher.digest() for algorithm, hasher in hashers.items()}
    if wheel is not None and digests[wheel.algorithm] == wheel.digest:
        return FileState.MATCHES_WHEEL
    if installed is not None and digests[installed.algorithm] == installed.digest:
        return FileState.MATCHES_INSTALLED_ROW
    return FileState.NEITHER

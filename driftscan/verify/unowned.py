"""Walk the environment for files that no RECORD owns.

The walk never follows symlinks (a loop cannot trap it) and tolerates directories that vanish
or cannot be listed: each becomes a Problem and the walk goes on.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from ..model import DriftKind, FileCheck, Problem, Target
from .files import file_type
from .ownership import Ownership, bytecode_source, is_legit_site_file, is_venv_file
from .roots import root_of


def _walk(root: str, problems: list[Problem], skip_dir, regular: set[str] | None) -> Iterator[os.DirEntry]:
    """Yield every non-directory entry under ``root`` (symlinks to directories included), and add
    the paths of regular files to ``regular``: the directory listing's file types, free of any stat."""
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except FileNotFoundError:
            if directory != root:
                problems.append(Problem(directory, "vanished during the audit"))
            continue
        except OSError as exc:
            problems.append(Problem(directory, f"cannot list directory: {exc.strerror or exc}"))
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and regular is not None and entry.is_file(follow_symlinks=False)
            except OSError:
                is_dir = is_file = False
            if is_dir:
                if not skip_dir(entry.path):
                    stack.append(entry.path)
                continue
            if is_file:
                regular.add(entry.path)  # type: ignore[union-attr]
            yield entry


def _actual(entry: os.DirEntry) -> dict:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return {}
    actual = {"type": file_type(st.st_mode), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if stat.S_ISLNK(st.st_mode):
        try:
            actual["target"] = os.readlink(entry.path)
        except OSError:
            pass
    return actual


def find_unowned(target: Target, own: Ownership,
                 regular: set[str] | None = None) -> tuple[list[FileCheck], list[Problem]]:
    """Files no RECORD owns, sorted by path. ``regular``, if given, receives the path of every
    regular file met (verify settles presence-only rows with it, without a stat each)."""
    problems: list[Problem] = []
    checks: list[FileCheck] = []

    def skip_dir(path: str) -> bool:
        md = own.metadata.get(path)
        # Orphaned dist-info dirs are reported whole; egg-info dirs list no files of their own.
        return md is not None and (md.distribution is None or md.distribution.kind == "egg-info")

    roots = list(target.site_packages)
    if target.bin_dir:
        roots.append(target.bin_dir)
    roots += list(target.extra_roots)
    seen: set[str] = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        for entry in _walk(root, problems, skip_dir, regular):
            path = entry.path
            if own.owns(path, root) or is_venv_file(target, path):
                continue
            site = next((s for s in target.site_packages if path.startswith(s + os.sep)), None)
            if site is not None:
                if is_legit_site_file(site, path) or own.claimed_by_unlisted(site, os.path.relpath(path, site)):
                    continue
            # Junk in a package's __pycache__ belongs to whoever reinstalls that package (uv wipes it).
            parent = os.path.dirname(path)
            package = own.dir_owner.get(os.path.dirname(parent)) if os.path.basename(parent) == "__pycache__" else None
            source = bytecode_source(path)
            if source is not None:
                if source in own.owners or os.path.lexists(source):
                    continue  # derived bytecode (of an owned file, or of an added one reported itself)
                checks.append(FileCheck(DriftKind.ORPHANED_BYTECODE, path, root_of(target, path), package, {},
                                        _actual(entry), "bytecode whose source file does not exist"))
                continue
            checks.append(FileCheck(DriftKind.ADDED, path, root_of(target, path), package, {}, _actual(entry),
                                    "no RECORD lists this file"))
    checks.sort(key=lambda c: c.path)
    problems.sort(key=lambda p: p.path)
    return checks, problems

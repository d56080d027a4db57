"""Walk the environment for files that no RECORD owns.

The walk never follows symlinks (a loop cannot trap it) and tolerates directories that vanish
or cannot be listed: each becomes a Problem and the walk goes on.
"""

from __future__ import annotations

import marshal
import mmap
import os
import stat
from collections.abc import Callable, Iterator
from typing import Any

from ..caches.statcache import signature
from .target import environment_roots
from .uv.cache import default_virtualenv_app_data
from ..core.values import DriftKind, FileCheck, FileState, MetadataKind, Problem, Target
from ..fs.reader import file_type
from .derived import derived_source, is_installer_bookkeeping
from ..fs.helpers import Child, may_fork
from .ownership import Ownership, bytecode_source, is_legit_site_file, is_venv_file
from .roots import root_of
from .startup import inspect as inspect_startup, is_startup_file

# What the walk found: (added-file checks, problems, presence-only rows it did not see, listed directories)
_Walked = tuple[list[FileCheck], list[Problem], list[int], list[tuple[str, bytes]]]


def _walk(root: str, problems: list[Problem], skip_dir: Callable[[str], bool],
          regular: Callable[[str], object] | None,
          listed: list[tuple[str, bytes]] | None = None) -> Iterator[os.DirEntry[str]]:
    """Yield every non-directory entry under ``root`` (symlinks to directories included), and pass
    the paths of regular files to ``regular``: the directory listing's file types, free of any stat.
    ``listed`` receives each directory's signature, taken *before* it is listed (an entry added
    after the listing then shows as a changed signature next time, never as a missed file)."""
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            if listed is not None:
                # The root may be a symlink (a linked site-packages or bin/): "root/" names the
                # directory itself, whose mtime moves when an entry is added, not the link.
                signed = directory + os.sep if directory == root else directory
                listed.append((signed, signature(os.lstat(signed))))
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
                regular(entry.path)  # type: ignore[misc]  # is_file is only set when regular is given
            yield entry


def _actual(entry: os.DirEntry[str]) -> FileState:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return {}
    actual: FileState = {"type": file_type(st.st_mode), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if stat.S_ISLNK(st.st_mode):
        try:
            actual["target"] = os.readlink(entry.path)
        except OSError:
            pass
    return actual




def _record_roots(target: Target, own: Ownership, roots: list[str]) -> list[str]:
    """Other top-level directories of a venv that a RECORD writes into (``etc/jupyter``,
    ``man/``): walked too, since whatever lands there beside the owned files is no one's."""
    if not target.venv:
        return []
    prefix = target.venv.rstrip(os.sep) + os.sep
    walked = tuple(r.rstrip(os.sep) + os.sep for r in roots)
    tops = {path[len(prefix):].split(os.sep, 1)[0] for path in own.paths(skip=walked)
            if path.startswith(prefix) and not path.startswith(walked)}
    out = []
    for top in sorted(tops):
        path = prefix + top
        if top in ("", ".", "..") or any(w.startswith(path + os.sep) for w in walked):
            continue  # lib/ holds site-packages: walked already
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):  # a symlink is not walked: it may lead anywhere
                out.append(path)
        except OSError:
            continue
    return out


def find_unowned(target: Target, own: Ownership, regular: set[str] | bytearray | None = None,
                 listed: list[tuple[str, bytes]] | None = None) -> tuple[list[FileCheck], list[Problem]]:
    """Files no RECORD owns, sorted by path. ``regular``, if given, receives the path of every
    regular file met, or (a bytearray, one byte per row of ``own``) a 1 for each row naming one:
    verify settles presence-only rows with it, without a stat each; ``listed`` the signature of
    every directory listed."""
    if isinstance(regular, bytearray):
        marks = regular

        def note(path: str) -> None:
            for i in own.rows_of(path):
                marks[i] = 1
    else:
        note = regular.add if regular is not None else None  # type: ignore[assignment]  # set.add returns None: a Callable[[str], object]

    problems: list[Problem] = []
    checks: list[FileCheck] = []

    def skip_dir(path: str) -> bool:
        md = own.metadata.get(path)
        # Orphaned dist-info dirs are reported whole; egg-info dirs list no files of their own.
        return md is not None and (md.distribution is None or md.distribution.kind is MetadataKind.EGG_INFO)

    roots = list(target.site_packages)
    if target.bin_dir:
        roots.append(target.bin_dir)
    roots += list(target.extra_roots)
    roots += _record_roots(target, own, roots)
    # Where a package directory may be linked from and still count as the package: the
    # environment, and virtualenv's app-data as driftscan's own environment names it.
    link_roots = (*environment_roots(target), *filter(None, (default_virtualenv_app_data(),)))
    inside_roots = tuple(dict.fromkeys(r.rstrip(os.sep) + os.sep for root in link_roots
                                       for r in (root, os.path.realpath(root))))
    seen: set[str] = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        for entry in _walk(root, problems, skip_dir, note, listed):
            path = entry.path
            if own.owns(path, root) or is_venv_file(target, path):
                continue
            if path in own.dir_owner and entry.is_symlink() \
                    and (os.path.realpath(path) + os.sep).startswith(inside_roots):
                # A package directory linked within the environment or from virtualenv's app-data
                # image: its rows were checked through the link (one leading elsewhere stays
                # "added", and its rows are refused as outside the environment).
                continue
            site = next((s for s in target.site_packages if path.startswith(s + os.sep)), None)
            if site is not None:
                if is_legit_site_file(site, path) or own.claimed_by_unlisted(site, os.path.relpath(path, site)) \
                        or is_installer_bookkeeping(site, entry):
                    continue
                if is_startup_file(site, path):
                    startup = inspect_startup(site, path)
                    if startup is not None:
                        checks.append(FileCheck(DriftKind.STARTUP_CODE, path, root_of(target, path), None, {},
                                                _actual(entry), startup.evidence, content_preview=startup.preview))
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
            why = "no RECORD lists this file"
            derived = derived_source(path)
            if derived is not None:
                module, cache = derived
                if module in own.owners or os.path.lexists(module):
                    continue  # a tool's cache of a module, as bytecode is (environment/derived.py)
                why = f"a {cache.name} ({cache.writer}) of a module that does not exist"
            checks.append(FileCheck(DriftKind.ADDED, path, root_of(target, path), package, {}, _actual(entry), why))
    checks.sort(key=lambda c: c.path)
    problems.sort(key=lambda p: p.path)
    return checks, problems


class UnownedWalk:
    """``find_unowned`` beside the caller's own work: in a forked child where that is safe (Linux,
    no other thread running), else at once in this process. Besides the unowned files it answers
    which presence-only rows the walk did *not* see as regular files: only those need an lstat.

    The walk and the stat-cache pass are both system-call loops with Python between the calls;
    two threads would fight over the GIL, two processes run side by side (a warm audit of a
    40,000-file venv: 0.09 s of walking hidden behind the stat pass)."""

    def __init__(self, target: Target, own: Ownership, presence: list[bool], signatures: bool = True,
                 typed: bool = True) -> None:
        """``signatures``: also record each directory's signature (for the clean index);
        ``typed``: also say which hashed rows the listing showed as regular files (``typed()``:
        for hashing without an lstat each, worth it when most files will be hashed)."""
        self._target, self._own, self._presence, self._signatures = target, own, presence, signatures
        self._child: Child | None = None
        self._result: _Walked | None = None
        self._regular: bytearray | None = None  # per row, 1 if seen as a regular file (when walking here)
        self._typed: bytes | None = None
        # A shared page, not the pipe, carries the answer to ``typed()``: the child writes it as
        # soon as its listing is done, and a process forked after this one (the small-files
        # child) can read it too. Byte 0 says it is complete.
        self._shared = mmap.mmap(-1, len(own.entries) + 1) if typed and may_fork() else None
        if may_fork():
            self._fork()
        if self._child is None or not self._child.started:
            self._child = None
            self._result = self._walk()

    def _walk(self) -> _Walked:
        regular = bytearray(len(self._own.entries))  # per row: 1 if the walk saw its path as a regular file
        listed: list[tuple[str, bytes]] = []
        checks, problems = find_unowned(self._target, self._own, regular, listed if self._signatures else None)
        unseen = [i for i, presence in enumerate(self._presence) if presence and not regular[i]]
        self._regular = regular
        return checks, problems, unseen, listed

    def _typed_of(self, regular: bytearray) -> bytes:
        # 1 for each hashed row the listing showed as a regular file: known to be one, inside the
        # roots (the walk follows no symlink), before anything opens it. 0 for the rest: symlinks,
        # FIFOs, devices, missing files, paths outside the walked roots or under a linked directory.
        presence = bytes(self._presence)  # 1 for a presence-only row
        return bytes(seen & ~flag & 1 for seen, flag in zip(regular, presence))

    def _fork(self) -> None:
        self._child = Child(self._send)

    def _send(self, fd: int) -> None:
        checks, problems, unseen, listed = self._walk()
        if self._shared is not None:
            assert self._regular is not None  # set by _walk()
            self._shared[1:] = self._typed_of(self._regular)
            self._shared[0] = 1
        # Plain values (marshal: pickle's import alone costs the audit half a megabyte)
        plain = [(c.kind.value, c.path, c.root, c.distribution.metadata_dir if c.distribution else None,
                  c.expected, c.actual, c.evidence, c.content_preview) for c in checks]  # a Distribution carries all its rows
        data = marshal.dumps((plain, [(p.path, p.message) for p in problems], unseen, listed))
        with os.fdopen(fd, "wb") as out:
            out.write(data)

    def _collect(self) -> _Walked:
        if self._result is not None:
            return self._result
        data = self._child.wait() if self._child is not None else None
        try:
            # No child's data (None) raises TypeError: walked here instead, below.
            plain, problems, unseen, listed = marshal.loads(data)  # type: ignore[arg-type]
            problems = [Problem(path, message) for path, message in problems]
            by_dir = {md.path: md.distribution for md in self._own.metadata.values()}
            checks = [FileCheck(DriftKind(kind), path, root, by_dir.get(dist) if dist else None, expected, actual,
                                evidence, content_preview=preview)
                      for kind, path, root, dist, expected, actual, evidence, preview in plain]
        except Exception:  # noqa: BLE001 - the child failed: walk here instead, the audit goes on
            self._result = self._walk()
            return self._result
        self._result = (checks, problems, unseen, listed)
        return self._result

    def typed(self) -> bytes | None:
        """One byte per row, 1 where the listing showed a hashed row's path as a regular file;
        None while the walk (in a child) has not got that far, or if it cannot say. Never
        waits, and never reads the pipe: callable from a process forked after this one."""
        if self._typed is None:
            if self._regular is not None:  # walked here
                self._typed = self._typed_of(self._regular)
            elif self._shared is not None and self._shared[0]:
                self._typed = self._shared[1:]
        return self._typed

    def unseen_presence_rows(self) -> list[int]:
        """Indices of presence-only rows whose path the walk did not see as a regular file."""
        return self._collect()[2]

    def unowned(self) -> tuple[list[FileCheck], list[Problem]]:
        checks, problems = self._collect()[:2]
        return checks, problems

    def listed_directories(self) -> list[tuple[str, bytes]]:
        """(directory, signature before listing) for every directory walked."""
        return self._collect()[3]

    def abandon(self) -> None:
        """Stop the child (the audit failed or was interrupted)."""
        if self._result is None and self._child is not None:
            self._child.kill()
            self._result = ([], [], [], [])

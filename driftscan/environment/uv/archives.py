"""uv's cache audited on its own: every archive (``archive-v*/<id>/``, an unpacked wheel) against
the RECORD inside it.

An in-place edit of a hard-linked venv file edits the archive too; a later reinstall from a wheel
file (or a pip reinstall) gives the venv a clean copy, and nothing in the venv says any more that
the cache still holds the edit, which every new venv installed from that source then gets
(docs/installers.md §2). So the cache is checked itself, independent of link counts in any venv:
one ``cache-modified`` drift per archive whose files differ from its RECORD.

The cache is untrusted input like the tree: a RECORD is read as a regular file of bounded size
(never through a symlink) and parsed by the strict parser; a row naming a path outside the
archive, or under a directory that leads out of it, is not opened; a symlink, FIFO or device in
the archive is reported by its type, never followed or opened. An archive that cannot be checked
(no dist-info, an unreadable or malformed RECORD) is a problem with the reason, and the rest goes
on. Digests go through the stat cache, so a repeated audit of an unchanged cache reads no content.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Sequence
from typing import Any
from dataclasses import dataclass, field

from ...caches.racy import settled_stat
from ...caches.statcache import DigestCache, _read_framed, _write_framed, signature
from .cache import (IndexedArchive, index_roots, indexed_archives, indexed_links_out, links_out, list_archives, within,
                    MAX_ARCHIVES)
from ...fs.reader import LIMITS, os_error, read_regular_stat
from ...core.units import count
from ...core.values import Area, ArchiveMember, Distribution, DriftKind, FileCheck, Problem
from ...formats.record import parse_record
from ..files import MISSING, MODIFIED, OK, TYPE_CHANGED, check_entry

MEMO_FORMAT = b"driftscan-uv-archives-1\n"
_DIST_INFO = ".dist-info"
MAX_FILES_NAMED = 20  # edited files named in the evidence (all are in ``actual.edited``)


@dataclass(frozen=True)
class CacheAudit:
    """What auditing the archives found: one drift per edited archive, what could not be checked."""

    checks: tuple[FileCheck, ...] = ()
    errors: tuple[Problem, ...] = ()
    skipped: tuple[Problem, ...] = ()
    archives: int = 0  # archives checked
    files_checked: int = 0
    archive_paths: tuple[str, ...] = field(default=(), compare=False)


def _dist_info(archive: str) -> tuple[str | None, str | None]:
    """(the archive's one dist-info directory name, or None; why not, or None)."""
    try:
        with os.scandir(archive) as entries:
            infos = sorted(e.name for e in entries if e.name.endswith(_DIST_INFO) and e.is_dir(follow_symlinks=False))
    except OSError as exc:
        return None, f"cannot list the archive: {os_error(exc)}"
    if not infos:
        return None, "no .dist-info directory in the archive"
    if len(infos) > 1:
        return None, f"{len(infos)} .dist-info directories in one archive ({', '.join(infos[:3])})"
    return infos[0], None


def _name_version(info: str) -> tuple[str, str]:
    name, _, version = info[:-len(_DIST_INFO)].rpartition("-")
    return (name or info[:-len(_DIST_INFO)]), version


def _unsafe(path: str) -> bool:
    parts = path.split("/")
    return not path or path.startswith("/") or "\\" in path or "\0" in path or ".." in parts or ":" in parts[0]


class _Dirs:
    """Whether a directory of the archive is inside it: every directory from the archive down to
    it is a real directory, no symlink (one lstat per directory, remembered)."""

    def __init__(self, archive: str) -> None:
        self.archive = archive
        self.known: dict[str, bool] = {archive: True}

    def inside(self, directory: str) -> bool:
        known = self.known.get(directory)
        if known is None:
            parent = os.path.dirname(directory)
            if parent == directory or not directory.startswith(self.archive + os.sep):
                known = False
            else:
                try:
                    known = self.inside(parent) and stat.S_ISDIR(os.lstat(directory).st_mode)
                except FileNotFoundError:
                    known = self.inside(parent)  # its files are then missing, nothing is followed
                except OSError:
                    known = False
            self.known[directory] = known
        return known


class CleanArchives:
    """Archives found clean, with the lstat signature of their RECORD and of every file it lists
    (older than the racy window when checked): an archive whose signatures are all unchanged is
    clean again without a digest lookup or a RECORD parse — one lstat per file. A file of its own
    in driftscan's cache (``path``; None: nothing remembered)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        loaded = _read_framed(path, MEMO_FORMAT) if path else None
        self._known: dict[str, tuple[bytes, bytes]] = {
            k: v for k, v in (loaded.items() if type(loaded) is dict else ())
            if type(k) is str and type(v) is tuple and len(v) == 2 and all(type(x) is bytes for x in v)}
        self._dirty = False

    @staticmethod
    def _signatures(paths: Sequence[str], started: int | None = None) -> bytes | None:
        out = []
        for path in paths:
            try:
                st = os.lstat(path)
            except OSError:
                return None
            if started is not None and not settled_stat(st, started):
                return None  # changed too recently to be sure of what was read
            sig = signature(st)
            if not sig:
                return None
            out.append(sig)
        return b"".join(out)

    def still_clean(self, archive: str) -> int | None:
        """The number of files checked when ``archive`` was found clean, if nothing changed since."""
        known = self._known.get(archive)
        if known is None:
            return None
        paths = os.fsdecode(known[0]).split("\0")
        if self._signatures(paths) != known[1]:
            return None
        return len(paths) - 1

    def remember(self, archive: str, paths: Sequence[str], started: int) -> None:
        if not self.path:
            return
        sigs = self._signatures(paths, started)
        if sigs is not None:
            self._known[archive] = (os.fsencode("\0".join(paths)), sigs)
            self._dirty = True

    def forget(self, archive: str) -> None:
        if self._known.pop(archive, None) is not None:
            self._dirty = True

    def save(self, live: Sequence[str] | None = None) -> None:
        if live is not None:
            alive = set(live)
            stale = [k for k in self._known if k not in alive]
            for k in stale:
                del self._known[k]
            self._dirty = self._dirty or bool(stale)
        if self.path and self._dirty:
            _write_framed(self.path, MEMO_FORMAT, self._known)
            self._dirty = False


def _audit_archive(archive: str, stat_cache: DigestCache | None, index: Sequence[IndexedArchive],
                   clean: CleanArchives | None = None) -> tuple[FileCheck | None, Problem | None, int]:
    """(the drift when files differ from RECORD, the problem when it could not be checked, files checked)."""
    started = time.time_ns()
    if clean is not None:
        settled = clean.still_clean(archive)
        if settled is not None:
            return None, None, settled
        clean.forget(archive)
    info, why = _dist_info(archive)
    if info is None:
        return None, Problem(archive, f"uv cache archive not checked: {why}"), 0
    record = os.path.join(archive, info, "RECORD")
    try:
        read_at = time.time_ns()
        data, st = read_regular_stat(record, LIMITS["RECORD"], what="RECORD", follow=False, root=archive)
    except OSError as exc:
        return None, Problem(record, f"uv cache archive not checked: its RECORD cannot be read: {os_error(exc)}"), 0
    parsed = stat_cache.parsed_record(record, st, False) if stat_cache is not None else None
    if parsed is None:
        try:
            parsed = parse_record(data.decode("utf-8"))
        except UnicodeDecodeError:
            return None, Problem(record, "uv cache archive not checked: its RECORD is not UTF-8"), 0
        if stat_cache is not None and not parsed.issues:
            stat_cache.remember_record(record, st, False, parsed, read_at)
    if parsed.issues:
        first = parsed.issues[0]
        more = f" (and {len(parsed.issues) - 1} more)" if len(parsed.issues) > 1 else ""
        return None, Problem(record, f"uv cache archive not checked: malformed RECORD, line {first.line}: "
                                     f"{first.message}{more}"), 0
    dirs = _Dirs(archive)
    seen = [record]
    edited: list[ArchiveMember] = []
    unsafe: list[str] = []
    checked = 0
    links = 1
    for entry in parsed.entries:
        if _unsafe(entry.path):
            unsafe.append(entry.path)
            continue
        if entry.path == f"{info}/RECORD" or entry.hash is None and entry.size is None:
            continue  # RECORD itself, a directory row
        path = os.path.join(archive, *entry.path.split("/"))
        if not dirs.inside(os.path.dirname(path)):
            edited.append({"path": entry.path, "kind": "type-changed",
                           "why": "under a directory that leads out of the archive; not followed"})
            continue
        result = check_entry(path, entry, cache=stat_cache)
        checked += 1
        seen.append(path)
        if result is None or result.status == OK:
            continue
        if result.status in (MODIFIED, MISSING, TYPE_CHANGED):
            links = max(links, result.nlink)
            member: ArchiveMember = {"path": entry.path, "kind": result.status, "expected": result.expected,
                                     "actual": result.actual}
            if result.message:
                member["why"] = result.message
            edited.append(member)
        else:
            return None, Problem(path, f"uv cache archive not fully checked: {result.message}"), checked
    if unsafe:
        name = "names" if len(unsafe) == 1 else "name"
        problem: Problem | None = Problem(record, f"{count(len(unsafe), 'RECORD row')} of the uv cache archive "
                                                  f"{name} a path outside it (e.g. {unsafe[0]!r}); not opened")
    else:
        problem = None
    if not edited:
        if problem is None and clean is not None:
            clean.remember(archive, seen, started)
        return None, problem, checked
    name, version = _name_version(info)
    dist = Distribution(name=name, version=version, metadata_dir=os.path.join(archive, info), site_packages=archive,
                        installer="uv")
    named = ", ".join(f"{e['path']} ({e['kind']})" for e in edited[:MAX_FILES_NAMED])
    if len(edited) > MAX_FILES_NAMED:
        named += f" and {len(edited) - MAX_FILES_NAMED} more"
    sources = [i.entry for i in index if i.archive == archive]
    via = (f"uv's wheel index links {count(len(sources), 'source')} to it ({sources[0]}" +
           (", …" if len(sources) > 1 else "") + "), so a new venv installed from that source gets the edit"
           if sources else "no entry of uv's wheel index names it (uv fetched the wheel again into a new archive, "
           "or the index was cleaned): a new install does not link it, venvs still hard-linked to it share the edit, "
           "and `uv cache clean NAME` leaves it; `uv cache prune` removes it")
    shared = f"; edited files have {links} hard links: venvs share them now" if links > 1 else ""
    evidence = (f"uv's cache archive of {name} {version} differs from its own RECORD: {named}; {via}{shared}. "
                "A reinstall from a wheel file or with pip leaves the cache as it is")
    check = FileCheck(DriftKind.CACHE_MODIFIED, archive, os.path.dirname(os.path.dirname(archive)), dist,
                      {"record": f"{info}/RECORD"},
                      {"type": "directory", "edited": edited, "index_entries": sources, "links": links},
                      evidence, area=Area.EXTERNAL)
    return check, problem, checked


def links_out_problems(cache_dir: str, top_only: bool = False) -> tuple[Problem, ...]:
    """An error for each archive directory of the cache that is a symlink leading out of it."""
    return tuple(Problem(link, f"uv cache archive not checked: a symlink out of the cache (to {target}); uv "
                               "installs from it, driftscan does not follow it (name that directory with "
                               "--uv-cache to check it)") for link, target in links_out(cache_dir, top_only=top_only))


def indexed_links_out_problems(cache_dir: str, distributions: Iterable[Distribution]
                               ) -> tuple[tuple[Problem, ...], set[str]]:
    """A default audit's errors for the archives uv's wheel index names for these distributions
    that are symlinks leading out of the cache (not followed, so not checked), and the keys of the
    distributions they belong to."""
    roots = index_roots(cache_dir)
    problems: dict[str, Problem] = {}
    keys: set[str] = set()
    for dist in distributions:
        for link, target in indexed_links_out(cache_dir, dist.name, roots):
            keys.add(dist.key)
            problems.setdefault(link, Problem(link, f"uv cache archive of {dist.name} not checked: a symlink out of "
                                                    f"the cache (to {target}), named by uv's wheel index; not followed "
                                                    "(name that directory with --uv-cache to check it)"))
    return tuple(problems[k] for k in sorted(problems)), keys


def audit_archives(cache_dir: str, archives: Iterable[str] | None = None, stat_cache: DigestCache | None = None,
                   index: Sequence[IndexedArchive] = (), clean: CleanArchives | None = None) -> CacheAudit:
    """Audit the archives of uv's cache at ``cache_dir``: ``archives`` (paths inside it), or every
    archive when None. ``stat_cache``: a ``driftscan.caches.statcache.StatCache`` for the digests and RECORD
    parses (None: hash everything). ``index``: the wheel index entries known to name archives,
    cited as the sources that would install an edited one. ``clean``: the archives found clean
    before, settled by their files' signatures (the caller saves it)."""
    errors: list[Problem] = []
    skipped: list[Problem] = []
    if not os.path.isdir(cache_dir):
        return CacheAudit(errors=(Problem(cache_dir, "no uv cache here: its archives were not checked"),))
    if archives is None:
        chosen, truncated = list_archives(cache_dir)
        if truncated:
            skipped.append(Problem(cache_dir, f"uv cache audit stopped at {MAX_ARCHIVES} archives; the rest were "
                                              "not checked"))
    else:
        chosen = sorted(set(archives))
    errors += links_out_problems(cache_dir, top_only=archives is not None)
    checks: list[FileCheck] = []
    files = 0
    for archive in chosen:
        try:
            mode = os.lstat(archive).st_mode
            if stat.S_ISLNK(mode) and not within(cache_dir, archive):
                errors.append(Problem(archive, f"uv cache archive not checked: a symlink out of the cache (to "
                                               f"{os.path.realpath(archive)}); not followed"))
                continue
            if not stat.S_ISDIR(mode) and not stat.S_ISLNK(mode):
                errors.append(Problem(archive, "uv cache archive not checked: not a directory"))
                continue
        except OSError as exc:
            errors.append(Problem(archive, f"uv cache archive not checked: {os_error(exc)}"))
            continue
        try:
            check, problem, checked = _audit_archive(archive, stat_cache, index, clean)
        except (OSError, ValueError) as exc:  # the rest of the cache, and the audit, go on
            check, problem, checked = None, Problem(archive, f"uv cache archive not checked: {exc}"), 0
        files += checked
        if problem is not None:
            errors.append(problem)
        if check is not None:
            checks.append(check)
    return CacheAudit(tuple(checks), tuple(errors), tuple(skipped), len(chosen), files, tuple(chosen))


def uv_installed(distributions: Iterable[Distribution]) -> list[Distribution]:
    return [d for d in distributions if (d.installer or "").lower() == "uv" and isinstance(d.name, str)
            and isinstance(d.version, str)]


def archives_of(cache_dir: str | None, distributions: Iterable[Distribution],
                linked: Iterable[str] = ()) -> tuple[list[str], list[IndexedArchive], list[Distribution]]:
    """The archives a venv's uv-installed distributions came from or would be reinstalled from: every
    archive uv's wheel index names for each name, in any version (the registry, an index,
    find-links, a URL, a wheel file: an older version's edited archive outlives an upgrade, and a
    downgrade or another project installs it), plus ``linked`` (archives a drifted file was found
    hard-linked to); and the uv-installed distributions for which the index names no archive of
    the installed version (their cache copies go unchecked)."""
    found: dict[str, None] = {}
    index: list[IndexedArchive] = []
    unfound: list[Distribution] = []
    wanted = uv_installed(distributions)
    if cache_dir and wanted:
        roots = index_roots(cache_dir)
        for dist in wanted:
            hits = indexed_archives(cache_dir, dist.name, None, roots)
            if not any(os.path.basename(h.entry).startswith(f"{dist.version}-") for h in hits):
                unfound.append(dist)
            for hit in hits:
                index.append(hit)
                found.setdefault(hit.archive)
    for archive in linked:
        found.setdefault(archive)
    return list(found), index, unfound


def unchecked_note(cache_dir: str, dists: Sequence[Distribution], exists: bool) -> Problem | None:
    """What to say of uv-installed distributions whose cache archives were not checked."""
    if not dists:
        return None
    names = ", ".join(d.key for d in dists[:3]) + (f" and {len(dists) - 3} more" if len(dists) > 3 else "")
    them, they = ("it", "it was") if len(dists) == 1 else ("them", "they were")
    why = f"has no archive in its wheel index for {them}" if exists else "does not exist"
    return Problem(cache_dir, f"uv's cache {cache_dir} {why}: the cache copies of "
                              f"{count(len(dists), 'uv-installed distribution')} ({names}) were not checked "
                              f"(--uv-cache DIR names the cache {they} installed from)")

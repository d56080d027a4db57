"""Which source gives a distribution's originals: each tried in order, every needed row verified."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from ..environment.uv.cache import default_uv_cache
from ..core.values import Distribution, MetadataKind, RecordEntry
from .backups import backup_candidate
from .base import Lookup, PristineCopy, PristineOptions, Rejected, WrongRow
from .directurl import open_direct_url
from .fetch import fetch_candidates
from .kept import kept_candidate
from .pipcache import PipCacheIndex, default_pip_cache
from .uvarchive import ArchiveIndex, UvArchiveCopy
from .wheel import installed_outside, installer_written
from .wheelhouse import Wheelhouse

NOT_A_WHEEL = "a conda/dpkg/egg-info distribution: no wheel to compare with"
_SHOWN = 5  # paths named in a reason before "and N more"

Needed = Mapping[Distribution, Sequence[RecordEntry]] | Iterable[tuple[Distribution, Sequence[RecordEntry]]]
# The installed content of needed rows, by (metadata_dir, RECORD path): ("sha256=...", size).
Installed = Mapping[tuple[str, str], tuple[str, int]]


def _key(dist: Distribution) -> str:
    # Not the Distribution itself: one with a direct_url (a dict) cannot be hashed.
    return dist.metadata_dir


class PristineSet:
    """The lookups of one ``find_pristine``; as a context manager it closes the wheels it opened
    and removes the downloads (``--fetch``) on exit."""

    def __init__(self) -> None:
        self._lookups: dict[str, Lookup] = {}
        self._workdir: str | None = None

    def __enter__(self) -> PristineSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for lookup in self._lookups.values():
            if lookup.copy is not None:
                lookup.copy.close()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def get(self, dist: Distribution) -> Lookup | None:
        return self._lookups.get(_key(dist))

    def lookups(self) -> list[Lookup]:
        return list(self._lookups.values())

    def workdir(self) -> str:
        """A private temporary directory that lives as long as this set."""
        if self._workdir is None:
            self._workdir = tempfile.mkdtemp(prefix="driftscan-pristine-")
        return self._workdir

    def _add(self, lookup: Lookup) -> None:
        self._lookups[_key(lookup.distribution)] = lookup


class _Sources:
    """The sources of one search, each set up on first use and shared by every distribution."""

    def __init__(self, options: PristineOptions, pset: PristineSet, progress: Callable[[str], None] | None) -> None:
        self.options = options
        self.pset = pset
        self.progress = progress
        self.wheelhouse = Wheelhouse(options.wheels)
        self._uv: ArchiveIndex | None | bool = False
        self._pip: PipCacheIndex | None | bool = False

    def uv(self) -> ArchiveIndex | None:
        if self._uv is False:
            where = self.options.uv_cache or default_uv_cache()
            self._uv = ArchiveIndex(where) if where and os.path.isdir(where) else None
        return self._uv  # type: ignore[return-value]  # False (not looked up yet) is gone by now

    def pip(self) -> PipCacheIndex | None:
        if self._pip is False:
            where = self.options.pip_cache or default_pip_cache()
            self._pip = PipCacheIndex(where, self.progress) if where and os.path.isdir(where) else None
        return self._pip  # type: ignore[return-value]  # False (not looked up yet) is gone by now

    def candidates(self, dist: Distribution, wanted: Sequence[RecordEntry], notes: list[str]
                   ) -> Iterator[PristineCopy | Rejected]:
        found, why = open_direct_url(dist)
        if found is None:
            notes.append(f"direct_url ({why})")
        else:
            yield found
        yield from self.wheelhouse.candidates(dist, notes)
        uv = self.uv()
        if uv is None:
            notes.append(f"uv's cache ({_absent(self.options.uv_cache)})")
        else:
            archives = list(uv.archives(dist))
            if not archives:
                notes.append(f"uv's cache {uv.cache_dir} (no archive of {os.path.basename(dist.metadata_dir)})")
            for archive, info in archives:
                yield UvArchiveCopy(archive, info, dist)
        pip = self.pip()
        if pip is None:
            notes.append(f"pip's cache ({_absent(self.options.pip_cache)})")
        else:
            yield from pip.candidates(dist, notes)
        backup = backup_candidate(dist, wanted, notes)
        if backup is not None:
            yield backup
        kept = kept_candidate(dist, wanted, notes)
        if kept is not None:
            yield kept
        if not self.options.fetch:
            notes.append("--fetch (not asked for)")
        else:
            yield from fetch_candidates(dist, self.options.python_version, self.options.venv, self.pset.workdir,
                                        notes, self.progress)


def _absent(given: str | None) -> str:
    return f"{given}: no such directory" if given else "none found"


def _paths(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:_SHOWN])
    return shown + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")


def _wrong_rows(candidate: PristineCopy, failures: Sequence[tuple[RecordEntry, str]], dist: Distribution,
                installed: Installed) -> list[WrongRow] | None:
    """Every failure of ``candidate`` as a row its wheel gets wrong itself (it ships the installed
    bytes, its own row is the installed row), when all of them are and the wheel is a wheel of
    this release; else None: the copy is not the wheel this was installed from."""
    if not failures or not installed or not candidate.is_release_of(dist):
        return None
    found = []
    for entry, _ in failures:
        current = installed.get((dist.metadata_dir, entry.path))
        wrong = candidate.wrong_row(entry, *current) if current is not None else None
        if wrong is None:
            return None
        found.append(wrong)
    return found


def _look_up(dist: Distribution, rows: Sequence[RecordEntry], sources: _Sources,
             installed: Installed | None = None) -> Lookup:
    if dist.kind is not MetadataKind.DIST_INFO:
        return Lookup(dist, None, (), NOT_A_WHEEL)
    rows = list(dict.fromkeys(rows))
    unhashed = [r.path for r in rows if r.hash is None]
    outside = [r.path for r in rows if r.hash is not None and installed_outside(r.path)]
    written = [r.path for r in rows if r.hash is not None and installer_written(r.path, dist)]
    wanted = [r for r in rows if r.hash is not None and not installed_outside(r.path)
              and not installer_written(r.path, dist)]
    caveats = []
    if outside:
        caveats.append(f"{_paths(outside)}: installed outside site-packages (rewritten at install), no pristine copy")
    if written:
        caveats.append(f"{_paths(written)}: written by the installer, in no wheel")
    if unhashed:
        caveats.append(f"{_paths(unhashed)}: no hash in RECORD, so no copy can be verified")
    lacking = tuple(outside + written + unhashed)
    if not wanted:
        return Lookup(dist, None, (), "; ".join(caveats) or "no file asked for", lacking)
    if sources.progress is not None:
        sources.progress(f"looking for the original files of {dist.name} {dist.version}")
    rejected: list[Rejected] = []
    notes: list[str] = []
    best: tuple[PristineCopy, list[tuple[RecordEntry, str]]] | None = None
    for candidate in sources.candidates(dist, wanted, notes):
        if isinstance(candidate, Rejected):
            rejected.append(candidate)
            continue
        failures = candidate.failures(wanted)
        # A wheel whose own RECORD is wrong about a file still is that file's original, when the
        # installed bytes are its member's and every other needed row verifies.
        wrong = _wrong_rows(candidate, failures, dist, installed or {})
        if wrong is not None:
            if best is not None:
                best[0].close()
            reason = "; ".join([n for n in (candidate.note,) if n] + caveats) or None
            return Lookup(dist, candidate, tuple(rejected), reason, lacking,
                          frozenset(r.path for r in wanted) - {w.path for w in wrong}, tuple(wrong))
        if not failures:
            if best is not None:
                best[0].close()
            reason = "; ".join([n for n in (candidate.note,) if n] + caveats) or None
            return Lookup(dist, candidate, tuple(rejected), reason, lacking, frozenset(r.path for r in wanted))
        more = f" (and {len(failures) - 1} more of the {len(wanted)} files)" if len(failures) > 1 else ""
        rejected.append(Rejected(candidate.source, candidate.path, candidate.explain(*failures[0]) + more))
        if len(failures) < len(wanted) and (best is None or len(failures) < len(best[1])):
            if best is not None:
                best[0].close()
            best = (candidate, failures)
        else:
            candidate.close()
    if best is not None:
        copy, failures = best
        missing = [entry.path for entry, _ in failures]
        reason = (f"no source has every file: {copy.source.label} {copy.path}, the closest, has no verified copy "
                  f"of {len(missing)} of the {len(wanted)} ({_paths(missing)})")
        verified = frozenset(r.path for r in wanted) - set(missing)
        return Lookup(dist, copy, tuple(rejected), "; ".join([reason, *caveats]), tuple(missing) + lacking, verified)
    tried = notes + [f"{r.source.label} {r.path} (rejected: {r.reason})" for r in rejected]
    reason = f"no original of {dist.name} {dist.version} found; tried " + "; ".join(tried)
    return Lookup(dist, None, tuple(rejected), "; ".join([reason, *caveats]), tuple(r.path for r in wanted) + lacking)


def find_pristine(needed: Needed, options: PristineOptions,
                  progress: Callable[[str], None] | None = None, installed: Installed | None = None) -> PristineSet:
    """The original files of each distribution in ``needed`` (its drifted RECORD rows), from the
    first source whose copy of every row verifies: the wheel direct_url.json names, ``--wheels``
    directories, uv's cache, pip's HTTP cache, backups beside the drifted files (``x.bak``,
    ``x.orig``, ``x~``), driftscan's kept originals, then (only with
    ``fetch``) ``pip download``.
    ``needed`` may also be (distribution, rows) pairs: a Distribution with a direct_url cannot
    be a dict key. ``installed``: the installed files' digests and sizes, for telling a row the
    wheel itself gets wrong (``Lookup.wrong_rows``) from an edit."""
    pairs = needed.items() if isinstance(needed, Mapping) else needed
    grouped: dict[str, tuple[Distribution, list[RecordEntry]]] = {}
    for dist, rows in pairs:
        grouped.setdefault(_key(dist), (dist, []))[1].extend(rows)
    pset = PristineSet()
    sources = _Sources(options, pset, progress)
    try:
        for dist, rows in grouped.values():
            pset._add(_look_up(dist, rows, sources, installed))
    except BaseException:
        pset.close()
        raise
    return pset

"""An environment against the lockfiles named with ``--lock``: each installed distribution's version
and source against the lock's entry for this environment (``lock-mismatch``), and the digest of
the wheel the lock names for it, which proves the wheel whose own RECORD the installed one is
compared with (``provenance/``)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..core.errors import DriftscanError
from ..caches.statcache import DigestCache
from ..core.values import Distribution, DriftKind, FileCheck, FileState, MetadataKind, Problem, Target
from ..environment.dists import read_distribution, with_direct_url
from ..environment.target import audit_containment
from ..environment.uv.cache import default_uv_cache
from ..environment.uv.links import annotate_uv_cache
from ..fs.reader import read_regular
from ..lockfile.markers import marker_environment
from ..lockfile.model import Lock, LockedPackage, LockFormat, Selection, SourceKind
from ..lockfile.memo import select_remembered
from ..lockfile.select import wheel_for
from ..pristine.base import PristineOptions
from ..provenance.check import check_provenance
from ..provenance.expected import Expected
from ..provenance.model import FileState as RowFileState, Provenance, ProvenanceSource, RowChange, RowChangeKind

# A venv's own tooling that a lock rarely lists (pip-compile leaves them out on purpose): their
# absence from a lock is not the environment's drift.
SEEDED = frozenset({"pip", "setuptools", "wheel", "distribute"})
MAX_WHEEL_FILE = 64 << 10  # a dist-info's WHEEL file: a few lines


@dataclass(frozen=True)
class LockedWheel:
    """The digests a lock accepts for one installed distribution, and the lock that says so."""

    lock: str
    digests: frozenset[str]  # sha256, hex
    filename: str | None  # the wheel the lock names for this platform, when it names one


@dataclass(frozen=True)
class LockOutcome:
    checks: tuple[FileCheck, ...] = ()
    wheels: dict[str, LockedWheel] = field(default_factory=dict)  # by metadata_dir
    notes: tuple[Problem, ...] = ()
    errors: tuple[Problem, ...] = ()
    # Distributions the lock pins with no wheel digest to check against, and why.
    no_wheel: tuple[Provenance, ...] = ()


def installed_tags(dist: Distribution) -> tuple[str, ...]:
    """The ``Tag:`` lines of the distribution's WHEEL file: which of a lock's wheels it was."""
    try:
        text = read_regular(os.path.join(dist.metadata_dir, "WHEEL"), MAX_WHEEL_FILE, follow=False).decode(
            "utf-8", "replace")
    except OSError:
        return ()
    return tuple(line.partition(":")[2].strip() for line in text.splitlines() if line.lower().startswith("tag:"))


def _same_version(installed: str, locked: str) -> bool:
    try:
        return Version(installed) == Version(locked)
    except InvalidVersion:
        return installed == locked


def _installed_source(dist: Distribution) -> tuple[str, str]:
    """(class, how the installed distribution's source reads) from its direct_url.json."""
    direct = dist.direct_url or {}
    url = direct.get("url") if isinstance(direct.get("url"), str) else None
    if not direct or url is None:
        return "index", "an index"
    if isinstance(direct.get("vcs_info"), dict):
        return "vcs", url
    if isinstance(direct.get("dir_info"), dict):
        return "directory", url
    return "archive", url


# A project's own tree (editable, a directory, uv's virtual root): no archive, so no digest to prove it by.
_LOCAL_TREES = {SourceKind.EDITABLE, SourceKind.DIRECTORY, SourceKind.VIRTUAL}

_LOCK_CLASS = {SourceKind.REGISTRY: "index", SourceKind.URL: "archive", SourceKind.PATH: "archive",
               SourceKind.DIRECTORY: "directory", SourceKind.EDITABLE: "directory", SourceKind.VIRTUAL: "directory",
               SourceKind.GIT: "vcs"}


def remedy(lock: Lock, target: Target) -> str:
    """How the environment is installed again from ``lock``, with the tool that reads it."""
    path = shlex.quote(lock.path)
    where = shlex.quote(target.venv) if target.venv else None
    if lock.format is LockFormat.UV:
        return f"uv sync --locked --project {shlex.quote(os.path.dirname(lock.path))}"
    if lock.format is LockFormat.PDM:
        return f"pdm sync --clean --lockfile {path}"
    if lock.format is LockFormat.POETRY:
        return f"poetry sync --directory {shlex.quote(os.path.dirname(lock.path))}"
    python = f" --python {where}" if where else ""
    return f"uv pip sync{python} {path}"


def _check(dist: Distribution | None, path: str, root: str, lock: Lock, target: Target, expected: FileState,
           actual: FileState, evidence: str) -> FileCheck:
    return FileCheck(DriftKind.LOCK_MISMATCH, path, root, dist, expected, actual, evidence,
                     remedy_hint=remedy(lock, target))


def _entry_state(lock: Lock, pkg: LockedPackage | None) -> FileState:
    state = FileState(lock=lock.path, version=pkg.version if pkg else None)
    if pkg is not None:
        state["lock_source"] = pkg.source.value
        if pkg.location:
            state["location"] = pkg.location
    return state


def _compare(dist: Distribution, pkg: LockedPackage, lock: Lock, target: Target) -> FileCheck | None:
    name = os.path.basename(lock.path)
    if pkg.version is not None and not _same_version(dist.version, pkg.version):
        return _check(dist, dist.metadata_dir, dist.site_packages, lock, target, _entry_state(lock, pkg),
                      FileState(version=dist.version),
                      f"{dist.name} {dist.version} is installed; {name} pins {pkg.version}")
    have, how = _installed_source(dist)
    want = _LOCK_CLASS.get(pkg.source)
    if want is not None and have != want:
        where = f" {pkg.location}" if pkg.location else ""
        return _check(dist, dist.metadata_dir, dist.site_packages, lock, target, _entry_state(lock, pkg),
                      FileState(version=dist.version),
                      f"{dist.name} {dist.version} was installed from {how}; {name} takes it from its "
                      f"{pkg.source.value} source{where}")
    return None


def _wheel(pkg: LockedPackage, lock: Lock, tags: tuple[str, ...]) -> LockedWheel | None:
    """The digests the lock accepts for the wheel this distribution was installed from: the wheel
    whose tags the installed WHEEL file names, or (a requirements file names no files) every
    hash the lock gives."""
    if not any(f.sha256 for f in pkg.files):
        return None
    chosen = wheel_for(pkg, tags)
    if chosen is not None and chosen.sha256:
        return LockedWheel(lock.path, frozenset({chosen.sha256}), chosen.filename)
    if any(f.filename for f in pkg.files if f.sha256):
        return None  # the lock names its files, none of them this platform's wheel: a build from the sdist
    return LockedWheel(lock.path, frozenset(f.sha256 for f in pkg.files if f.sha256), None)


def _selections(locks: Sequence[str], target: Target, use_cache: bool = True, groups: Sequence[str] = ()
                ) -> tuple[list[tuple[Lock, Selection]], list[Problem]]:
    env = marker_environment(target.python_version or "3")
    out: list[tuple[Lock, Selection]] = []
    errors: list[Problem] = []
    for path in locks:
        try:
            chosen = select_remembered(path, env, use_cache, groups)
        except DriftscanError as exc:
            errors.append(Problem(path, str(exc)))
            continue
        out.append((chosen.lock, chosen))
    return out, errors


def check_locks(locks: Sequence[str], dists: Iterable[Distribution], target: Target,
                use_cache: bool = True, groups: Sequence[str] = ()) -> LockOutcome:
    """Every installed distribution against the lockfiles: one ``lock-mismatch`` per distribution
    of another version or source, per one no lock has, and per one a lock requires that is not
    installed (``groups``: the dependency groups the install took besides each lock's default
    ones); the wheel digests each lock gives for what is installed."""
    chosen, errors = _selections(locks, target, use_cache, groups)
    if not chosen:
        return LockOutcome(errors=tuple(errors))
    checks: list[FileCheck] = []
    wheels: dict[str, LockedWheel] = {}
    no_wheel: list[Provenance] = []
    notes = [Problem(lock.path, note) for lock, _ in chosen for note in lock.notes]
    installed: dict[str, Distribution] = {}
    for dist in dists:
        if dist.kind is MetadataKind.DIST_INFO:
            installed.setdefault(canonicalize_name(dist.name), dist)
    for key, dist in sorted(installed.items()):
        found = next(((lock, sel, sel.required.get(key) or sel.optional.get(key)) for lock, sel in chosen
                      if key in sel.required or key in sel.optional), None)
        if found is None:
            excluded = next(((lock, sel.excluded[key]) for lock, sel in chosen if key in sel.excluded), None)
            if excluded is not None:
                lock, why = excluded
                checks.append(_check(dist, dist.metadata_dir, dist.site_packages, lock, target,
                                     FileState(lock=lock.path, version=None), FileState(version=dist.version),
                                     f"{dist.name} {dist.version} is installed; {os.path.basename(lock.path)} leaves it "
                                     f"out of this environment ({why})"))
            elif key not in SEEDED:
                lock = chosen[0][0]
                checks.append(_check(dist, dist.metadata_dir, dist.site_packages, lock, target,
                                     FileState(lock=lock.path, version=None), FileState(version=dist.version),
                                     f"{dist.name} {dist.version} is installed; "
                                     f"{_names(l.path for l, _ in chosen)} {'has' if len(chosen) == 1 else 'have'} "
                                     "no such distribution"))
            continue
        lock, _, pkg = found
        assert pkg is not None
        mismatch = _compare(dist, pkg, lock, target)
        if mismatch is not None:
            checks.append(mismatch)
            continue
        tags = installed_tags(dist)
        wheel = _wheel(pkg, lock, tags)
        if wheel is not None:
            wheels[dist.metadata_dir] = wheel
        elif pkg.source not in _LOCAL_TREES:
            no_wheel.append(_no_wheel(dist, pkg, lock, tags))
    site = target.site_packages[0] if target.site_packages else os.sep
    for lock, sel in chosen:
        for key, pkg in sorted(sel.required.items()):
            if key in installed or pkg.source is SourceKind.VIRTUAL:
                continue
            # The path is the dist-info an install from the lock would write: one drift per package.
            info = f"{key.replace('-', '_')}-{_path_version(pkg.version)}.dist-info"
            checks.append(_check(None, os.path.join(site, info), site, lock, target, _entry_state(lock, pkg),
                                 FileState(version=None),
                                 f"{os.path.basename(lock.path)} requires {pkg.name} {pkg.version or ''} here; it is "
                                 f"not installed in {target.venv or site}".replace("  ", " ")))
    return LockOutcome(tuple(checks), wheels, tuple(notes), tuple(errors), tuple(no_wheel))


def _path_version(version: str | None) -> str:
    """The version as a dist-info name spells it, when it is a PEP 440 version; the lock's text is
    never put into a path as it is (a ``../`` there would name a path elsewhere)."""
    try:
        return str(Version(version)) if version else "unknown"
    except InvalidVersion:
        return "unknown"


def _no_wheel(dist: Distribution, pkg: LockedPackage, lock: Lock, tags: tuple[str, ...]) -> Provenance:
    """Why a distribution the lock pins has no wheel digest to prove its RECORD by."""
    name = os.path.basename(lock.path)
    if not any(f.sha256 for f in pkg.files):
        why = (f"{name} gives no hash for {pkg.name} {pkg.version or ''} (its {pkg.source.value} source)"
               .replace("  ", " "))
    else:
        why = (f"{name} names no wheel of {pkg.name} for the tags this one was installed with "
               f"({', '.join(tags) or 'no WHEEL file'}): built from the sdist, whose RECORD "
               "no lock vouches for")
    return Provenance(dist.name, dist.version, dist.metadata_dir, lock.path, None, None, ProvenanceSource.NONE,
                      False, why, None, (), 0)


def _names(paths: Iterable[str]) -> str:
    return ", ".join(os.path.basename(p) for p in paths)


def _evidence(change: RowChange, prov: Provenance) -> str:
    wheel = prov.wheel or "its wheel"
    by = f"the wheel {os.path.basename(prov.lock)} names by sha256" if prov.lock else \
        "the wheel direct_url.json names by sha256"
    state = change.file_state
    if change.kind is RowChangeKind.CHANGED:
        head = f"the installed RECORD row of {change.path} is not the row of {wheel} ({by})"
        tail = {RowFileState.MATCHES_INSTALLED_ROW: "and the file matches the installed row: the file and its record "
                                                 "were both changed",
                RowFileState.MATCHES_WHEEL: "while the file is still the wheel's: the record alone was changed",
                RowFileState.NEITHER: "and the file matches neither row: changed since its record was rewritten",
                RowFileState.MISSING: "and the file is gone"}.get(state, "")
    elif change.kind is RowChangeKind.ADDED:
        head = f"a RECORD row for {change.path} that {wheel} ({by}) does not have"
        tail = {RowFileState.MATCHES_INSTALLED_ROW: "and the file matches it: a file added with a row written for it",
                RowFileState.MISSING: "and the file is not there"}.get(state, "and the file does not match it")
    else:
        head = f"{wheel} ({by}) has a RECORD row for {change.path} that the installed RECORD lacks"
        tail = {RowFileState.MISSING: "and the file is gone: deleted, and its row with it",
                RowFileState.MATCHES_WHEEL: "while the file is still the wheel's, now listed by no RECORD",
                RowFileState.NEITHER: "and the file differs from the wheel's, listed by no RECORD"}.get(state, "")
    return f"{head}, {tail}" if tail else head


def rewritten_checks(provenance: Sequence[Provenance], dists: Mapping[str, Distribution]) -> list[FileCheck]:
    """One ``record-rewritten`` check per row a verified wheel's own RECORD does not have as installed."""
    out: list[FileCheck] = []
    for prov in provenance:
        dist = dists.get(prov.metadata_dir)
        if dist is None or not prov.verified:
            continue
        for change in prov.rows:
            path = os.path.normpath(os.path.join(dist.site_packages, *change.path.split("/")))
            expected = FileState(wheel=prov.wheel or "", wheel_sha256=prov.wheel_sha256 or "")
            if change.wheel_hash:
                expected["row"] = change.wheel_hash
            actual = FileState(row_change=change.kind.value)
            if change.installed_hash:
                actual["row"] = change.installed_hash
            if change.file_state is RowFileState.MISSING:
                actual["type"] = "missing"
            else:
                try:
                    links = os.lstat(path).st_nlink
                except OSError:
                    links = 1
                if links > 1:  # shared with uv's cache: a uv reinstall may link the edit back
                    actual["nlink"] = links
            out.append(FileCheck(DriftKind.RECORD_REWRITTEN, path, dist.site_packages, dist, expected, actual,
                                 _evidence(change, prov)))
    return out


@dataclass(frozen=True)
class Checked:
    """What the lockfiles and the wheels proven by digest add to an audit."""

    checks: tuple[FileCheck, ...]  # the audit's checks, rows rewritten against a wheel replacing what RECORD said
    provenance: tuple[Provenance, ...]
    notes: tuple[Problem, ...]
    errors: tuple[Problem, ...]


class _Loader:
    """A warm audit's light distributions made whole as they are needed: direct_url.json for each
    (where it came from: one small file), the RECORD rows only for those provenance must compare."""

    def __init__(self, target: Target, uv_cache: str | None, cache: DigestCache | None) -> None:
        self._containment = audit_containment(target, uv_cache)[0]
        self._cache = cache
        self._full: dict[str, Distribution] = {}

    def sourced(self, dist: Distribution) -> Distribution:
        if dist.entries or dist.kind is not MetadataKind.DIST_INFO:
            return dist
        return with_direct_url(dist, self._containment)

    def __call__(self, dist: Distribution) -> Distribution:
        if dist.entries or dist.kind is not MetadataKind.DIST_INFO:
            return dist
        known = self._full.get(dist.metadata_dir)
        if known is None:
            # what cannot be read of it the audit has said already; provenance then says it has no rows
            full = read_distribution(dist.metadata_dir, dist.site_packages, self._containment, self._cache)[0]
            known = self._full[dist.metadata_dir] = full if full is not None else dist
        return known


def check(checks: Sequence[FileCheck], dists: Sequence[Distribution], target: Target, locks: Sequence[str],
          options: PristineOptions, cache: DigestCache | None, uv_cache: str | None,
          lock_groups: Sequence[str] = ()) -> Checked:
    """The lock mismatches, then each wheel a lock or direct_url.json names by digest compared row by
    row: a file whose row differs becomes ``record-rewritten`` (whatever RECORD alone said of it)."""
    load = _Loader(target, uv_cache, cache)
    sourced = [load.sourced(d) for d in dists]
    persistent = bool(cache is not None and cache.persistent)
    outcome = check_locks(locks, sourced, target, persistent, lock_groups) if locks else LockOutcome()
    expected = {md: Expected(min(w.digests), w.lock, w.filename, also=w.digests) for md, w in outcome.wheels.items()}
    provenance = (*check_provenance(sourced, expected, options, load, persistent), *outcome.no_wheel)
    # the rows of a distribution with rewritten rows are read: its files' originals are looked up by them
    differ = {p.metadata_dir for p in provenance if p.rows}
    whole = {d.metadata_dir: load(d) if d.metadata_dir in differ else d for d in sourced}
    rewritten = annotate_uv_cache(rewritten_checks(provenance, whole), uv_cache or default_uv_cache())
    replaced = {c.path for c in rewritten}
    kept = [c for c in checks if c.path not in replaced]
    return Checked((*kept, *rewritten, *outcome.checks), tuple(provenance), outcome.notes,
                   outcome.errors)

"""The clean index: when a full audit finds an environment clean, what it would take to prove it
still is, without parsing a RECORD or listing a directory.

Three kinds of signature (size, mtime_ns, ctime_ns, inode, device), each taken when the audit
looked, and only if older than the racy window:

- every hashed file, as the stat cache saw it when its content matched its RECORD: an edit
  changes its mtime or ctime (an ``os.utime`` restore still moves ctime);
- every RECORD (what the rows promise), read through the parse cache's signature;
- every directory the unowned-file walk listed, taken before listing it: a file added,
  removed, renamed or replaced changes its directory's mtime (POSIX requires it of ``open``
  with ``O_CREAT``, ``unlink``, ``rename``, ``mkdir``). git's untracked cache rests on the same
  rule. Content edits of presence-only files (bytecode, hashless rows) are not drift anyway.

A warm audit compares them all, one ``lstat`` each; if every one matches it reports what the
last audit reported, otherwise it runs the full audit. Only an error-free audit of dist-info
distributions with no editable install writes an index: egg-info lists and editable source trees
(git state) always take the full path. ``--no-cache`` never uses it.

Drift is carried too (a venv with a few drifted files re-audits as fast as a clean
one), when it is of the plain kinds whose every input the index can sign: a RECORD-hashed file
modified (its own signature, taken after the audit and older than the racy window, whose size
and mtime are the ones the check reports), a RECORD row missing (its directory's signature), a
file no RECORD owns added (its signature). The stored checks are those of the RECORD pass and
the walk as verify made them; what depends on the world outside the environment is redone on
every audit: the uv-cache and app-data annotations here, and (in the later stages, as for any
audit) the findings, the dumps in /tmp and the originals. A distribution a check names is read
again in full (its RECORD through the parse cache), so later stages see the same objects as
after a full audit; the paths the RECORDs own are stored for the dump search, split on first use.
Shared paths, symlinks, type changes and orphaned bytecode always take the full path.
"""

from __future__ import annotations

from dataclasses import replace

import os
import stat
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

import xxhash

from ...caches.racy import settled
from ...caches.statcache import SIGNATURE, CleanIndex, DigestCache, signature, tag
from ...formats.record import distribution_digest
from ...core.values import (Area, Distribution, DriftKind, FileCheck, FileState, MetadataKind, Problem, RecordRows, Target,
                       TargetKind, Unverifiable, Verification)
from ...fs.containment import Containment
from ...fs.helpers import Child, may_fork
from .. import files, find_distributions
from ..bytecode import may_run_instead
from ..dists import _read_dist_info, trusted_installer
from ..managers.registry import find_managed
from ..ownership import Row, build_ownership, entry_path
from ..roots import root_of
from ..target import audit_containment
from ..uv.links import annotate_app_data, annotate_uv_cache

VERSION = 5  # 4: each distribution's shipped_rows_digest; 5: none for an editable install
SHARED = 0xFFFF
RECHECK_MAX = 64  # changed files re-checked against their rows; more: the full audit
_CARRIED = {DriftKind.MODIFIED, DriftKind.MISSING, DriftKind.ADDED}
_DEFAULT_CHECK = FileCheck(DriftKind.ADDED, "", "")
_CHECK_FIELDS = ("kind", "path", "root", "distribution", "expected", "actual", "evidence")
# A carried check as the index stores it: kind, path, root, metadata directory, expected, actual, evidence.
_Stored = tuple[str, str, str, "str | None", FileState, FileState, str]
# Stored checks as read back from the index: data, each value's type checked where a check is rebuilt.
_Loaded = list[Any]


class OwnedPaths:
    """The paths the RECORDs own, as ``Verification.referenced`` holds them, read only if
    something asks (the dump search does): from the list written beside the index, or, if that
    is not the one the index names, from the RECORDs themselves (what a full audit computes)."""

    def __init__(self, load: Callable[[], bytes | None], rebuild: Callable[[], Iterable[str]]) -> None:
        self._load, self._rebuild = load, rebuild
        self._set: frozenset[str] | None = None

    def _paths(self) -> frozenset[str]:
        if self._set is None:
            joined = self._load()
            if joined is not None:
                self._set = frozenset(os.fsdecode(p) for p in joined.split(b"\0")) if joined else frozenset()
            else:
                self._set = frozenset(self._rebuild())
        return self._set

    def __contains__(self, path: object) -> bool:
        return path in self._paths()

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths())

    def __len__(self) -> int:
        return len(self._paths())


def owned_list(verification: Verification) -> bytes:
    return b"\0".join(os.fsencode(p) for p in verification.referenced)


def _roots(target: Target) -> list[str]:
    return [*target.site_packages, *([target.bin_dir] if target.bin_dir else []), *target.extra_roots]


def _old_enough(sig: bytes, started_ns: int) -> bool:
    _, mtime, ctime, _, _ = SIGNATURE.unpack(sig)
    return settled(mtime, ctime, started_ns)


def build_index(target: Target, verification: Verification, rows: Sequence[Row], presence: list[bool],
                unseen: list[int], listed: list[tuple[str, bytes]], cache: DigestCache, started_ns: int,
                records_checks: Sequence[FileCheck] | None = None, added: Sequence[FileCheck] | None = None
                ) -> tuple[CleanIndex | None, bytes | None]:
    """The index of an audit, or None when this audit cannot vouch for a later one, and the
    NUL-joined paths the RECORDs own when the index carries drift (for ``StatCache.set_clean_index``;
    the index holds only its digest), else None.
    ``records_checks``, ``added``: the RECORD pass's checks before their annotations and the
    walk's, which ``verification.checks`` is made of (drift is carried only if they are given)."""
    if verification.errors:
        return None, None
    dists = verification.distributions
    if any(d.kind is not MetadataKind.DIST_INFO or d.editable for d in dists):
        return None, None
    stored: list[_Stored] = []
    drifted: set[str] = set()
    paths: list[str] = []
    sigs: list[bytes] = []
    if verification.checks:
        if records_checks is None or added is None \
                or len(records_checks) + len(added) != len(verification.checks):
            return None, None  # orphaned metadata, editable sources...: the full path knows them
        carried = _carry([*records_checks, *added], dict(listed), started_ns)
        if carried is None:
            return None, None
        stored, signed = carried
        drifted = {c[1] for c in stored}
        for path, sig in signed:
            paths.append(path)
            sigs.append(sig)
    signed_count = len(paths)
    known = cache.entries
    number = {d.metadata_dir: k for k, d in enumerate(dists)}
    owner = array("H")  # per hashed file: its distribution's number, SHARED for a path two RECORDs list
    first: dict[str, int] = {}
    for (dist, entry, path), flag in zip(rows, presence):
        if flag or path in drifted:
            continue
        cached = known.get(path)
        digest = entry.hash
        assert digest is not None  # a row not checked by presence alone has a hash
        expected_tag = tag(digest.algorithm, digest.digest)
        if type(cached) is not bytes or len(cached) != SIGNATURE.size + len(expected_tag) or \
                not cached.endswith(expected_tag):
            return None, None  # hashed within the racy window (or through a symlink): not vouched for
        shared = path in first
        if shared:
            owner[first[path]] = SHARED
        first[path] = len(owner)
        owner.append(SHARED if shared or len(dists) >= SHARED else number.get(dist.metadata_dir, SHARED))
        paths.append(path)
        sigs.append(cached[:SIGNATURE.size])
    for dist in dists:
        record = os.path.join(dist.metadata_dir, "RECORD")
        record_sig = cache.record_signature(record)
        if type(record_sig) is not bytes or len(record_sig) != SIGNATURE.size:
            return None, None
        paths.append(record)
        sigs.append(record_sig)
    if target.kind is TargetKind.VENV and target.venv:
        listed = [*listed, _pyvenv_cfg(target.venv)]  # what the audit knows of it (its errors) stays true
    for directory, sig in listed:
        if len(sig) != SIGNATURE.size or not _old_enough(sig, started_ns):
            return None, None
        paths.append(directory)
        sigs.append(sig)
    walked = tuple(_roots(target))
    outside = []
    for i in unseen:  # presence-only rows the walk did not list as regular files
        path = rows[i][2]
        if path in drifted:
            continue  # a missing row: its directory's signature stands for it
        if any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in walked):
            return None, None  # a symlink or an odd file inside the walked tree: the full path knows it
        outside.append(path)
    index = {
        "version": VERSION,
        "roots": walked,
        "site_packages": tuple(target.site_packages),
        "paths": paths,
        "signatures": b"".join(sigs),
        "present": outside,
        "distributions": [(d.name, d.version, d.metadata_dir, d.site_packages, d.installer, d.requested,
                           distribution_digest(d))
                          for d in dists],
        "files_checked": verification.files_checked,
        "unverifiable": [(u.distribution, u.reason) for u in verification.unverifiable],
        "notes": [(n.path, n.message) for n in verification.notes],
        "checks": stored,
        "records_checks": len(records_checks or ()),
        "signed": signed_count,
        "owners": owner.tobytes(),
    }
    if not stored:
        return index, None
    joined = owned_list(verification)
    index["owned"] = xxhash.xxh3_128_digest(joined)  # the list itself: StatCache.owned_paths
    return index, joined


def _carry(checks: list[FileCheck], listed: dict[str, bytes], started_ns: int
           ) -> tuple[list[_Stored], list[tuple[str, bytes]]] | None:
    """The checks as stored, and the signatures that vouch for them; None if one cannot be carried."""
    stored: list[_Stored] = []
    signed: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    for check in checks:
        if check.kind not in _CARRIED or check.area is not Area.PYTHON or check.path in seen \
                or any(getattr(check, f) != getattr(_DEFAULT_CHECK, f) for f in FileCheck.__dataclass_fields__
                       if f not in _CHECK_FIELDS):
            return None  # shared paths, symlinks, annotations...: not carried
        seen.add(check.path)
        if check.kind is DriftKind.MISSING:
            if os.path.dirname(check.path) not in listed:
                return None  # no listed directory would show it coming back
        else:
            actual = check.actual
            try:
                st = os.lstat(check.path)
            except OSError:
                return None
            sig = signature(st)
            if not sig or not stat.S_ISREG(st.st_mode) or actual.get("type") != "file" \
                    or actual.get("size") != st.st_size or actual.get("mtime_ns") != st.st_mtime_ns \
                    or not _old_enough(sig, started_ns) or st.st_nlink > 1 and "nlink" not in actual:
                return None  # changed since it was checked, or too recently to be sure of what was read
            signed.append((check.path, sig))
        dist = check.distribution
        stored.append((check.kind.value, check.path, check.root, dist.metadata_dir if dist is not None else None,
                       check.expected, check.actual, check.evidence))
    return stored, signed


def _pyvenv_cfg(prefix: str) -> tuple[str, bytes]:
    path = os.path.join(prefix, "pyvenv.cfg")
    try:
        return path, signature(os.lstat(path))
    except OSError:
        return path, b""


def still_clean(target: Target, index: CleanIndex | None, cache: DigestCache | None = None, uv_cache: str | None = None) -> Verification | None:
    """The last audit's verification again, if nothing it looked at has changed; else None.
    The index is a file in the user's cache: anything malformed in it only means "no".
    ``cache``: the stat cache (the parse cache reads the distributions a carried drift names);
    ``uv_cache``: as for ``verify``."""
    try:
        return _still_clean(target, index, cache, uv_cache)
    except Exception:  # noqa: BLE001 - a damaged or foreign index: the full audit decides
        return None


def _still_clean(target: Target, index: CleanIndex | None, cache: DigestCache | None = None, uv_cache: str | None = None) -> Verification | None:
    if not isinstance(index, dict) or index.get("version") != VERSION \
            or tuple(index.get("roots", ())) != tuple(_roots(target)) \
            or tuple(index.get("site_packages", ())) != tuple(target.site_packages):
        return None
    try:
        paths, sigs = index["paths"], index["signatures"]
        if type(paths) is not list or type(sigs) is not bytes:
            return None
        if len(sigs) != SIGNATURE.size * len(paths):
            return None
        changed = _changed(paths, sigs)
        if changed is None:
            return None
        for path in index["present"]:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return None
        # the rows are not read again: the report's record_digest is the one they had
        dists = tuple(Distribution(name=n, version=v, metadata_dir=m, site_packages=s, installer=i, requested=r,
                                   record_digest=g if type(g) is str else None)
                      for n, v, m, s, i, r, g in index["distributions"])
        unverifiable = tuple(Unverifiable(d, r) for d, r in index["unverifiable"])
        notes = tuple(Problem(p, m) for p, m in index["notes"])
        if not all(type(x) is str for d in dists for x in (d.name, d.version, d.metadata_dir, d.site_packages)) \
                or not all(type(d.installer) in (str, type(None)) and type(d.requested) is bool for d in dists) \
                or not all(type(u.distribution) is str and type(u.reason) is str for u in unverifiable) \
                or not all(type(n.path) is str and type(n.message) is str for n in notes):
            return None  # what the report is built from must be what a clean audit stored
        checks: tuple[FileCheck, ...] = ()
        referenced: frozenset[str] = frozenset()
        split = int(index["records_checks"])
        stored = list(index["checks"])
        records, added = stored[:split], stored[split:]
        if changed:
            if unverifiable:
                return None  # what makes a distribution unverifiable counts its drifts: the full audit
            rechecked = _recheck(target, dists, index, changed, records, added, uv_cache, cache)
            if rechecked is None:
                return None
            records, added = rechecked
        if records or added:
            carried = _carried_checks(target, dists, records, added, cache, uv_cache)
            if carried is None:
                return None
            dists, checks = carried
            assert cache is not None  # nothing is carried without it
            digest = index.get("owned")
            if digest is not None and type(digest) is not bytes:
                return None
            # A set to its readers, loaded only if one asks: not an AbstractSet (whose equality would load it).
            referenced = OwnedPaths(lambda: cache.owned_paths(digest) if digest else None,  # type: ignore[assignment]
                                    lambda: _owned_by_records(target, uv_cache, cache))
        return Verification(target, dists, checks, int(index["files_checked"]), unverifiable, (),
                            referenced=referenced, notes=notes)
    except (OSError, KeyError, TypeError, ValueError, struct.error):
        return None  # a file gone, an index from elsewhere: the full audit decides


def _full_distribution(light: Distribution, containment: Containment, cache: DigestCache | None
                       ) -> Distribution | None:
    """The distribution read as a full audit reads it, if it is still the one the index names."""
    md = _read_dist_info(light.metadata_dir, light.site_packages, containment, cache)
    dist = md.distribution
    if md.problems or dist is None or (dist.name, dist.version, dist.installer, dist.requested) != \
            (light.name, light.version, light.installer, light.requested):
        return None
    # its RECORD is unchanged since the index was written (a changed RECORD is the full audit's):
    # the digest the index kept is still its rows', and is not computed again
    return replace(dist, record_digest=light.record_digest)


def _recheck(target: Target, dists: tuple[Distribution, ...], index: CleanIndex, changed: list[int],
             records: _Loaded, added: _Loaded, uv_cache: str | None, cache: DigestCache | None
             ) -> tuple[_Loaded, _Loaded] | None:
    """The stored checks with the files whose signature changed checked again, each against its
    RECORD row, as the RECORD pass would; None for anything but a regular file that is now ok
    or plainly modified, or an added file still a regular file (a directory, a RECORD, a shared
    path, a symlink, an error: the full audit)."""

    paths = index["paths"]
    signed = int(index["signed"])
    owners = array("H")
    owners.frombytes(index["owners"])
    if any(not trusted_installer(d) for d in dists):
        return None  # an unknown installer's drifts carry a count in their evidence: the full audit
    containment = audit_containment(target, uv_cache)[0]
    by_dir = {d.metadata_dir: d for d in dists}
    rows: dict[str | None, dict[str, Any]] = {}  # metadata directory → its dist, table and row numbers
    records = list(records)
    added = list(added)
    at = {c[1]: k for k, c in enumerate(records)}
    added_at = {c[1]: k for k, c in enumerate(added)}
    gone: set[str] = set()
    for k in changed:
        path = paths[k]
        if k < signed and path in added_at:
            try:
                st = os.lstat(path)
            except OSError:
                return None
            if not stat.S_ISREG(st.st_mode):
                return None
            kind, p, root, directory, expected, _, evidence = added[added_at[path]]
            added[added_at[path]] = (kind, p, root, directory, expected,
                                     {"type": "file", "size": st.st_size, "mtime_ns": st.st_mtime_ns}, evidence)
            continue
        if k < signed:
            if path not in at or records[at[path]][0] != DriftKind.MODIFIED.value:
                return None
            directory = records[at[path]][3]
        elif k - signed < len(owners):
            number = owners[k - signed]
            if number == SHARED or number >= len(dists):
                return None
            directory = dists[number].metadata_dir
        else:
            return None  # a RECORD, a directory, pyvenv.cfg
        by_path = rows.get(directory)
        if by_path is None:
            light = by_dir.get(directory)
            dist = _full_distribution(light, containment, cache) if light is not None else None
            if dist is None:
                return None
            table = RecordRows.of(dist.entries)  # path → row number: no RecordEntry made for every row
            by_path = rows[directory] = {"dist": dist, "table": table,
                                         "rows": {entry_path(dist.site_packages, p): j for j, p in enumerate(table.paths)}}
        j = by_path["rows"].get(path)
        entry = by_path["table"].entry(j) if j is not None else None
        if entry is None or entry.hash is None:
            return None
        result = files.check_entry(path, entry, False, None, links=containment)
        if result is None or result.link_target is not None:
            return None
        if result.status == files.OK:
            gone.add(path)
            continue
        if result.status != files.MODIFIED:
            return None
        if path.endswith(".py") and _pyc_may_be_stale(path):
            return None  # a pyc Python may run instead of it: the full pass decides
        check = (DriftKind.MODIFIED.value, path, root_of(target, path), directory, result.expected, result.actual,
                 result.message)
        if path in at:
            records[at[path]] = check
        else:
            at[path] = len(records)
            records.append(check)
    return [c for c in records if c[1] not in gone], added


def _pyc_may_be_stale(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return True
    return may_run_instead(path, st)


def _carried_checks(target: Target, dists: tuple[Distribution, ...], records_stored: _Loaded, added_stored: _Loaded,
                    cache: DigestCache | None, uv_cache: str | None
                    ) -> tuple[tuple[Distribution, ...], tuple[FileCheck, ...]] | None:
    """The stored checks again, with the distributions they name read in full (as a full audit
    would), and the annotations that depend on uv's cache and virtualenv's app-data redone."""
    if cache is None:
        return None
    containment, uv_cache, app_data = audit_containment(target, uv_cache)
    by_dir = {d.metadata_dir: d for d in dists}
    full: dict[str, Distribution] = {}
    for directory in {c[3] for c in (*records_stored, *added_stored) if c[3] is not None}:
        light = by_dir.get(directory)
        dist = _full_distribution(light, containment, cache) if light is not None else None
        if dist is None:
            return None
        full[directory] = dist

    def rebuilt(stored: _Loaded) -> list[FileCheck]:
        out: list[FileCheck] = []
        for kind, path, root, directory, expected, actual, evidence in stored:
            if not (type(path) is str and type(root) is str and type(expected) is dict and type(actual) is dict
                    and type(evidence) is str):
                raise ValueError("not a stored check")
            out.append(FileCheck(DriftKind(kind), path, root, full[directory] if directory is not None else None,
                                 cast(FileState, expected), cast(FileState, actual), evidence))  # as stored
        return out

    records = annotate_app_data(annotate_uv_cache(rebuilt(records_stored), uv_cache), app_data)
    dists = tuple(full.get(d.metadata_dir, d) for d in dists)
    return dists, tuple(records + rebuilt(added_stored))


def _owned_by_records(target: Target, uv_cache: str | None, cache: DigestCache | None) -> frozenset[str]:
    """What a full audit puts in ``Verification.referenced``, from the RECORDs (the parse cache)."""
    containment = audit_containment(target, uv_cache)[0]
    managed = find_managed(target, containment)
    metadirs = [md for md in find_distributions(target.site_packages, cache, containment)
                if md.path not in managed.replaced] + managed.metadirs
    return frozenset(build_ownership(metadirs, containment).owners)


def _mismatches(paths: list[str], sigs: bytes, start: int, stop: int, limit: int) -> list[int] | None:
    """The positions in [start, stop) whose signature changed; None past ``limit`` of them."""
    lstat, pack, size = os.lstat, SIGNATURE.pack, SIGNATURE.size
    offset = start * size
    out: list[int] = []
    k = start
    for path in paths[start:stop]:
        try:
            st = lstat(path)
            same = pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev) == sigs[offset:offset + size]
        except (OSError, struct.error):
            same = False
        if not same:
            out.append(k)
            if len(out) > limit:
                return None
        offset += size
        k += 1
    return out


def _changed(paths: list[str], sigs: bytes) -> list[int] | None:
    """Where a signature changed (none: the index holds); None when more than ``RECHECK_MAX``
    did. Half of them are checked by a forked child where that is safe (two system-call loops
    side by side, as for the unowned walk)."""
    limit = RECHECK_MAX
    half = len(paths) // 2
    if half < 4096 or not may_fork():
        return _mismatches(paths, sigs, 0, len(paths), limit)

    def answer(fd: int) -> None:
        theirs = _mismatches(paths, sigs, half, len(paths), limit)
        os.write(fd, b"X" if theirs is None else b"=" + b",".join(b"%d" % k for k in theirs))

    child = Child(answer)
    if not child.started:
        return _mismatches(paths, sigs, 0, len(paths), limit)
    mine = _mismatches(paths, sigs, 0, half, limit)
    reply = child.wait()
    if mine is None or not reply or not reply.startswith(b"="):
        return None  # no answer from the child: no trust
    theirs = [int(k) for k in reply[1:].split(b",")] if len(reply) > 1 else []
    if len(mine) + len(theirs) > limit or any(not half <= k < len(paths) for k in theirs):
        return None
    return mine + theirs

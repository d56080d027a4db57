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
clean audit reported, otherwise it runs the full audit. Only a clean, error-free audit of
dist-info distributions with no editable install writes an index: egg-info lists, editable
source trees (git state) and drift (whose evidence depends on the world outside the
environment: uv's cache, dumps in /tmp) always take the full path. ``--no-cache`` never uses it.
"""

from __future__ import annotations

import os
import stat
import struct

from ....cache import RACY_NS, SIGNATURE, signature, tag
from ....model import Distribution, MetadataKind, Target, TargetKind, Unverifiable, Verification
from .forked import Child, may_fork

VERSION = 1


def _roots(target: Target) -> list[str]:
    return [*target.site_packages, *([target.bin_dir] if target.bin_dir else []), *target.extra_roots]


def _old_enough(sig: bytes, started_ns: int) -> bool:
    _, mtime, ctime, _, _ = SIGNATURE.unpack(sig)
    return max(mtime, ctime) < started_ns - RACY_NS


def build_index(target: Target, verification: Verification, rows, presence: list[bool], unseen: list[int],
                listed: list[tuple[str, bytes]], cache, started_ns: int) -> dict | None:
    """The index of a clean audit, or None when this audit cannot vouch for a later one."""
    if verification.checks or verification.errors:
        return None
    dists = verification.distributions
    if any(d.kind is not MetadataKind.DIST_INFO or d.editable for d in dists):
        return None
    paths: list[str] = []
    sigs: list[bytes] = []
    known = cache.entries
    for (_, entry, path), flag in zip(rows, presence):
        if flag:
            continue
        cached = known.get(path)
        expected_tag = tag(entry.hash.algorithm, entry.hash.digest)
        if type(cached) is not bytes or len(cached) != SIGNATURE.size + len(expected_tag) or \
                not cached.endswith(expected_tag):
            return None  # hashed within the racy window (or through a symlink): not vouched for
        paths.append(path)
        sigs.append(cached[:SIGNATURE.size])
    for dist in dists:
        record = os.path.join(dist.metadata_dir, "RECORD")
        sig = cache.record_signature(record)
        if type(sig) is not bytes or len(sig) != SIGNATURE.size:
            return None
        paths.append(record)
        sigs.append(sig)
    if target.kind is TargetKind.VENV and target.venv:
        listed = [*listed, _pyvenv_cfg(target.venv)]  # what the audit knows of it (its errors) stays true
    for directory, sig in listed:
        if len(sig) != SIGNATURE.size or not _old_enough(sig, started_ns):
            return None
        paths.append(directory)
        sigs.append(sig)
    walked = tuple(_roots(target))
    outside = []
    for i in unseen:  # presence-only rows the walk did not list as regular files
        path = rows[i][2]
        if any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in walked):
            return None  # a symlink or an odd file inside the walked tree: the full path knows it
        outside.append(path)
    return {
        "version": VERSION,
        "roots": walked,
        "site_packages": tuple(target.site_packages),
        "paths": paths,
        "signatures": b"".join(sigs),
        "present": outside,
        "distributions": [(d.name, d.version, d.metadata_dir, d.site_packages, d.installer, d.requested)
                          for d in dists],
        "files_checked": verification.files_checked,
        "unverifiable": [(u.distribution, u.reason) for u in verification.unverifiable],
    }


def _pyvenv_cfg(prefix: str) -> tuple[str, bytes]:
    path = os.path.join(prefix, "pyvenv.cfg")
    try:
        return path, signature(os.lstat(path))
    except OSError:
        return path, b""


def still_clean(target: Target, index: dict | None) -> Verification | None:
    """The clean audit's verification again, if nothing it looked at has changed; else None.
    The index is a file in the user's cache: anything malformed in it only means "no"."""
    try:
        return _still_clean(target, index)
    except Exception:  # noqa: BLE001 - a damaged or foreign index: the full audit decides
        return None


def _still_clean(target: Target, index: dict | None) -> Verification | None:
    if not isinstance(index, dict) or index.get("version") != VERSION \
            or tuple(index.get("roots", ())) != tuple(_roots(target)) \
            or tuple(index.get("site_packages", ())) != tuple(target.site_packages):
        return None
    try:
        paths, sigs = index["paths"], index["signatures"]
        if type(paths) is not list or type(sigs) is not bytes:
            return None
        if len(sigs) != SIGNATURE.size * len(paths) or not _unchanged(paths, sigs):
            return None
        for path in index["present"]:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return None
        dists = tuple(Distribution(name=n, version=v, metadata_dir=m, site_packages=s, installer=i, requested=r)
                      for n, v, m, s, i, r in index["distributions"])
        unverifiable = tuple(Unverifiable(d, r) for d, r in index["unverifiable"])
        if not all(type(x) is str for d in dists for x in (d.name, d.version, d.metadata_dir, d.site_packages)) \
                or not all(type(d.installer) in (str, type(None)) and type(d.requested) is bool for d in dists) \
                or not all(type(u.distribution) is str and type(u.reason) is str for u in unverifiable):
            return None  # what the report is built from must be what a clean audit stored
        return Verification(target, dists, (), int(index["files_checked"]), unverifiable, ())
    except (OSError, KeyError, TypeError, ValueError, struct.error):
        return None  # a file gone, an index from elsewhere: the full audit decides


def _matches(paths: list[str], sigs: bytes, start: int, stop: int) -> bool:
    lstat, pack, size = os.lstat, SIGNATURE.pack, SIGNATURE.size
    offset = start * size
    try:
        for path in paths[start:stop]:
            st = lstat(path)
            if pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev) != sigs[offset:offset + size]:
                return False
            offset += size
    except (OSError, struct.error):
        return False
    return True


def _unchanged(paths: list[str], sigs: bytes) -> bool:
    """Every signature still the same: half of them checked by a forked child where that is
    safe (two system-call loops side by side, as for the unowned walk)."""
    half = len(paths) // 2
    if half < 4096 or not may_fork():
        return _matches(paths, sigs, 0, len(paths))
    def answer(fd: int) -> None:
        os.write(fd, b"1" if _matches(paths, sigs, half, len(paths)) else b"0")

    child = Child(answer)
    if not child.started:
        return _matches(paths, sigs, 0, len(paths))
    mine = _matches(paths, sigs, 0, half)
    return child.wait() == b"1" and mine  # no answer from the child: no trust

"""Verify a target: every RECORD row against the disk, then every file on disk against the RECORDs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import find_distributions
from ..fs.reader import default_jobs
from .editable import find_editable_sources
from .target import audit_containment, target_problems
from ..core.values import DriftKind, FileCheck, Problem, Target, Verification
from .fast.cleanindex import build_index
from .ownership import build_ownership
from .fast.prehash import Prehasher
from .records import presence_only, verify_records
from .sourcetree import verify_sources
from .roots import root_of
from .unowned import UnownedWalk
from .bytecode import stale_bytecode
from .managers.registry import find_managed, settle_managed
from .uv.links import annotate_app_data, annotate_uv_cache, unknown_app_data

if TYPE_CHECKING:
    from ..caches.statcache import DigestCache
    from .dists import MetadataDir


def _orphaned(target: Target, md: MetadataDir) -> FileCheck:
    try:
        content = sorted(os.listdir(md.path))
    except OSError:
        content = []
    return FileCheck(
        DriftKind.ORPHANED_METADATA,
        md.path,
        root_of(target, md.path),
        None,
        {"files": ["METADATA", "RECORD"]},
        {"type": "directory", "files": content},
        "no " + " and no ".join(md.missing) + ": installers treat the package as installed but cannot reinstall it",
    )


def verify(target: Target, jobs: int | None = None, uv_cache: str | None = None,
           stat_cache: DigestCache | None = None,
           progress: Callable[[int, int], None] | None = None, clean_index: bool = True) -> Verification:
    """``uv_cache``: where uv's cache is (default: uv's own rule), to trace hard-linked edits.
    ``stat_cache``: a ``driftscan.caches.statcache.DigestCache`` to skip re-hashing unchanged files; a clean
    result also leaves it a clean index (``still_clean`` then settles the next audit).
    ``progress(done, total)``: bytes hashed so far, called from the hashing threads."""
    started_ns = time.time_ns()
    jobs = jobs or default_jobs()
    # Nothing is read outside the environment's roots; symlinks are followed only within them or
    # into the uv cache named by driftscan's own flags and environment (--link-mode symlink venvs).
    containment, uv_cache, app_data = audit_containment(target, uv_cache)
    # Nothing cached to settle the large files (a first or a --no-cache audit): a child starts
    # hashing them now, on the core that reading the RECORDs leaves idle.
    early = Prehasher(target.site_packages, containment) \
        if jobs > 1 and not (stat_cache is not None and stat_cache.entries) else None
    walk = None
    try:
        managed = find_managed(target, containment)  # conda records, dpkg packages: they own what they list
        metadirs = [md for md in find_distributions(target.site_packages, stat_cache, containment)
                    if md.path not in managed.replaced] + managed.metadirs
        own = build_ownership(metadirs, containment)
        errors: list[Problem] = [*target_problems(target), *(p for md in metadirs for p in md.problems),
                                 *own.problems]
        orphaned = [_orphaned(target, md) for md in metadirs if md.distribution is None and md.missing]
        presence = presence_only(own.rows, own.owners)
        index_possible = clean_index and stat_cache is not None and stat_cache.persistent
        cold = not (stat_cache is not None and stat_cache.entries)  # most files will be hashed
        walk = UnownedWalk(target, own, presence, signatures=index_possible, typed=cold)  # forked
        outcome = verify_records(target, metadirs, own, jobs, stat_cache, progress=progress,
                                 presence=presence, walk=walk, early=early, containment=containment)
    except BaseException:
        if walk is not None:
            walk.abandon()
        if early is not None:
            early.abandon()
        raise
    added, walk_problems = walk.unowned()
    added, app_data_notes = unknown_app_data(added, app_data)
    settled = settle_managed(outcome.checks, managed)
    dists = tuple(md.distribution for md in metadirs if md.distribution is not None)
    editables, editable_problems = find_editable_sources(dists, target.site_packages)
    sources = verify_sources(editables)
    verification = Verification(
        target=target,
        distributions=dists,
        checks=tuple(annotate_app_data(annotate_uv_cache(settled, uv_cache), app_data) + orphaned + added
                     + sources.checks) + tuple(stale_bytecode(settled, own)),
        files_checked=outcome.files_checked + sources.files_checked,
        unverifiable=tuple(outcome.unverifiable + managed.unverifiable + sources.unverifiable),
        errors=tuple(errors + managed.problems + outcome.errors + walk_problems + editable_problems
                     + sources.errors),
        referenced=own.owned_paths(),
        notes=tuple(n for md in metadirs for n in md.notes) + tuple(app_data_notes),
    )
    if index_possible and stat_cache is not None:  # (the first implies the second)
        index, owned = None, None
        if not editables and len(metadirs) == len(dists):
            index, owned = build_index(target, verification, own.rows, presence, walk.unseen_presence_rows(),
                                       walk.listed_directories(), stat_cache, started_ns, settled, added)
        stat_cache.set_clean_index(index, owned)
    return verification

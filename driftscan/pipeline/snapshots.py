"""Snapshots through the pipeline: ``snapshot`` records every file of the named roots; ``diff``
judges the files that changed since with the audit's own stages (``find_debug_code``,
classification, ``build``'s report, ``accept``), so a file gets the same verdict from both."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence

from ..caches.statcache import StatCache
from ..core.errors import TargetError
from ..core.values import Distribution, DriftKind, FileCheck, Problem, Target, Verification
from ..environment import find_distributions, resolve_target
from ..environment.ownership import build_ownership
from ..environment.target import containment_for
from ..environment.uv.cache import default_uv_cache
from ..fs.reader import default_jobs
from ..modeldir.remedies import with_remedies
from ..report.contract import Report, build_report
from ..snapshot.run import (Root, RootKind, attach_ownership, diff_root, load_snapshot, restored_drift,
                            take_snapshot)
from .classify import classify
from .options import AuditOptions, Need
from .stages import NO_PYTHON, Progress, State, accept, find_debug_code


def snapshot_roots(venv: str | None, site_packages: Sequence[str], model_dirs: Sequence[str]) -> list[Root]:
    """The roots a snapshot records: the environment named (default: the running one, unless
    only model directories are named) and each model directory."""
    roots: list[Root] = []
    if venv is not None or site_packages or not model_dirs:
        target = resolve_target(venv, tuple(site_packages))
        if target.venv:
            roots.append(Root(RootKind.VENV, target.venv))
        roots += [Root(RootKind.SITE_PACKAGES, s) for s in target.site_packages if not target.venv]
    for path in model_dirs:
        if not os.path.isdir(path):
            raise TargetError(f"{path}: not a directory")
        roots.append(Root(RootKind.MODEL_DIR, os.path.abspath(path)))
    return roots


def take(output: str, venv: str | None, site_packages: Sequence[str], model_dirs: Sequence[str], *,
         jobs: int | None = None, progress: Progress | None = None) -> list[Problem]:
    """``api.snapshot``: every file of the named roots recorded into ``output``; the files that could not be read."""
    return take_snapshot(snapshot_roots(venv, site_packages, model_dirs), output, jobs=jobs or default_jobs(),
                         progress=progress)


def _python_target(root: Root, named: Target) -> Target:
    if root.path == named.venv or root.path in named.site_packages:
        return named
    return resolve_target(root.path) if root.kind is RootKind.VENV else resolve_target(None, [root.path])


def diff_against(snapshot_path: str, asked: AuditOptions, progress: Progress | None = None,
                 inspect: bool = True) -> Report:
    """``api.diff``: drift against a snapshot through the audit's own stages (debug code,
    classification, the report, accepted drift), files judged as audit judges them."""
    started = time.perf_counter()
    named, jobs, deep, use_cache = asked.targets, asked.jobs, asked.model_dirs.deep, asked.cache.use_cache
    wanted = {os.path.abspath(p) for p in named.model_dirs}
    target = NO_PYTHON
    if named.venv is not None or named.site_packages:
        target = resolve_target(named.venv, named.site_packages)
        wanted |= {target.venv} if target.venv else set(target.site_packages)
    with tempfile.TemporaryDirectory(prefix="driftscan-diff-") as work:
        roots = load_snapshot(snapshot_path, work, use_cache=use_cache)
        chosen = [(r, m, man) for r, m, man in roots if not wanted or r.path in wanted]
        if wanted - {r.path for r, _, _ in chosen}:
            missing = sorted(wanted - {r.path for r, _, _ in chosen})
            raise TargetError(f"{missing[0]}: not in the snapshot {snapshot_path}")
        results = [diff_root(r, m, man, jobs=jobs or default_jobs(), deep=deep, progress=progress, trust=use_cache)
                   for r, m, man in chosen]
    checks: list[FileCheck] = []
    dists: list[Distribution] = []
    for (root, _, _), result in zip(chosen, results):
        if root.kind is RootKind.MODEL_DIR:
            checks += with_remedies(result)
            continue
        # Files of a Python root are judged like audit's: RECORD decides package or environment scope.
        python = _python_target(root, target)
        target = python if target is NO_PYTHON else target
        containment = containment_for(python, tuple(c for c in (default_uv_cache(),) if c))
        cache = StatCache.for_target(python.venv or "\0".join(python.site_packages)) if use_cache else None
        # RECORD rows only to attribute drift: an unchanged root needs the names and versions alone.
        metadirs = list(find_distributions(python.site_packages, cache=cache, containment=containment,
                                           records=bool(result.checks)))
        if cache is not None:
            cache.save()  # only the RECORD parses changed: the file audit keeps them in
        dists += [md.distribution for md in metadirs if md.distribution is not None]
        if result.checks:
            checks += attach_ownership(result.checks, build_ownership(metadirs, containment), python.site_packages)
    verification = Verification(
        target=target, distributions=tuple(dists), checks=tuple(checks),
        files_checked=sum(r.files_checked for r in results),
        unverifiable=tuple(u for r in results for u in r.unverifiable),
        errors=tuple(e for r in results for e in r.errors))
    skipped: list[Problem] = []
    if inspect:  # the same stage as audit's, so one file gets the same findings from both
        inspected = find_debug_code(State(asked, Need.CHECKS, started, target, (), verification))
        verification, skipped = inspected.verification, list(inspected.skipped)
    drifts = [restored_drift(check) if check.kind is DriftKind.RESTORED else classify(check, target)
              for check in verification.checks]

    report = build_report(verification, drifts, time.perf_counter() - started,
                          model_dirs=[r.path for r, _, _ in chosen if r.kind is RootKind.MODEL_DIR],
                          skipped=skipped, not_hashed=sum(r.large_files_unread for r in results),
                          trusted_by_signature=sum(r.trusted for r in results))
    if named.chosen_because:
        report.target.chosen_because = named.chosen_because
    accepted = accept(State(asked, Need.REPORT, started, target, (), verification, report=report)).report
    assert accepted is not None  # accept keeps the report it was given
    return accepted

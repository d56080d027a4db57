"""Verify a model directory offline: what was edited since it was downloaded (or committed, or snapshotted).

``verify_model_dir`` recognises the directory (modeldir.layout), checks every file against its
provenance (``provenance/``: localdir, hubcache, gitclone, manifestdir, through ``check``), then runs the
provenance-free consistency checks (consistency). It reads only small files unless
``deep`` is set, never writes, and raises only TargetError (no such directory).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from .hfcache import containment_root, default_hf_cache, find_cache_repos
from ..core.values import DriftKind, FileCheck, LayoutKind, Problem, Unverifiable
from .consistency import consistency_checks
from .check import SMALL_FILE_LIMIT, Context, KindResult
from .hashing import Meter
from .layout import ModelDirLayout
from .provenance import PROVENANCES, detect_layout, provenance_of
from .provenance.manifestdir import audit_manifest

__all__ = ["SMALL_FILE_LIMIT", "ModelDirResult", "verify_model_dir"]

NO_PROVENANCE = ", ".join(f"no {p.ABSENT}" for p in PROVENANCES if p.ABSENT)


@dataclass(frozen=True)
class ModelDirResult:
    path: str  # the directory the user named
    root: str  # what relpaths are relative to (the model dir, or the snapshot dir for a cache repo)
    kind: LayoutKind
    checks: tuple[FileCheck, ...]  # drifts only, area="model", sorted by path then kind
    files_checked: int
    unverifiable: tuple[Unverifiable, ...]
    errors: tuple[Problem, ...]
    bytes_hashed: int  # content fed to a hash: proves a default audit read nothing large
    bytes_read: int = 0  # bytes_hashed plus safetensors headers, weight-map indexes, original blobs
    large_files_unread: int = 0  # large files checked by presence, size and mtime only
    commit: str | None = None  # the revision audited (cache snapshot, git commit, local-dir download)
    deep: bool = False


def _unknown(layout: ModelDirLayout) -> KindResult:
    reason = NO_PROVENANCE
    if find_cache_repos(layout.path):
        reason += "; it looks like a Hugging Face cache: audit its repositories (--hf-cache)"
    return KindResult(unverifiable=[Unverifiable(layout.path, reason)])


def _audit_kind(ctx: Context, layout: ModelDirLayout, revision: str | None) -> tuple[LayoutKind, KindResult]:
    provenance = provenance_of(layout.kind)
    if provenance is None:
        return layout.kind, _unknown(layout)
    result = provenance.audit(ctx, layout, revision)
    if result is not None:
        return layout.kind, result
    if layout.manifest is None or layout.kind is LayoutKind.MANIFEST:  # its records cover nothing here
        return LayoutKind.UNKNOWN, _unknown(layout)
    return LayoutKind.MANIFEST, audit_manifest(ctx, layout, revision)  # the in-tree manifest instead


def merge_checks(checks: list[FileCheck], extra: list[FileCheck]) -> list[FileCheck]:
    """One check per path; a CORRUPT header outranks a STALE mtime for the same file."""
    by_path = {c.path: c for c in checks}
    for check in extra:
        prior = by_path.get(check.path)
        if prior is None or prior.kind is DriftKind.STALE_METADATA:
            by_path[check.path] = check
    return list(by_path.values())


def verify_model_dir(path: str, *, deep: bool = False, revision: str | None = None, manifest: str | None = None,
                     jobs: int = 2, small_file_limit: int = SMALL_FILE_LIMIT,
                     progress: Callable[[int, int], None] | None = None,
                     hf_cache: str | None = None) -> ModelDirResult:
    """Audit one model directory.

    ``revision``: for a cache repository, the ref or commit whose snapshot to audit (default
    refs/main); for a git clone, what to compare against (default HEAD). ``manifest``: compare
    against this driftscan manifest instead of the directory's own provenance. ``hf_cache``: the
    hub cache searched for original blobs of drifted local-dir files (default: huggingface_hub's
    own location; "" disables). ``progress(done, total)`` is called from hashing threads, one call
    at a time. Raises TargetError only when ``path`` is not an existing directory.
    """
    layout = detect_layout(path, revision=revision, manifest=manifest)
    meter = Meter(progress)
    cache = default_hf_cache() if hf_cache is None else hf_cache
    repos = [r for r in find_cache_repos(cache) if r != layout.repo_dir] if cache else []
    contain = layout.repo_dir or containment_root(layout.root)
    ctx = Context(layout.root, deep, max(1, small_file_limit), max(1, jobs), meter, repos, contain=contain)
    try:
        kind, result = _audit_kind(ctx, layout, revision)
        checks, problems = list(result.checks), list(result.problems)
    except Exception as exc:  # the audit of other directories and the report must go on
        kind, result = layout.kind, KindResult()
        checks, problems = [], [Problem(layout.root, f"model directory audit failed: {type(exc).__name__}: {exc}")]
    try:
        if os.path.isdir(ctx.root) and not (kind is LayoutKind.HF_CACHE_REPO and result.unverifiable):
            flagged = {c.path: c for c in checks}
            extra, more = consistency_checks(ctx, flagged)
            checks, problems = merge_checks(checks, extra), problems + more
    except Exception as exc:  # the provenance checks above still stand
        problems.append(Problem(layout.root, f"consistency checks failed: {type(exc).__name__}: {exc}"))
    checks.sort(key=lambda c: (c.path, c.kind.value))
    problems.sort(key=lambda p: (p.path, p.message))
    return ModelDirResult(
        path=layout.path, root=layout.root, kind=kind, checks=tuple(checks), files_checked=result.files_checked,
        unverifiable=tuple(result.unverifiable), errors=tuple(problems), bytes_hashed=meter.hashed,
        bytes_read=meter.read, large_files_unread=meter.unread_large, commit=result.commit, deep=deep)

"""The way back for a drifted model-directory file, by the kind of provenance that caught it."""

from __future__ import annotations

import os
import shlex
from dataclasses import replace

from ...discover.hfcache import repo_id_of
from ...model import DriftKind, FileCheck, LayoutKind
from ...paths import relpath


def _remedy(kind: LayoutKind, root: str, repo_dir: str | None, commit: str | None, check: FileCheck) -> str:
    rel = relpath(check.path, check.root)
    q_rel, q_root, q_path = shlex.quote(rel), shlex.quote(root), shlex.quote(check.path)
    if check.kind is DriftKind.ADDED:
        return f"no download or reinstall removes it; if it is not needed: rm {q_path}"
    if check.kind is DriftKind.STALE_METADATA:
        return "its content was not read (large file newer than its download metadata): rerun with --deep to hash it"
    rev = f" --revision {shlex.quote(commit)}" if commit else ""  # the commit comes from the tree
    if kind is LayoutKind.GIT:
        return f"git -C {q_root} checkout HEAD -- {q_rel}  (LFS weights: git -C {q_root} lfs pull --include {q_rel})"
    if kind is LayoutKind.HF_CACHE_REPO and repo_dir:
        repo = shlex.quote(repo_id_of(repo_dir))
        etag = check.expected.get("blob")
        blob = os.path.join(repo_dir, "blobs", etag) if etag and check.kind is DriftKind.MODIFIED else None
        first = f"rm {shlex.quote(blob)} {q_path} && " if blob else f"rm {q_path} && "
        return f"{first}hf download {repo} {q_rel}{rev}"
    if kind is LayoutKind.HF_LOCAL_DIR:
        return f"hf download <repo-id> {q_rel}{rev} --local-dir {q_root} --force-download"
    if kind is LayoutKind.MANIFEST:
        return "restore it from a copy: the manifest holds its hash (and the text of small configs: see json_changes/diff)"
    return "restore it from its source"


def with_remedies(result) -> tuple[FileCheck, ...]:
    """``result``: a ModelDirResult. Fills each check's ``remedy_hint``."""
    repo_dir = None
    if result.kind is LayoutKind.HF_CACHE_REPO:
        parent = result.root
        while parent and os.path.basename(parent) and not os.path.isdir(os.path.join(parent, "blobs")):
            parent = os.path.dirname(parent)
        repo_dir = parent or None
    return tuple(replace(c, remedy_hint=c.remedy_hint or _remedy(result.kind, result.root, repo_dir, result.commit, c))
                 for c in result.checks)

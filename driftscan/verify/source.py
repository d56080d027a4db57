"""Verify editable installs' source trees with git: uncommitted edits, untracked files, moved HEAD.

git is asked with ``GIT_OPTIONAL_LOCKS=0`` so that ``status`` does not refresh the index:
an audit never writes into the tree it audits.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from ..discover.editable import EditableSource
from ..model import DriftKind, FileCheck, Problem, Unverifiable

_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
DIFF_LINES = 400


@dataclass(frozen=True)
class SourceOutcome:
    checks: list[FileCheck]
    files_checked: int
    unverifiable: list[Unverifiable]
    errors: list[Problem]


def _git():
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")  # a missing git is reported, not raised at import
    import git

    return git


def _status(repo, spec: str) -> list[tuple[str, str]]:
    """``git status --porcelain -z``: (XY, path) pairs; renames give the new path."""
    out = repo.git.status("--porcelain=v1", "-z", "--untracked-files=all", "--", spec, env=_GIT_ENV)
    items = out.split("\0")
    pairs, i = [], 0
    while i < len(items):
        item = items[i]
        i += 1
        if len(item) < 4:
            continue
        code, path = item[:2], item[3:]
        if "R" in code or "C" in code:
            i += 1  # the original path follows
        pairs.append((code, path))
    return pairs


def _is_build_artifact(rel: str) -> bool:
    """Untracked files that installing or importing the project writes: not edits."""
    parts = rel.split("/")
    return rel.endswith((".pyc", ".pyo")) or any(p == "__pycache__" or p.endswith(".egg-info") for p in parts)


def _kind(code: str) -> DriftKind:
    if code == "??" or code[0] == "A":
        return DriftKind.ADDED
    if "D" in code:
        return DriftKind.MISSING
    return DriftKind.MODIFIED


def commit_at(repo, when: float | None) -> str | None:
    """The commit HEAD pointed to at ``when``, from HEAD's reflog (None if the log says nothing)."""
    if when is None:
        return None
    try:
        entries = repo.head.log()
    except (ValueError, OSError):
        return None
    commit = None
    for entry in entries:
        if entry.time[0] <= when:
            commit = entry.newhexsha
    return commit


def _diff(repo, rel: str) -> str | None:
    try:
        text = repo.git.diff("HEAD", "--", rel, env=_GIT_ENV)
    except Exception:  # noqa: BLE001 - a diff is a courtesy; binary or odd files simply get none
        return None
    lines = text.splitlines()
    if len(lines) > DIFF_LINES:
        lines = lines[:DIFF_LINES] + [f"... ({len(lines) - DIFF_LINES} more lines)"]
    return "\n".join(lines) or None


def verify_source(src: EditableSource) -> SourceOutcome:
    label = f"{src.name} {src.version} (editable)"
    if not os.path.isdir(src.project_dir):
        check = FileCheck(DriftKind.MISSING, src.project_dir, os.path.dirname(src.project_dir), src.distribution,
                          {"type": "directory"}, {}, "the editable install's source tree is gone: importing it fails",
                          area="source", remedy_hint="reinstall the project from wherever its source now lives")
        return SourceOutcome([check], 0, [], [])
    try:
        git = _git()
        repo = git.Repo(src.project_dir, search_parent_directories=True)
    except ImportError:
        return SourceOutcome([], 0, [Unverifiable(label, "git is not installed: the source tree cannot be verified")],
                             [])
    except Exception:  # noqa: BLE001 - InvalidGitRepositoryError, NoSuchPathError
        return SourceOutcome([], 0, [Unverifiable(
            label, f"source tree {src.project_dir} is not a git repository: its files cannot be verified")], [])
    root = repo.working_tree_dir
    spec = os.path.relpath(src.project_dir, root)
    checks: list[FileCheck] = []
    try:
        tracked = [p for p in repo.git.ls_files("-z", "--", spec, env=_GIT_ENV).split("\0") if p]
        status = _status(repo, spec)
        head = repo.head.commit.hexsha
    except Exception as exc:  # noqa: BLE001 - git failed: say what it said, go on with the rest
        return SourceOutcome([], 0, [], [Problem(src.project_dir, f"git failed: {str(exc).strip()[:300]}")])
    q = shlex.quote(root)
    for code, rel in status:
        if code == "??" and _is_build_artifact(rel):
            continue
        kind = _kind(code)
        path = os.path.join(root, rel)
        if kind is DriftKind.ADDED:
            hint, evidence = f"git -C {q} clean -f -- {shlex.quote(rel)}", "not tracked by git"
        else:
            hint = f"git -C {q} checkout HEAD -- {shlex.quote(rel)}"
            evidence = "deleted since the last commit" if kind is DriftKind.MISSING else "uncommitted change"
        checks.append(FileCheck(
            kind, path, root, src.distribution, {"git": f"HEAD {head[:12]}"}, {"git_status": code.strip()},
            evidence, area="source", remedy_hint=hint,
            diff=_diff(repo, rel) if kind is DriftKind.MODIFIED else None))
    recorded = src.recorded_commit or commit_at(repo, src.installed_at)
    if recorded and recorded != head:
        how = "recorded in direct_url.json" if src.recorded_commit else "HEAD at install time, from git's reflog"
        checks.append(FileCheck(
            DriftKind.HEAD_MOVED, root, root, src.distribution, {"commit": recorded}, {"commit": head},
            f"the repository was at {recorded[:12]} ({how}) and is now at {head[:12]}", area="source",
            remedy_hint=f"git -C {q} log --oneline {recorded[:12]}..{head[:12]} to review; "
                        f"git -C {q} checkout {recorded[:12]} to go back"))
    return SourceOutcome(checks, len(tracked), [], [])


def verify_sources(sources: list[EditableSource]) -> SourceOutcome:
    checks, unverifiable, errors, count = [], [], [], 0
    for src in sources:
        outcome = verify_source(src)
        checks += outcome.checks
        unverifiable += outcome.unverifiable
        errors += outcome.errors
        count += outcome.files_checked
    return SourceOutcome(checks, count, unverifiable, errors)

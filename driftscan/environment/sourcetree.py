"""Verify editable installs' source trees with git: uncommitted edits, untracked files, moved HEAD.

git runs through ``driftscan.git`` only: a private configuration the repository cannot extend (no
fsmonitor, filters, textconv, external diff, hooks or pager of its own), optional locks off (an
audit never writes into the tree it audits, not even the index), and a timeout on every call.
The source tree of an editable install is outside the venv by nature; it is read only when it
and its repository belong to the owner of the site-packages directory or to the auditing user.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .editable import EditableSource
from ..fs.reader import open_regular, read_pieces
from ..core.values import Area, DriftKind, FileCheck, Problem, Unverifiable
from ..formats.lfs import LFS_POINTER_MAX, parse_lfs_pointer

if TYPE_CHECKING:  # imported where git runs: an audit without editable installs never needs it
    from .. import git as gitaccess

DIFF_LINES = 400


@dataclass(frozen=True)
class SourceOutcome:
    checks: list[FileCheck]
    files_checked: int
    unverifiable: list[Unverifiable]
    errors: list[Problem]


def _status(repo: gitaccess.Repository, spec: str, untracked: bool = True) -> list[tuple[str, str]]:
    """``git status --porcelain -z``: (XY, path) pairs; renames give the new path."""
    out = repo.run("status", "--porcelain=v1", "-z", f"--untracked-files={'all' if untracked else 'no'}",
                   "--ignore-submodules=all", "--", spec, what="git status")
    items = os.fsdecode(out).split("\0")
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


def _sha256(path: str) -> tuple[str, int] | None:
    try:
        fd, st = open_regular(path, follow=False)
    except OSError:
        return None
    try:
        digest = hashlib.sha256()
        for piece in read_pieces(fd, st.st_size):
            digest.update(piece)
        return digest.hexdigest(), st.st_size
    except OSError:
        return None
    finally:
        os.close(fd)


def _lfs_unchanged(repo: gitaccess.Repository, head: str, status: list[tuple[str, str]]) -> set[str]:
    """Files git calls modified only because git-lfs's clean filter is never run: HEAD holds an
    LFS pointer and the file holds exactly the content it names (what git-lfs would have said)."""
    candidates = [rel for code, rel in status if code == " M"]
    if not candidates or not os.path.isdir(os.path.join(repo.git_dir, "lfs")):  # git-lfs never fetched here
        return set()
    pointers = {}
    for record in repo.records("ls-tree", "-z", "-l", head, "--", *candidates, what="git ls-tree"):
        meta, _, rel = record.partition("\t")
        parts = meta.split()
        if len(parts) == 4 and parts[1] == "blob" and parts[3].isdigit() and int(parts[3]) <= LFS_POINTER_MAX:
            pointers[rel] = parts[2]
    if not pointers:
        return set()
    blobs = repo.blobs(pointers.values())
    same = set()
    for rel, sha in pointers.items():
        pointer = parse_lfs_pointer(blobs.get(sha, b""))
        if pointer is not None:
            path = os.path.join(repo.top, rel)
            try:
                if os.lstat(path).st_size != pointer[1]:
                    continue  # a different size: modified, without reading it
            except OSError:
                continue
            if _sha256(path) == pointer:
                same.add(rel)
    return same


def commit_at(repo: gitaccess.Repository, when: float | None) -> str | None:
    """The commit HEAD pointed to at ``when``, from HEAD's reflog (None if the log says nothing)."""
    if when is None:
        return None
    commit = None
    for entry in repo.reflog():
        if entry.time <= when:
            commit = entry.new
    return commit


def _diff(repo: gitaccess.Repository, rel: str) -> str | None:
    from .. import git as gitaccess  # imported already by _open, which made ``repo``: only the name here

    try:
        text = repo.run("diff", "--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all", "HEAD",
                        "--", rel, what="git diff").decode("utf-8", "replace")
    except gitaccess.GitFailed:  # a diff is a courtesy; a failing or hanging one simply gives none
        return None
    lines = text.splitlines()
    if len(lines) > DIFF_LINES:
        lines = lines[:DIFF_LINES] + [f"... ({len(lines) - DIFF_LINES} more lines)"]
    return "\n".join(lines) or None


def _open(src: EditableSource, label: str) -> tuple[gitaccess.Repository | None, SourceOutcome | None]:
    from .. import git as gitaccess  # ~45 ms (subprocess, shutil, tempfile): only an editable install needs it

    if gitaccess.git_executable() is None:
        return None, SourceOutcome([], 0, [Unverifiable(
            label, "git is not installed: the source tree cannot be verified")], [])
    top = gitaccess.find_repository(src.project_dir)
    if top is None:
        return None, SourceOutcome([], 0, [Unverifiable(
            label, f"source tree {src.project_dir} is not a git repository: its files cannot be verified")], [])
    site = src.distribution.site_packages if src.distribution else None
    allowed = gitaccess.uids_of(*([site] if site else []))
    try:
        owner = os.lstat(src.project_dir).st_uid
    except OSError:
        owner = None
    if owner is not None and owner not in allowed:
        why = (f"source tree {src.project_dir} is owned by uid {owner}, not by the owner of {site} or the "
               "auditing user: not read")
        # Refused, not absent: an error too, so the exit status says the audit could not check it.
        return None, SourceOutcome([], 0, [Unverifiable(label, why)], [Problem(src.project_dir, why)])
    try:
        return gitaccess.open_repository(top, allowed_uids=allowed), None
    except gitaccess.NotARepository:
        return None, SourceOutcome([], 0, [Unverifiable(
            label, f"source tree {src.project_dir} is not a git repository: its files cannot be verified")], [])
    except gitaccess.GitRefused as exc:
        why = f"source tree {src.project_dir}: {exc}"
        return None, SourceOutcome([], 0, [Unverifiable(label, why)], [Problem(src.project_dir, why)])
    except gitaccess.GitFailed as exc:
        return None, SourceOutcome([], 0, [], [Problem(src.project_dir, f"git failed: {exc}")])


def verify_source(src: EditableSource) -> SourceOutcome:
    label = f"{src.name} {src.version} (editable)"
    if not os.path.isdir(src.project_dir):
        check = FileCheck(DriftKind.MISSING, src.project_dir, os.path.dirname(src.project_dir), src.distribution,
                          {"type": "directory"}, {}, "the editable install's source tree is gone: importing it fails",
                          area=Area.SOURCE, remedy_hint="reinstall the project from wherever its source now lives")
        return SourceOutcome([check], 0, [], [])
    if not _is_python_project(src.project_dir):
        # The path comes from the tree (direct_url.json, a .pth): it must at least lead to a
        # Python project, or it could send git to report on /etc (etckeeper) or a home directory.
        return SourceOutcome([], 0, [Unverifiable(label, f"{src.project_dir} holds no pyproject.toml, setup.py or "
                                                  "setup.cfg (nor do its two parents): not a Python project's "
                                                  "source tree; not read")], [])
    repo, refused = _open(src, label)
    if repo is None:
        return refused  # type: ignore[return-value]  # _open gives an outcome whenever it gives no repository
    with repo:
        return _verify(src, repo)


PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def _is_python_project(path: str) -> bool:
    """A project file in ``path`` or its two parents (``src/`` layouts point one level down)."""
    for level in range(3):
        for name in PROJECT_FILES:
            try:
                if stat.S_ISREG(os.lstat(os.path.join(path, name)).st_mode):
                    return True
            except OSError:
                pass
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return False


def _verify(src: EditableSource, repo: gitaccess.Repository) -> SourceOutcome:
    from .. import git as gitaccess  # imported already by _open, which made ``repo``: only the name here

    root = repo.top
    spec = os.path.relpath(src.project_dir, root)
    checks: list[FileCheck] = []
    errors: list[Problem] = []
    try:
        head = repo.resolve("HEAD")
        tracked = repo.records("ls-files", "-z", "--", spec, what="git ls-files")
        try:
            status = _status(repo, spec)
        except gitaccess.GitTimeout as exc:
            # Listing untracked files reads every .gitignore: a FIFO there hangs git. The
            # tracked files can still be compared (that reads no ignore file).
            errors.append(Problem(src.project_dir, f"untracked files not listed: {exc}"))
            status = _status(repo, spec, untracked=False)
        lfs_same = _lfs_unchanged(repo, head, status)
    except gitaccess.GitFailed as exc:  # git failed: say what it said, go on with the rest
        return SourceOutcome([], 0, [], errors + [Problem(src.project_dir, f"git failed: {str(exc).strip()[:300]}")])
    q = shlex.quote(root)
    for code, rel in status:
        if (code == "??" and _is_build_artifact(rel)) or rel in lfs_same:
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
            evidence, area=Area.SOURCE, remedy_hint=hint,
            diff=_diff(repo, rel) if kind is DriftKind.MODIFIED else None))
    recorded = src.recorded_commit or commit_at(repo, src.installed_at)
    if recorded and recorded != head:
        how = "recorded in direct_url.json" if src.recorded_commit else "HEAD at install time, from git's reflog"
        checks.append(FileCheck(
            DriftKind.HEAD_MOVED, root, root, src.distribution, {"commit": recorded}, {"commit": head},
            f"the repository was at {recorded[:12]} ({how}) and is now at {head[:12]}", area=Area.SOURCE,
            remedy_hint=f"git -C {q} log --oneline {recorded[:12]}..{head[:12]} to review; "
                        f"git -C {q} checkout {recorded[:12]} to go back"))
    return SourceOutcome(checks, len(tracked), [], errors)


def verify_sources(sources: list[EditableSource]) -> SourceOutcome:
    checks, unverifiable, errors, count = [], [], [], 0
    for src in sources:
        outcome = verify_source(src)
        checks += outcome.checks
        unverifiable += outcome.unverifiable
        errors += outcome.errors
        count += outcome.files_checked
    return SourceOutcome(checks, count, unverifiable, errors)

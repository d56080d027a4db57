"""git clones of model repositories: the work tree against a commit (HEAD unless a revision is named).

git's own machinery does the cheap part: ``ls-tree`` lists what the commit holds (with blob
sizes), ``diff-index`` tells from git's stat cache which files changed since checkout without
reading them, ``ls-files --others --exclude-standard`` lists untracked files that no .gitignore
covers. Small files are hashed here (git blob sha1) so a drift comes with its JSON changes.

Git LFS: a blob that is an LFS pointer stands for the file's sha256 and size; a work-tree file
holding the real content is compared against those, not reported as "modified".

git runs through ``driftscan.git`` only (docs/git-access.md): a private configuration that the
repository cannot extend, so no filter, fsmonitor, hook or helper it names ever runs (git-lfs's
clean filter included: it would hash the whole shard and copy it into .git/lfs/objects), optional
locks off (``git status`` would otherwise refresh and rewrite .git/index), and a timeout on
every call: the audit never writes into the tree, and a FIFO in it cannot hang the audit.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Callable
from typing import Any

from ..layout import ModelDirLayout, find_git_top
from ...formats.lfs import LFS_POINTER_MAX, parse_lfs_pointer
from ...formats.manifest import is_bookkeeping
from ...core.values import Area, DriftKind, FileCheck, FileState, LayoutKind, Problem, Unverifiable
from ...fs.paths import relpath
from .interface import WayBack
from ... import git as gitaccess
from ...fs.reader import os_error, read_regular
from ..check import MODIFIED, Context, Expect, KindResult, Outcome, added_check, iso, run

ZERO = "0" * 40
GIT_CONFIG_MAX = 64 << 10  # a clone's .git/config is a few hundred bytes
_SECTION = re.compile(r'\[\s*remote\s+"([^"\\]*)"\s*\]\s*\Z')


_Git = gitaccess.Repository


def _tree(git: _Git, commit: str, pathspec: list[str]) -> dict[str, tuple[str, str, str, int | None]]:
    """path → (mode, type, sha, size) for every entry of the commit under the pathspec."""
    entries = {}
    for record in git.records("ls-tree", "-r", "-z", "-l", "--full-tree", commit, *pathspec):
        meta, _, path = record.partition("\t")
        mode, kind, sha, size = meta.split()
        entries[path] = (mode, kind, sha, int(size) if size.isdigit() else None)
    return entries


def _dirty(git: _Git, commit: str, pathspec: list[str]) -> dict[str, tuple[str, str]]:
    """path → (status letter, index sha) where git's index differs from the commit or the disk (by stat)."""
    records = git.records("diff-index", "-z", "--raw", "--no-renames", "--ignore-submodules=all", commit, *pathspec)
    out = {}
    for meta, path in zip(records[0::2], records[1::2], strict=False):  # -z: "meta\0path\0" pairs
        parts = meta.lstrip(":").split()
        out[path] = (parts[4][0], parts[3])
    return out


def audit_git(ctx: Context, layout: ModelDirLayout, revision: str | None) -> KindResult | None:
    """None when the directory holds nothing git tracks (then another kind is tried)."""
    top = layout.git_top or ctx.root
    try:
        repo = gitaccess.open_repository(top, allowed_uids=gitaccess.uids_of(ctx.root, layout.path))
    except gitaccess.NotARepository:
        return None
    except gitaccess.GitRefused as exc:
        why = str(exc)
        return KindResult(problems=[Problem(ctx.root, why)], unverifiable=[Unverifiable(layout.path, why)])
    except gitaccess.GitFailed as exc:  # an error, reported once (the exit status says "could not check")
        return KindResult(problems=[Problem(ctx.root, f"git is not available: {exc}")])
    with repo:  # removes the private GIT_DIR
        return _audit(ctx, layout, repo, revision)


def _audit(ctx: Context, layout: ModelDirLayout, git: _Git, revision: str | None) -> KindResult | None:
    top = os.path.realpath(git.top)
    prefix = os.path.relpath(os.path.realpath(ctx.root), top).replace(os.sep, "/")
    prefix = "" if prefix == "." else prefix
    pathspec = ["--", prefix] if prefix else []
    wanted = revision or "HEAD"
    problems: list[Problem] = []
    try:
        commit = git.resolve(wanted)
        tree = _tree(git, commit, pathspec)
        dirty = _dirty(git, commit, pathspec)
        try:
            untracked = git.records("ls-files", "-z", "--others", "--exclude-standard", *pathspec,
                                    what="listing untracked files")
        except gitaccess.GitTimeout as exc:  # reads every .gitignore: a FIFO there hangs git
            problems.append(Problem(ctx.root, f"untracked files not listed: {exc}"))
            untracked = []
    except gitaccess.GitFailed as exc:
        why = str(exc) if isinstance(exc, gitaccess.GitTimeout) else f"git cannot compare against {wanted}: {exc}"
        if wanted == "HEAD" and git.head is None:  # an unborn branch: nothing to compare with, not a failure
            return KindResult(unverifiable=[Unverifiable(layout.path, why)])
        # One line, git's message once: a failure is an error of this directory (exit bit 2), not
        # also an "unverifiable" entry repeating it.
        return KindResult(problems=[Problem(ctx.root, why)])
    if prefix and not tree:
        return None  # e.g. a model directory inside a home directory that happens to be a repository
    filemode = git.filemode
    label = f"{wanted} (commit {commit[:12]})" if wanted != commit else f"commit {commit[:12]}"
    result = KindResult(commit=commit, problems=problems)
    expects: list[Expect] = []
    cut = len(prefix) + 1 if prefix else 0
    _prefetch(ctx, git, tree, cut)
    for path, (mode, kind, sha, size) in sorted(tree.items()):
        rel = path[cut:]
        if kind != "blob":
            continue  # submodules are repositories of their own
        if mode == "120000":
            _symlink(ctx, git, result, rel, sha, label)
            continue
        exp = _expect(ctx, git, rel, path, mode, sha, size, commit, label, dirty, bool(filemode))
        if isinstance(exp, FileCheck):
            result.files_checked += 1
            result.checks.append(exp)
        else:
            expects.append(exp)
    outcomes = _confirm(ctx, git, top, prefix, run(expects, ctx), result.problems)
    result.add_outcomes(ctx, outcomes)
    for path, (status, _sha) in sorted(dirty.items()):
        if status == "A" and not is_bookkeeping(path[cut:]):
            result.checks.append(added_check(ctx, path[cut:], f"staged in git's index but not in {label}"))
    for path in untracked:
        if not is_bookkeeping(path[cut:]):  # an in-tree driftscan manifest is not model content
            why = f"untracked: not in {label} and not ignored by .gitignore"
            result.checks.append(added_check(ctx, path[cut:], why))
    return result


def _prefetch(ctx: Context, git: _Git, tree: dict[str, tuple[str, str, str, int | None]], cut: int) -> None:
    """The blobs the loop will read (symlink targets, possible LFS pointers) in one git call."""
    wanted = []
    for path, (mode, kind, sha, size) in tree.items():
        if kind != "blob":
            continue
        if mode == "120000":
            wanted.append(sha)
        elif size is not None and size <= LFS_POINTER_MAX:
            try:
                if os.lstat(os.path.join(ctx.root, path[cut:])).st_size != size:
                    wanted.append(sha)
            except OSError:
                pass
    if wanted:
        try:
            git.blobs(wanted)
        except gitaccess.GitFailed:
            pass  # each blob is then asked for on its own, and a failure reported there


def _expect(ctx: Context, git: _Git, rel: str, path: str, mode: str, sha: str, size: int | None, commit: str,
            label: str, dirty: dict[str, tuple[str, str]], filemode: bool) -> Expect | FileCheck:
    abspath = os.path.join(ctx.root, rel)
    status, index_sha = dirty.get(path, ("", ZERO))
    stale: Callable[[os.stat_result], str | None] = lambda st: (  # noqa: E731
        "its stat data no longer matches git's index (changed since checkout) and its size matches"
        if status == "M" and index_sha == ZERO else None)
    expected: FileState = {"blob": sha, "size": size, "commit": commit}
    try:
        on_disk = os.lstat(abspath).st_size
    except OSError:
        on_disk = None
    pointer = None
    if size is not None and size <= LFS_POINTER_MAX and on_disk is not None and on_disk != size:
        blob = _blob(git, sha)
        pointer = parse_lfs_pointer(blob) if blob is not None else None
    if pointer is not None:
        oid, lfs_size = pointer
        return Expect(rel, abspath, "sha256", oid, lfs_size, {"lfs_oid": oid, "size": lfs_size, "blob": sha,
                      "commit": commit}, f"the git LFS pointer in {label}", stale=stale)
    if (status == "M" and index_sha != ZERO and on_disk is not None and on_disk >= ctx.limit and not ctx.deep):
        return FileCheck(DriftKind.MODIFIED, abspath, ctx.root, None, expected, {"index_blob": index_sha,
                         "size": on_disk}, f"git's index holds a different blob than {label} (a staged change);"
                         " its content was not read", area=Area.MODEL)
    want = 0o100755 if mode == "100755" else 0o100644
    original = (lambda: _blob(git, sha)) if size is not None and size < ctx.limit else None
    return Expect(rel, abspath, "git-sha1", sha, size, expected, label, stale=stale, original=original,
                  mode=(want, stat.S_IXUSR) if filemode else None)


def _blob(git: _Git, sha: str) -> bytes | None:
    try:
        return git.blob(sha)
    except gitaccess.GitFailed:
        return None


def _symlink(ctx: Context, git: _Git, result: KindResult, rel: str, sha: str, label: str) -> None:
    path = os.path.join(ctx.root, rel)
    blob = _blob(git, sha)
    if blob is None:
        result.problems.append(Problem(path, f"git cannot read the symlink's blob {sha[:12]}"))
        return
    target = os.fsdecode(blob)
    expected: FileState = {"type": "symlink", "symlink_target": target, "blob": sha}
    result.files_checked += 1
    try:
        st = os.lstat(path)
        actual_target = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
    except FileNotFoundError:
        result.checks.append(FileCheck(DriftKind.MISSING, path, ctx.root, None, expected, {},
                                       f"listed in {label} but not on disk", area=Area.MODEL))
        return
    except OSError as exc:
        result.problems.append(Problem(path, f"cannot read: {os_error(exc)}"))
        return
    if actual_target is None:
        result.checks.append(FileCheck(DriftKind.TYPE_CHANGED, path, ctx.root, None, expected,
                                       {"type": "file" if stat.S_ISREG(st.st_mode) else "other", "size": st.st_size,
                                        "mtime": iso(st.st_mtime)}, f"a symlink in {label}, no longer one on disk",
                                       area=Area.MODEL))
    elif actual_target != target:
        result.checks.append(FileCheck(DriftKind.MODIFIED, path, ctx.root, None, expected,
                                       {"type": "symlink", "symlink_target": actual_target},
                                       f"the symlink points at {actual_target}, not {target} as in {label}",
                                       area=Area.MODEL))


def _confirm(ctx: Context, git: _Git, top: str, prefix: str, outcomes: list[Outcome],
             problems: list[Problem]) -> list[Outcome]:
    """Drop small "modified" files that git, applying .gitattributes (eol, ident), still hashes to the blob."""
    suspects = [o for o in outcomes if o.status == MODIFIED and o.content is not None
                and o.expect.algorithm == "git-sha1" and "\n" not in o.expect.relpath]
    if not suspects:
        return outcomes
    paths = [(f"{prefix}/" if prefix else "") + o.expect.relpath for o in suspects]
    try:
        # Applies .gitattributes conversions (eol, ident); no filter driver is defined in git's
        # private configuration, so none the repository names runs.
        digests = git.run("hash-object", "--", *paths, what="git hash-object").decode("ascii").split()
    except gitaccess.GitTimeout as exc:  # a FIFO .gitattributes: the raw verdicts stand
        problems.append(Problem(ctx.root, f"line-ending conversions not checked: {exc}"))
        return outcomes
    except (gitaccess.GitFailed, UnicodeDecodeError):  # git refused a path: keep the stricter raw verdict
        return outcomes
    for o in suspects:
        ctx.meter.note_read(len(o.content or b""))
    same = {id(o) for o, d in zip(suspects, digests, strict=False) if d == o.expect.digest}
    return [o for o in outcomes if id(o) not in same]


def remote_urls(root: str) -> list[tuple[str, str]]:
    """(remote name, url) for each ``url`` of a ``[remote "NAME"]`` section of ``root/.git/config``,
    in file order: read as lines (a regular file inside ``root``, at most GIT_CONFIG_MAX bytes), not
    run through git; ``include`` directives and a ``.git`` file (a worktree's) are not followed."""
    path = os.path.join(root, ".git", "config")
    try:
        text = read_regular(path, GIT_CONFIG_MAX, root=root).decode("utf-8", "replace")
    except OSError:
        return []
    urls, remote = [], None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            found = _SECTION.match(line)
            remote = found.group(1) if found else None
            continue
        key, eq, value = line.partition("=")
        if remote is not None and eq and key.strip().lower() == "url":
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            urls.append((remote, value))
    return urls


# --- the provenance interface (provenance/interface.py) --------------------------------------------

KIND = LayoutKind.GIT
ABSENT = "git repository"
SELF_AUDITED = True


def recognise(path: str, revision: str | None, in_tree_manifest: str | None) -> ModelDirLayout | None:
    """A work tree: the directory or a parent holds ``.git``."""
    top = find_git_top(path)
    return None if top is None else ModelDirLayout(path, path, KIND, git_top=top, manifest=in_tree_manifest)


audit = audit_git


def way_back(check: FileCheck, root: str, commit: str | None, memo: dict[Any, Any]) -> WayBack:
    q_rel, q_root = shlex.quote(relpath(check.path, check.root)), shlex.quote(root)
    return WayBack(f"git -C {q_root} checkout HEAD -- {q_rel}  (LFS weights: git -C {q_root} lfs pull --include {q_rel})")

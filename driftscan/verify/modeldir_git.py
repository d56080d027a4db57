"""git clones of model repositories: the work tree against a commit (HEAD unless a revision is named).

git's own machinery does the cheap part: ``ls-tree`` lists what the commit holds (with blob
sizes), ``diff-index`` tells from git's stat cache which files changed since checkout without
reading them, ``ls-files --others --exclude-standard`` lists untracked files that no .gitignore
covers. Small files are hashed here (git blob sha1) so a drift comes with its JSON changes.

Git LFS: a blob that is an LFS pointer stands for the file's sha256 and size; a work-tree file
holding the real content is compared against those, not reported as "modified".

Every git call runs with ``--no-optional-locks`` (``git status`` would otherwise refresh and
rewrite .git/index), fsmonitor off and the LFS filters disabled (git-lfs's clean filter would
hash the whole shard and copy it into .git/lfs/objects): the audit never writes into the tree.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Any

from ..discover.modeldir import ModelDirLayout
from ..manifest import is_bookkeeping
from ..model import DriftKind, FileCheck, Problem, Unverifiable
from .modeldir_engine import MODIFIED, Context, Expect, KindResult, added_check, iso, os_error, run

LFS_SPEC = b"version https://git-lfs.github.com/spec/v1"
LFS_POINTER_MAX = 1024
ZERO = "0" * 40
_SAFE = ["--no-optional-locks", "--literal-pathspecs", "-c", "core.quotepath=off", "-c", "core.fsmonitor=false",
         "-c", "filter.lfs.clean=", "-c", "filter.lfs.smudge=", "-c", "filter.lfs.process=",
         "-c", "filter.lfs.required=false"]
_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def parse_lfs_pointer(data: bytes) -> tuple[str, int] | None:
    """(sha256 hex, size) of a git LFS pointer file, or None when ``data`` is not one."""
    if len(data) > LFS_POINTER_MAX or not data.startswith(LFS_SPEC):
        return None
    fields = dict(line.split(b" ", 1) for line in data.splitlines() if b" " in line)
    oid, size = fields.get(b"oid", b""), fields.get(b"size", b"")
    if not oid.startswith(b"sha256:") or not size.isdigit():
        return None
    digest = oid[len(b"sha256:"):].decode("ascii", "replace")
    if len(digest) != 64:
        return None
    return digest, int(size)


class _Git:
    def __init__(self, repo: Any):
        self.repo = repo

    def run(self, *args: str) -> bytes:
        command = [self.repo.git.GIT_PYTHON_GIT_EXECUTABLE, *_SAFE, *args]
        return self.repo.git.execute(command, stdout_as_string=False, strip_newline_in_stdout=False, env=_ENV)

    def records(self, *args: str) -> list[str]:
        return [os.fsdecode(r) for r in self.run(*args).split(b"\0") if r]

    def blob(self, sha: str) -> bytes:
        return self.repo.odb.stream(bytes.fromhex(sha)).read()


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


def _open(path: str) -> tuple[Any, str | None]:
    """A gitpython Repo for the work tree at ``path``, or (None, why not)."""
    try:
        import git  # gitpython refuses to import when no git executable is found
    except ImportError as exc:
        return None, f"git is not available: {exc}"
    try:
        repo = git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        return None, f"not a git repository: {exc}"
    if repo.bare or not repo.working_tree_dir:
        repo.close()
        return None, "a bare git repository has no work tree"
    return repo, None


def audit_git(ctx: Context, layout: ModelDirLayout, revision: str | None) -> KindResult | None:
    """None when the directory holds nothing git tracks (then another kind is tried)."""
    repo, why = _open(layout.git_top or ctx.root)
    if repo is None:
        return None if why and why.startswith("not a git") else KindResult(
            problems=[Problem(ctx.root, why or "")], unverifiable=[Unverifiable(layout.path, why or "")])
    try:
        return _audit(ctx, layout, _Git(repo), revision)
    finally:
        repo.close()  # ends gitpython's persistent cat-file processes


def _audit(ctx: Context, layout: ModelDirLayout, git: _Git, revision: str | None) -> KindResult | None:
    import git as gitpython

    top = os.path.realpath(git.repo.working_tree_dir)
    prefix = os.path.relpath(os.path.realpath(ctx.root), top).replace(os.sep, "/")
    prefix = "" if prefix == "." else prefix
    pathspec = ["--", prefix] if prefix else []
    wanted = revision or "HEAD"
    try:
        commit = git.repo.commit(wanted).hexsha
        tree = _tree(git, commit, pathspec)
        dirty = _dirty(git, commit, pathspec)
        untracked = git.records("ls-files", "-z", "--others", "--exclude-standard", *pathspec)
    except (ValueError, gitpython.BadName, gitpython.GitCommandError) as exc:
        why = f"git cannot compare against {wanted}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else exc}"
        return KindResult(problems=[Problem(ctx.root, why)], unverifiable=[Unverifiable(layout.path, why)])
    if prefix and not tree:
        return None  # e.g. a model directory inside a home directory that happens to be a repository
    try:
        filemode = git.repo.config_reader().get_value("core", "filemode", True)
    except Exception:  # an unreadable config: git itself defaults to true
        filemode = True
    label = f"{wanted} (commit {commit[:12]})" if wanted != commit else f"commit {commit[:12]}"
    result = KindResult(commit=commit)
    expects: list[Expect] = []
    cut = len(prefix) + 1 if prefix else 0
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
    outcomes = _confirm(ctx, git, top, prefix, run(expects, ctx))
    result.add_outcomes(ctx, outcomes)
    for path, (status, _sha) in sorted(dirty.items()):
        if status == "A" and not is_bookkeeping(path[cut:]):
            result.checks.append(added_check(ctx, path[cut:], f"staged in git's index but not in {label}"))
    for path in untracked:
        if not is_bookkeeping(path[cut:]):  # an in-tree driftscan manifest is not model content
            why = f"untracked: not in {label} and not ignored by .gitignore"
            result.checks.append(added_check(ctx, path[cut:], why))
    return result


def _expect(ctx: Context, git: _Git, rel: str, path: str, mode: str, sha: str, size: int | None, commit: str,
            label: str, dirty: dict[str, tuple[str, str]], filemode: bool) -> Expect | FileCheck:
    abspath = os.path.join(ctx.root, rel)
    status, index_sha = dirty.get(path, ("", ZERO))
    stale: Callable[[os.stat_result], str | None] = lambda st: (  # noqa: E731
        "its stat data no longer matches git's index (changed since checkout) and its size matches"
        if status == "M" and index_sha == ZERO else None)
    expected: dict[str, Any] = {"blob": sha, "size": size, "commit": commit}
    try:
        on_disk = os.lstat(abspath).st_size
    except OSError:
        on_disk = None
    pointer = None
    if size is not None and size <= LFS_POINTER_MAX and on_disk is not None and on_disk != size:
        pointer = parse_lfs_pointer(git.blob(sha))
    if pointer is not None:
        oid, lfs_size = pointer
        return Expect(rel, abspath, "sha256", oid, lfs_size, {"lfs_oid": oid, "size": lfs_size, "blob": sha,
                      "commit": commit}, f"the git LFS pointer in {label}", stale=stale)
    if (status == "M" and index_sha != ZERO and on_disk is not None and on_disk >= ctx.limit and not ctx.deep):
        return FileCheck(DriftKind.MODIFIED, abspath, ctx.root, None, expected, {"index_blob": index_sha,
                         "size": on_disk}, f"git's index holds a different blob than {label} (a staged change);"
                         " its content was not read", area="model")
    want = 0o100755 if mode == "100755" else 0o100644
    original = (lambda: git.blob(sha)) if size is not None and size < ctx.limit else None
    return Expect(rel, abspath, "git-sha1", sha, size, expected, label, stale=stale, original=original,
                  mode=(want, stat.S_IXUSR) if filemode else None)


def _symlink(ctx: Context, git: _Git, result: KindResult, rel: str, sha: str, label: str) -> None:
    path = os.path.join(ctx.root, rel)
    target = os.fsdecode(git.blob(sha))
    expected = {"type": "symlink", "symlink_target": target, "blob": sha}
    result.files_checked += 1
    try:
        st = os.lstat(path)
        actual_target = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
    except FileNotFoundError:
        result.checks.append(FileCheck(DriftKind.MISSING, path, ctx.root, None, expected, {},
                                       f"listed in {label} but not on disk", area="model"))
        return
    except OSError as exc:
        result.problems.append(Problem(path, f"cannot read: {os_error(exc)}"))
        return
    if actual_target is None:
        result.checks.append(FileCheck(DriftKind.TYPE_CHANGED, path, ctx.root, None, expected,
                                       {"type": "file" if stat.S_ISREG(st.st_mode) else "other", "size": st.st_size,
                                        "mtime": iso(st.st_mtime)}, f"a symlink in {label}, no longer one on disk",
                                       area="model"))
    elif actual_target != target:
        result.checks.append(FileCheck(DriftKind.MODIFIED, path, ctx.root, None, expected,
                                       {"type": "symlink", "symlink_target": actual_target},
                                       f"the symlink points at {actual_target}, not {target} as in {label}",
                                       area="model"))


def _confirm(ctx: Context, git: _Git, top: str, prefix: str, outcomes: list) -> list:
    """Drop small "modified" files that git, applying .gitattributes (eol, ident), still hashes to the blob."""
    suspects = [o for o in outcomes if o.status == MODIFIED and o.content is not None
                and o.expect.algorithm == "git-sha1" and "\n" not in o.expect.relpath]
    if not suspects:
        return outcomes
    paths = [(f"{prefix}/" if prefix else "") + o.expect.relpath for o in suspects]
    import git as gitpython

    try:
        digests = git.run("hash-object", "--", *paths).decode("ascii").split()
    except (gitpython.GitCommandError, UnicodeDecodeError):  # git refused a path: keep the stricter raw verdict
        return outcomes
    for o in suspects:
        ctx.meter.note_read(len(o.content or b""))
    same = {id(o) for o, d in zip(suspects, digests, strict=False) if d == o.expect.digest}
    return [o for o in outcomes if id(o) not in same]

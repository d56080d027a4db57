"""Opening a repository (``open_repository``: every refusal happens here, before git runs) and
the ``Repository`` its callers ask git through; finding one, and whose it may be."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..fs.reader import os_error, read_regular
from . import privatedir
from .config import check_format, read_config
from .errors import GitFailed, GitRefused, GitTimeout, GitWouldBlock, NotARepository
from .excludes import exclude_file
from .files import INFO_MAX, blocking_control_file, describe, read_optional
from .process import environment, git_executable
from .process import run as run_git
from .refs import OBJECT_ID, REF_MAX, RefLogEntry, copy_refs, read_reflog, resolve_head


def find_repository(start: str) -> str | None:
    """The nearest directory at or above ``start`` with a ``.git`` entry of any type, not
    crossing a filesystem boundary (git's default)."""
    current = os.path.abspath(start)
    try:
        device = os.stat(current).st_dev
    except OSError:
        return None
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        try:
            if parent == current or os.stat(parent).st_dev != device:
                return None
        except OSError:
            return None
        current = parent


def _owner(path: str) -> int | None:
    try:
        return os.lstat(path).st_uid
    except OSError:
        return None


def uids_of(*paths: str) -> set[int]:
    """The auditing user and the owners of ``paths``: the uids a repository may belong to."""
    allowed = {os.geteuid()} if hasattr(os, "geteuid") else set()
    for path in paths:
        uid = _owner(path)
        if uid is not None:
            allowed.add(uid)
    return allowed


# Said of a revision that names no commit (the caller names the revision, once).
NO_SUCH_REVISION = "no such commit, branch or tag in this repository"


@dataclass
class Repository:
    """A repository opened for reading through a private GIT_DIR; use as a context manager."""

    top: str  # the work tree, as the caller named it
    git_dir: str  # the real .git directory
    private: str  # the private GIT_DIR's parent (removed by close)
    executable: str
    config: dict[str, str]
    head: str | None  # the commit HEAD names, resolved here; None for an unborn branch
    head_ref: str | None  # "refs/heads/main", or None when detached
    _env: dict[str, str] = field(default_factory=dict)
    _refs_copied: bool = False
    _blobs: dict[str, bytes] = field(default_factory=dict)

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        privatedir.remove(self.private)

    @property
    def gitdir_private(self) -> str:
        return privatedir.git_dir(self.private)

    @property
    def filemode(self) -> bool:
        return self.config.get("core.filemode", "true") == "true"

    # -- running git ---------------------------------------------------------------------

    def run(self, *args: str, input: bytes | None = None, what: str | None = None) -> bytes:
        """stdout of ``git <args>``; GitFailed with git's message, GitTimeout when it hangs."""
        return run_git(self.executable, self.top, self._env, args, input=input, what=what)

    def records(self, *args: str, what: str | None = None) -> list[str]:
        """NUL-separated output records (``-z``), decoded as file names."""
        return [os.fsdecode(r) for r in self.run(*args, what=what).split(b"\0") if r]

    # -- objects and revisions -----------------------------------------------------------

    def resolve(self, revision: str) -> str:
        """The full commit id ``revision`` names; GitFailed when it names none."""
        if revision in ("HEAD", "@"):
            if self.head is None:
                raise GitFailed(f"HEAD names {self.head_ref or 'nothing'}, which has no commits yet")
            return self.head  # read here from the refs; a missing object fails the next git call
        if not OBJECT_ID.match(revision):
            try:
                self._copy_refs()
            except GitRefused as exc:  # packed-refs is a FIFO, a symlink, too large
                raise GitFailed(str(exc)) from None
        try:
            out = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
        except GitTimeout:
            raise
        except GitFailed:
            raise GitFailed(NO_SUCH_REVISION) from None
        sha = out.decode("ascii", "replace").strip()
        if not OBJECT_ID.match(sha):
            raise GitFailed(NO_SUCH_REVISION)
        return sha

    def blob(self, sha: str) -> bytes:
        if sha not in self._blobs:
            self._blobs[sha] = self.run("cat-file", "blob", sha)
        return self._blobs[sha]

    def blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Many blobs in one ``cat-file --batch``; missing ones are left out."""
        shas = list(shas)
        wanted = [s for s in dict.fromkeys(shas) if s not in self._blobs and OBJECT_ID.match(s)]
        if wanted:
            out = self.run("cat-file", "--batch", input="".join(f"{s}\n" for s in wanted).encode())
            pos = 0
            while pos < len(out):
                end = out.index(b"\n", pos)
                header = out[pos:end].split()
                pos = end + 1
                if len(header) != 3:
                    continue  # "<sha> missing"
                size = int(header[2])
                if header[1] == b"blob":
                    self._blobs[header[0].decode()] = out[pos:pos + size]
                pos += size + 1
        return {s: self._blobs[s] for s in shas if s in self._blobs}

    def reflog(self) -> list[RefLogEntry]:
        """HEAD's reflog, read here (oldest first); empty when there is none or it is unreadable."""
        return read_reflog(self.git_dir)

    def _copy_refs(self) -> None:
        """Every ref of the repository into the private GIT_DIR, read here as data: direct refs
        into ``packed-refs``, symbolic ones as loose files. Needed only to resolve a name."""
        if self._refs_copied:
            return
        self._refs_copied = True
        copy_refs(self.git_dir, self.gitdir_private)


def open_repository(top: str, *, allowed_uids: set[int] | None = None) -> Repository:
    """The repository whose work tree is ``top`` (the directory holding ``.git``).

    NotARepository when there is none; GitRefused when it must not be read (see the package
    docstring) or cannot be (an unreadable objects/ or index, no room for the private GIT_DIR);
    GitFailed when git is not installed."""
    try:
        return _open(top, allowed_uids)
    except OSError as exc:  # the callers expect git's errors only: any other failure refuses the repository
        raise GitRefused(f"{os.path.join(top, '.git')}: cannot read: {os_error(exc)}") from None


def _open(top: str, allowed_uids: set[int] | None) -> Repository:
    executable = git_executable()
    if executable is None:
        raise GitFailed("no git executable on PATH")
    dot_git = os.path.join(top, ".git")
    try:
        st = os.lstat(dot_git)
    except FileNotFoundError:
        raise NotARepository(f"not a git repository: {top} has no .git") from None
    except OSError as exc:
        raise GitRefused(f"{dot_git}: {exc.strerror or exc}") from None
    if stat.S_ISREG(st.st_mode):
        try:
            target = read_regular(dot_git, REF_MAX, follow=False).decode("utf-8", "replace").strip()
        except OSError:
            target = "?"
        raise GitRefused(f"{dot_git} is a file ({target[:200]!r}): its repository lives elsewhere (a linked "
                         "worktree or submodule); not followed")
    if not stat.S_ISDIR(st.st_mode):
        raise GitRefused(f"{dot_git} is {describe(dot_git, st)}: not followed")
    allowed = allowed_uids if allowed_uids is not None else uids_of()
    for path in (top, dot_git):
        uid = _owner(path)
        if uid is not None and allowed and uid not in allowed:
            raise GitRefused(f"{path} is owned by uid {uid}, not by the auditing user or the owner of what is "
                             "audited (git's safe.directory rule); not read")
    head_data = read_optional(os.path.join(dot_git, "HEAD"), REF_MAX, "HEAD")
    objects = os.path.join(dot_git, "objects")
    if os.path.islink(objects):
        raise GitRefused(f"{objects} is a symlink (to {os.readlink(objects)[:200]!r}): not followed")
    if head_data is None or not os.path.isdir(objects):
        raise NotARepository(f"not a git repository: {dot_git} has no HEAD or objects directory")
    head, head_ref = resolve_head(dot_git, head_data)
    index = os.path.join(dot_git, "index")
    try:
        st = os.lstat(index)
        if not stat.S_ISREG(st.st_mode):
            raise GitRefused(f"{index} is {describe(index, st)}; the repository is not read")
    except FileNotFoundError:
        index = ""
    info = {name: read_optional(os.path.join(dot_git, "info", name), INFO_MAX, name)
            for name in ("exclude", "attributes")}
    values = read_config(dot_git)
    config = check_format(values, dot_git)
    # git's ignore sources other than work-tree .gitignore files, all handed over as data.
    info["exclude"] = exclude_file(info["exclude"], values, top)
    blocking = blocking_control_file(top)
    if blocking is not None:
        raise GitWouldBlock(f"{blocking}; the repository is not read")
    private = privatedir.make(top)
    try:
        index = privatedir.populate(private, dot_git, config, head, head_ref, info, index)
        repo = Repository(top, dot_git, private, executable, config, head, head_ref)
        repo._env = environment(private, privatedir.git_dir(private), top, index)
        return repo
    except BaseException:
        privatedir.remove(private)
        raise

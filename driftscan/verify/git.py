"""The one way driftscan asks git about a repository it audits (docs/git-access.md).

An audited repository is data, never instructions: its ``.git/config`` may name commands
(``core.fsmonitor``, ``diff.external``, textconv, clean/smudge/process filters, pagers, hooks,
credential and ssh helpers), include other files, or point git at files outside the tree, and
any of its files may be a FIFO. So git never reads the repository's own configuration:

- every call runs with a private ``GIT_DIR`` in a temporary directory outside the audited tree.
  Its ``config`` is written here: only inert keys (``WHITELIST``) taken from the real config,
  which is read with ``fileio.read_regular`` and parsed here (``parse_config``; includes are
  never followed). Its ``HEAD`` and refs are resolved here in Python and written as plain
  data; its ``objects`` holds symlinks to the real object
  directories (so the real ``objects/info/alternates`` is never read: a repository that borrows
  objects from elsewhere is refused); ``GIT_INDEX_FILE`` is the real index, ``GIT_WORK_TREE``
  the real work tree; ``info/exclude`` and ``info/attributes`` are copied;
- the environment is built from nothing (no inherited ``GIT_*``): no system or global config,
  an empty ``HOME``, no pager, no prompts, no lazy fetch, no replace objects, no protocols;
- ``-c`` switches off fsmonitor, hooks and the global attributes and excludes files;
- stdin is /dev/null, and every call has a timeout: the process group is killed and the caller
  reports "git did not answer within N s" for that tree (a FIFO ``.gitignore`` is read by git).

Before anything runs, ``open_repository`` refuses (``GitRefused`` → "unverifiable") a ``.git``
that is a file or a symlink (its repository lives elsewhere), a repository or work tree owned by
a uid other than the allowed ones (git's ``safe.directory`` rule, which an explicit ``GIT_DIR``
would bypass), a bare repository, and repository formats this module does not understand.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..fileio import inside, read_regular, walk

TIMEOUT = 30.0  # seconds per git call; DRIFTSCAN_GIT_TIMEOUT overrides it
DEVNULL = os.devnull

# Keys copied from the repository's config: each only changes how git reads data already in the
# tree. Values are validated; anything else (include.path, includeIf, drivers, helpers) is dropped.
_BOOL = ("true", "false")
WHITELIST: dict[str, tuple[str, ...] | None] = {
    "core.filemode": _BOOL,
    "core.symlinks": _BOOL,
    "core.ignorecase": _BOOL,
    "core.precomposeunicode": _BOOL,
    "core.trustctime": _BOOL,
    "core.autocrlf": ("true", "false", "input"),
    "core.eol": ("lf", "crlf", "native"),
    "core.checkstat": ("default", "minimal"),
    "extensions.objectformat": ("sha1", "sha256"),
}
_TRUE = {"true", "yes", "on", "1", ""}
_FALSE = {"false", "no", "off", "0"}
# Extensions of repository format 1 that change nothing for reading (or are copied above).
_HARMLESS_EXTENSIONS = {"objectformat", "noop", "preciousobjects", "worktreeconfig", "partialclone"}
_CONFIG = ["-c", "core.fsmonitor=false", "-c", f"core.hooksPath={DEVNULL}", "-c", f"core.attributesFile={DEVNULL}",
           "-c", f"core.excludesFile={DEVNULL}", "-c", "core.quotePath=off", "-c", "core.pager=cat",
           "-c", "core.untrackedCache=false", "-c", "core.askPass=", "-c", "credential.helper=",
           "-c", "protocol.allow=never", "-c", "color.ui=false"]
# (Not "-c diff.external=": an empty value makes git try to run "". Diffs pass --no-ext-diff.)
_HEX = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# A conservative subset of git's refname rules: nothing that could break a packed-refs line.
_REFNAME = re.compile(r"^refs/(?:[^\x00-\x20\x7f~^:?*\[\\]+)$")
_FANOUT = frozenset(f"{i:02x}" for i in range(256))  # loose object directories
CONFIG_MAX = 4 << 20
REF_MAX = 4 << 10
PACKED_REFS_MAX = 256 << 20
REFLOG_MAX = 64 << 20
INFO_MAX = 4 << 20
REFS_MAX = 200_000


class GitRefused(Exception):
    """The repository is not read at all: why, for an "unverifiable" entry."""


class NotARepository(GitRefused):
    """No usable repository there (the caller may try something else)."""


class GitFailed(Exception):
    """git ran and failed, or did not answer: a Problem for that tree, the audit goes on."""


class GitTimeout(GitFailed):
    pass


def timeout() -> float:
    try:
        value = float(os.environ.get("DRIFTSCAN_GIT_TIMEOUT", ""))
    except ValueError:
        return TIMEOUT
    return value if value > 0 else TIMEOUT


def git_executable() -> str | None:
    """The auditing user's git (from their PATH, never from the tree)."""
    return shutil.which("git")


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


def _describe(path: str, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        try:
            return f"a symlink (to {os.readlink(path)})"
        except OSError:
            return "a symlink"
    return f"not a regular file ({stat.filemode(st.st_mode)})"


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


def _read_optional(path: str, limit: int, what: str) -> bytes | None:
    """A repository file that may be absent; GitRefused when it is there but not a regular file."""
    try:
        return read_regular(path, limit, what=what, follow=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GitRefused(f"{path}: {exc.strerror or exc}; the repository is not read") from None


def valid_ref(name: str) -> bool:
    """A ref name safe to use as a path under .git and as a packed-refs line."""
    parts = name.split("/")
    return bool(_REFNAME.match(name)) and not name.endswith((".lock", "/", ".")) and "@{" not in name and all(
        p and not p.startswith(".") for p in parts)


def _bool(value: str) -> str | None:
    low = value.strip().lower()
    return "true" if low in _TRUE else "false" if low in _FALSE else None


@dataclass
class RefLogEntry:
    old: str
    new: str
    time: int


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
        _remove(self.private)

    @property
    def gitdir_private(self) -> str:
        return os.path.join(self.private, "git")

    @property
    def filemode(self) -> bool:
        return self.config.get("core.filemode", "true") == "true"

    # -- running git ---------------------------------------------------------------------

    def run(self, *args: str, input: bytes | None = None, what: str | None = None) -> bytes:
        """stdout of ``git <args>``; GitFailed with git's message, GitTimeout when it hangs."""
        limit = timeout()
        command = [self.executable, *_CONFIG, *args]
        posix = os.name == "posix"
        try:
            proc = subprocess.Popen(command, cwd=self.top, env=self._env, close_fds=True,
                                    stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=posix)
        except OSError as exc:
            raise GitFailed(f"cannot run git: {exc.strerror or exc}") from None
        try:
            out, err = _communicate(proc, input, limit)
        except subprocess.TimeoutExpired:
            _kill(proc, posix)
            raise GitTimeout(f"git did not answer within {limit:g} s ({what or 'git ' + args[0]}); "
                             "a FIFO in the work tree (.gitignore, .gitattributes) can do that") from None
        except BaseException:
            _kill(proc, posix)
            raise
        if proc.returncode != 0:
            message = err.decode("utf-8", "replace").strip()
            raise GitFailed(message.splitlines()[-1][:300] if message else f"git {args[0]} exited {proc.returncode}")
        return out

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
        if not _HEX.match(revision):
            try:
                self._copy_refs()
            except GitRefused as exc:  # packed-refs is a FIFO, a symlink, too large
                raise GitFailed(str(exc)) from None
        try:
            out = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
        except GitTimeout:
            raise
        except GitFailed:
            raise GitFailed(f"unknown revision {revision!r}") from None
        sha = out.decode("ascii", "replace").strip()
        if not _HEX.match(sha):
            raise GitFailed(f"unknown revision {revision!r}")
        return sha

    def blob(self, sha: str) -> bytes:
        if sha not in self._blobs:
            self._blobs[sha] = self.run("cat-file", "blob", sha)
        return self._blobs[sha]

    def blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Many blobs in one ``cat-file --batch``; missing ones are left out."""
        shas = list(shas)
        wanted = [s for s in dict.fromkeys(shas) if s not in self._blobs and _HEX.match(s)]
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
        try:
            data = _read_optional(os.path.join(self.git_dir, "logs", "HEAD"), REFLOG_MAX, "reflog")
        except GitRefused:
            return []
        entries = []
        for line in (data or b"").decode("utf-8", "replace").splitlines():
            meta = line.split("\t", 1)[0]
            parts = meta.split(" ", 2)
            tail = meta.rsplit(" ", 2)
            if len(parts) < 3 or len(tail) < 3 or not tail[1].isdigit():
                continue
            entries.append(RefLogEntry(parts[0], parts[1], int(tail[1])))
        return entries

    def _copy_refs(self) -> None:
        """Every ref of the repository into the private GIT_DIR, read here as data: direct refs
        into ``packed-refs``, symbolic ones as loose files. Needed only to resolve a name."""
        if self._refs_copied:
            return
        self._refs_copied = True
        direct: dict[str, str] = {}
        symbolic: dict[str, str] = {}
        packed = _read_optional(os.path.join(self.git_dir, "packed-refs"), PACKED_REFS_MAX, "packed-refs")
        for line in (packed or b"").decode("utf-8", "replace").splitlines():
            sha, _, name = line.partition(" ")
            if _HEX.match(sha) and valid_ref(name):
                direct[name] = sha
        base = os.path.join(self.git_dir, "refs")
        count = 0
        for dirpath, _dirnames, filenames in walk(base):  # does not follow symlinked directories
            for name in filenames:
                path = os.path.join(dirpath, name)
                ref = "refs/" + os.path.relpath(path, base).replace(os.sep, "/")
                count += 1
                if count > REFS_MAX or not valid_ref(ref) or ref.endswith(".lock"):
                    continue
                try:
                    value = read_regular(path, REF_MAX, what="git ref", follow=False).decode("ascii").strip()
                except (OSError, UnicodeDecodeError):
                    continue  # a symlink, FIFO or garbage is not a ref
                if _HEX.match(value):
                    direct[ref] = value
                    symbolic.pop(ref, None)
                elif value.startswith("ref: ") and valid_ref(value[5:]):
                    symbolic[ref] = value[5:]
                    direct.pop(ref, None)
        gd = self.gitdir_private
        with open(os.path.join(gd, "packed-refs"), "w", encoding="utf-8") as f:
            f.writelines(f"{sha} {name}\n" for name, sha in sorted(direct.items()) if name not in symbolic)
        for name, target in symbolic.items():
            path = os.path.join(gd, *name.split("/"))
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(f"ref: {target}\n")
            except OSError:
                continue  # a name that clashes with a directory: git would not have it either


def _communicate(proc: subprocess.Popen, input: bytes | None, limit: float) -> tuple[bytes, bytes]:
    """``proc.communicate(input, timeout=limit)``, without its polling wait for the exit (sleeps
    of 0.5 ms and up: a millisecond per git call): pipes and a pidfd in one selector."""
    if input is not None or not hasattr(os, "pidfd_open") or proc.stdout is None or proc.stderr is None:
        return proc.communicate(input, timeout=limit)
    deadline = time.monotonic() + limit
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:
        return proc.communicate(input, timeout=limit)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    try:
        with selectors.DefaultSelector() as selector:
            for fd in chunks:
                selector.register(fd, selectors.EVENT_READ)
            selector.register(pidfd, selectors.EVENT_READ)
            open_pipes, exited = len(chunks), False
            while open_pipes or not exited:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise subprocess.TimeoutExpired(proc.args, limit)
                for key, _ in selector.select(remaining):
                    if key.fd == pidfd:
                        exited = True
                        selector.unregister(pidfd)
                        continue
                    data = os.read(key.fd, 1 << 16)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
                        open_pipes -= 1
    finally:
        os.close(pidfd)
    proc.wait()  # it has exited: reaps at once
    proc.stdout.close()
    proc.stderr.close()
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])


def _remove(private: str) -> None:
    objects = os.path.join(private, "git", "objects")
    try:  # hundreds of symlinks: unlinked directly, shutil.rmtree costs ~20 us a file more
        for name in os.listdir(objects):
            os.unlink(objects + os.sep + name)
    except OSError:
        pass
    shutil.rmtree(private, ignore_errors=True)


def _kill(proc: subprocess.Popen, posix: bool) -> None:
    try:
        if posix:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def _environment(private: str, git_dir: str, top: str, index: str) -> dict[str, str]:
    home = os.path.join(private, "home")
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": home, "XDG_CONFIG_HOME": home, "USERPROFILE": home,
        "GIT_DIR": git_dir, "GIT_WORK_TREE": top, "GIT_INDEX_FILE": index,
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": DEVNULL, "GIT_CONFIG_SYSTEM": DEVNULL,
        "GIT_ATTR_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1", "GIT_NO_LAZY_FETCH": "1", "GIT_LITERAL_PATHSPECS": "1",
        "GIT_PAGER": "cat", "PAGER": "cat", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "GIT_ALLOW_PROTOCOL": "",
        "GIT_ADVICE": "0", "LC_ALL": "C",
    }
    for name in ("SYSTEMROOT", "TMPDIR", "TEMP", "TMP"):  # Windows needs SYSTEMROOT to start anything
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _private_base(top: str) -> str:
    """A temporary directory outside the audited work tree (git would list it as untracked)."""
    for base in ("/dev/shm", tempfile.gettempdir(), os.path.expanduser("~/.cache")):
        if os.path.isdir(base) and not inside(top, base):
            return base
    raise GitRefused(f"no temporary directory outside {top} for git's private configuration")


def parse_config(text: str) -> dict[str, str]:
    """``section.key`` → last value, for sections without a subsection (all this module copies).

    git's syntax: ``[section]``, ``[section "sub"]``, ``key = value``, a bare ``key`` (true),
    ``#``/``;`` comments, double quotes, backslash escapes and line continuations. Includes are
    not followed: they are only keys here, and not copied."""
    values: dict[str, str] = {}
    section: str | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c in "#;":
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif c == "[":
            end = text.find("]", i)
            if end < 0:
                break
            header = text[i + 1:end].strip()
            # A subsection ([filter "lfs"], [a.b]) is never whitelisted: remember that only.
            section = None if ('"' in header or "." in header) else header.lower()
            i = end + 1
        else:
            start = i
            while i < n and (text[i].isalnum() or text[i] == "-"):
                i += 1
            key = text[start:i].lower()
            while i < n and text[i] in " \t":
                i += 1
            value, i = (_config_value(text, i + 1) if i < n and text[i] == "=" else ("", i))
            if not key:  # not a key line: skip it
                i = text.find("\n", i)
                i = n if i < 0 else i
                continue
            if section is not None:
                values[f"{section}.{key}"] = value
    return values


def _config_value(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    quoted = False
    pending = ""  # whitespace kept only if more value follows
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\n":  # git refuses a newline inside quotes; the value ends here either way
            break
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            i += 2
            if nxt == "\n":
                continue  # a line continuation
            out.append(pending + {"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            pending = ""
            continue
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "#;":
            i = text.find("\n", i)
            i = n if i < 0 else i
            break
        elif not quoted and c in " \t":
            if out:
                pending += c
        else:
            out.append(pending + c)
            pending = ""
        i += 1
    return "".join(out), i


def _read_config(git_dir: str) -> dict[str, str]:
    data = _read_optional(os.path.join(git_dir, "config"), CONFIG_MAX, "git config")
    return parse_config(data.decode("utf-8", "replace")) if data else {}


def _check_format(values: dict[str, str], path: str) -> dict[str, str]:
    if _bool(values.get("core.bare", "false")) == "true":
        raise GitRefused("a bare git repository has no work tree")
    version = values.get("core.repositoryformatversion", "0").strip()
    if version not in ("0", "1"):
        raise GitRefused(f"{path}: repository format version {version!r} is not one driftscan reads")
    if version == "1":
        unknown = sorted(k for k in values if k.startswith("extensions.")
                         and k.split(".", 1)[1] not in _HARMLESS_EXTENSIONS)
        if unknown:
            raise GitRefused(f"{path}: uses {', '.join(f'{k}={values[k]}' for k in unknown)}, "
                             "which driftscan does not read")
    config = {}
    for key, allowed in WHITELIST.items():
        if key not in values:
            continue
        value = values[key].strip().lower()
        if allowed == _BOOL:
            value = _bool(value) or ""
        if allowed is None or value in allowed:
            config[key] = value
    if "extensions.objectformat" in config and version != "1":
        del config["extensions.objectformat"]  # git ignores extensions in format 0
    config["core.repositoryformatversion"] = version
    return config


def _user_excludes() -> bytes:
    """The auditing user's global ignore file (``core.excludesFile`` of their own git config, else
    ``$XDG_CONFIG_HOME/git/ignore``): theirs, so honoured, as data appended to ``info/exclude``
    (git itself runs with no global config)."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    path = os.path.join(xdg, "git", "ignore")
    for config in (os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")):  # the latter wins
        try:
            value = parse_config(read_regular(config, CONFIG_MAX).decode("utf-8", "replace")).get("core.excludesfile")
        except OSError:
            continue
        if value:
            path = os.path.join(home, value[2:]) if value.startswith("~/") else value
    try:
        return read_regular(path, INFO_MAX)
    except OSError:
        return b""


def _repo_excludes(values: dict[str, str], top: str) -> bytes:
    """The repository's own ``core.excludesFile``, when it is a regular file inside its work tree
    (data); one elsewhere is not read."""
    path = values.get("core.excludesfile", "")
    if not path:
        return b""
    path = path if os.path.isabs(path) else os.path.join(top, path)
    try:
        return read_regular(path, INFO_MAX, root=top)
    except OSError:
        return b""


def _resolve_head(git_dir: str, data: bytes) -> tuple[str | None, str | None]:
    """(commit, ref) HEAD names, following symbolic refs here (loose file, then packed-refs)."""
    text = data.decode("ascii", "replace").strip()
    ref = None
    packed: dict[str, str] | None = None
    for _ in range(5):
        if _HEX.match(text):
            return text, ref
        if not text.startswith("ref: ") or not valid_ref(text[5:].strip()):
            raise NotARepository(f"not a git repository: {os.path.join(git_dir, 'HEAD')} is not a valid HEAD")
        name = text[5:].strip()
        ref = ref or name
        loose = _read_optional(os.path.join(git_dir, *name.split("/")), REF_MAX, "git ref")
        if loose is not None:
            text = loose.decode("ascii", "replace").strip()
            continue
        if packed is None:
            packed = {}
            raw = _read_optional(os.path.join(git_dir, "packed-refs"), PACKED_REFS_MAX, "packed-refs")
            for line in (raw or b"").decode("utf-8", "replace").splitlines():
                sha, _, refname = line.partition(" ")
                if _HEX.match(sha):
                    packed[refname] = sha
        return packed.get(name), ref
    return None, ref


def _link_objects(real: str, private: str) -> None:
    """``private`` gets a symlink to each real object directory (loose fan-out and pack), and
    nothing of ``objects/info``: alternates and commit-graph chains are not followed."""
    alternates = _read_optional(os.path.join(real, "info", "alternates"), INFO_MAX, "alternates")
    borrowed = [line for line in (alternates or b"").decode("utf-8", "replace").splitlines()
                if line.strip() and not line.startswith("#")]
    if borrowed:
        raise GitRefused(f"the repository borrows objects from {borrowed[0].strip()[:200]!r} "
                         "(objects/info/alternates): not followed")
    os.makedirs(private)
    into = private + os.sep
    with os.scandir(real) as entries:
        for entry in entries:
            if (entry.name in _FANOUT or entry.name == "pack") and entry.is_dir(follow_symlinks=False):
                os.symlink(entry.path, into + entry.name)
    pack = os.path.join(real, "pack")
    if os.path.isdir(pack) and not os.path.islink(pack):
        with os.scandir(pack) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=False):
                    raise GitRefused(f"{entry.path}: {_describe(entry.path, entry.stat(follow_symlinks=False))}; "
                                     "the repository is not read")


def open_repository(top: str, *, allowed_uids: set[int] | None = None) -> Repository:
    """The repository whose work tree is ``top`` (the directory holding ``.git``).

    NotARepository when there is none; GitRefused when it must not be read (see the module
    docstring); GitFailed when git is not installed."""
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
        raise GitRefused(f"{dot_git} is {_describe(dot_git, st)}: not followed")
    allowed = allowed_uids if allowed_uids is not None else uids_of()
    for path in (top, dot_git):
        uid = _owner(path)
        if uid is not None and allowed and uid not in allowed:
            raise GitRefused(f"{path} is owned by uid {uid}, not by the auditing user or the owner of what is "
                             "audited (git's safe.directory rule); not read")
    head_data = _read_optional(os.path.join(dot_git, "HEAD"), REF_MAX, "HEAD")
    objects = os.path.join(dot_git, "objects")
    if os.path.islink(objects):
        raise GitRefused(f"{objects} is a symlink (to {os.readlink(objects)[:200]!r}): not followed")
    if head_data is None or not os.path.isdir(objects):
        raise NotARepository(f"not a git repository: {dot_git} has no HEAD or objects directory")
    head, head_ref = _resolve_head(dot_git, head_data)
    index = os.path.join(dot_git, "index")
    try:
        st = os.lstat(index)
        if not stat.S_ISREG(st.st_mode):
            raise GitRefused(f"{index} is {_describe(index, st)}; the repository is not read")
    except FileNotFoundError:
        index = ""
    info = {name: _read_optional(os.path.join(dot_git, "info", name), INFO_MAX, name)
            for name in ("exclude", "attributes")}
    values = _read_config(dot_git)
    config = _check_format(values, dot_git)
    # git's ignore sources other than work-tree .gitignore files, all handed over as data.
    info["exclude"] = b"\n".join(part for part in (info["exclude"], _repo_excludes(values, top), _user_excludes())
                                 if part) or None
    private = tempfile.mkdtemp(prefix="driftscan-git-", dir=_private_base(top))
    try:
        os.makedirs(os.path.join(private, "home"))
        gd = os.path.join(private, "git")
        os.makedirs(os.path.join(gd, "refs"))
        os.makedirs(os.path.join(gd, "info"))
        _link_objects(objects, os.path.join(gd, "objects"))
        with open(os.path.join(gd, "config"), "w", encoding="utf-8") as f:
            sections: dict[str, list[str]] = {}
            for key, value in config.items():
                section, name = key.split(".", 1)
                sections.setdefault(section, []).append(f"\t{name} = {value}\n")
            for section, lines in sections.items():
                f.write(f"[{section}]\n{''.join(lines)}")
        with open(os.path.join(gd, "HEAD"), "w", encoding="ascii") as f:
            # Detached at the commit resolved here; an unborn branch stays unborn.
            f.write(f"{head}\n" if head else f"ref: {head_ref}\n")
        for name, data in info.items():
            if data is not None:
                with open(os.path.join(gd, "info", name), "wb") as f:
                    f.write(data)
        if index:
            for name in os.listdir(dot_git):  # a split index names its shared part by file name
                path = os.path.join(dot_git, name)
                if name.startswith("sharedindex.") and os.path.isfile(path) and not os.path.islink(path):
                    os.symlink(path, os.path.join(gd, name))
        index = index or os.path.join(gd, "index")  # absent: an empty index
        repo = Repository(top, dot_git, private, executable, config, head, head_ref)
        repo._env = _environment(private, gd, top, index)
        return repo
    except BaseException:
        _remove(private)
        raise

"""Dumps left on disk: search what a dump call writes, only where and as far as is plausible.

A finding's ``artifact_pattern`` (see paths.py) says what files a dump call writes. The
pattern comes from the audited code, so it is data, never an instruction: code can name
``/root/.bashrc``, ``/proc/*/root/...`` or ``f"/{a}/{b}/{c}/dbg_{k}.pt"`` (every directory
three levels down). So a pattern is searched only when it is plausible, the search is
bounded, and a file counts only when it could be a dump that code left.

*Too broad* (the finding carries no pattern; ``is_too_broad``): not absolute, uses ``**``, or its
last component has wildcards and no constant letter or digit besides the extension (``*.pt``,
``*_*.npy``, ``*``). ``/tmp/nomla_*_*.pt`` is specific; ``/tmp/*.pt`` — any tensor anyone saved
to /tmp — is not.

*Not searched* (``unsearchable``): ``~`` (whose home it means is the audited code's business:
it is never expanded against the auditor's account); a first directory that is computed
(``/*/...``); more than ``MAX_WILD_DIRS`` computed directory levels; anywhere under system
trees (``/proc``, ``/sys``, ``/dev`` but ``/dev/shm``, ``/etc``, ``/usr``, ``/boot``, ``/bin``,
``/sbin``, ``/lib*``, ``/run``, ``/var/lib``...); a home directory's dotfiles (``/root/.bashrc``,
``/home/u/.config/…``); a dotfile name without a dump-like suffix; a name with the suffix of
code, configuration or keys (``.py``, ``.sh``, ``.conf``, ``.pem``...).

*Counted* (``find_artifacts``): a regular file (not a symlink, FIFO, device or directory, not
executable),
resolving outside the system trees, home dotfiles and the ``exclude`` directories (the
environment's own package directories), that no RECORD owns (``owned``), and modified no
earlier than the code that writes it (``newer_than``); older ones modified no earlier than
``possible_after`` are listed apart as possible dumps (never in a remedy that deletes). The search follows at most
``MAX_WILD_MATCHES`` directories per computed level, visits at most ``MAX_ENTRIES`` directory
entries, counts at most ``MAX_FILES`` files and takes at most ``MAX_SECONDS``; a search cut
short says so (``truncated``). The remedy names every file counted, never a pattern.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}$")
_TOKEN = re.compile(r"\[[^\]]+\]|.", re.S)

MAX_WILD_DIRS = 2  # computed directory levels ("/tmp/*/run_*/x.pt" has two)
MAX_WILD_MATCHES = 64  # directories one computed level may expand to
MAX_ENTRIES = 20_000  # directory entries one search may visit
MAX_FILES = 1_000  # files one pattern may count (each is named in the remedy)
MAX_SECONDS = 5.0  # wall time one search may take

# Trees no dump search enters: the system's own (and kernel views of every process).
SYSTEM_TREES = ("/proc", "/sys", "/dev", "/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib32",
                "/lib64", "/libx32", "/run", "/var/lib", "/var/log", "/var/spool", "/var/cache", "/var/run",
                "/var/mail", "/snap", "/lost+found")
SYSTEM_EXCEPTIONS = ("/dev/shm",)  # a tmpfs where code does write dumps
HOME_TREES = ("/root", "/home")
# Code, configuration and keys: what a save call "naming" them would have a remedy delete.
NEVER_DUMPS = frozenset({".py", ".pyc", ".pyo", ".pyi", ".pyw", ".pyx", ".pxd", ".so", ".dylib", ".dll", ".exe",
                         ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".cmd", ".cfg", ".conf", ".ini", ".toml",
                         ".service", ".timer", ".socket", ".rules", ".desktop", ".plist", ".pem", ".key", ".crt",
                         ".pub", ".env", ".pth-link", ".egg-link"})
DUMP_SUFFIXES = frozenset({".pt", ".pth", ".bin", ".npy", ".npz", ".pkl", ".pickle", ".safetensors", ".ckpt",
                           ".h5", ".hdf5", ".json", ".jsonl", ".txt", ".log", ".csv", ".tsv", ".out", ".dump",
                           ".dat", ".raw", ".joblib", ".msgpack", ".pb", ".onnx", ".trace"})


@dataclass(frozen=True)
class ArtifactGroup:
    """The files one pattern matches now (regular files only, sorted)."""

    pattern: str
    paths: tuple[str, ...]
    total_bytes: int
    too_broad: bool = False
    refused: str | None = None  # why the pattern was not searched (too_broad: "too broad")
    truncated: str | None = None  # why the search stopped early: what it found is listed
    skipped: int = 0  # matching files not counted (not regular, owned, older than the code...)
    # Older than ``newer_than`` but no older than ``possible_after``: listed as possible dumps, never
    # offered for deletion (lint/drifts.py says why), and their bytes.
    possible: tuple[str, ...] = ()
    possible_bytes: int = 0
    too_old: int = 0  # matching regular, unowned files older than both: not counted, said so


def _split_glob(component: str) -> tuple[str, bool]:
    """The constant characters of a glob component, and whether it has any wildcard.
    A one-character bracket (``[*]``, as paths.py escapes) is a literal character."""
    constant: list[str] = []
    wild = False
    for m in _TOKEN.finditer(component):
        token = m.group(0)
        if token in ("*", "?"):
            wild = True
        elif token.startswith("[") and len(token) > 1:
            if len(token) == 3:
                constant.append(token[1])
            else:
                wild = True
        else:
            constant.append(token)
    return "".join(constant), wild


def _is_wild(component: str) -> bool:
    return _split_glob(component)[1]


def _literal(component: str) -> str:
    return _split_glob(component)[0]


def is_too_broad(pattern: str) -> bool:
    # "~" is only recognised here, never expanded: its home is not the auditor's.
    if not pattern.startswith(("/", "~")) or "**" in pattern:
        return True
    last = pattern.rstrip("/").rsplit("/", 1)[-1]
    if not last or last == "~":
        return True  # the root directory, a home itself
    constant, wild = _split_glob(last)
    if not wild:
        return False
    return not any(c.isalnum() for c in _EXTENSION.sub("", constant))


def artifact_pattern(glob_text: str | None) -> str | None:
    """The pattern worth looking for on disk, or None (unknown, relative or too broad)."""
    if not glob_text or not glob_text.startswith(("/", "~")) or is_too_broad(glob_text):
        return None
    return glob_text


def _under(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def _system(path: str) -> bool:
    return any(_under(path, t) for t in SYSTEM_TREES) and not any(_under(path, t) for t in SYSTEM_EXCEPTIONS)


def _home_dotfile(path: str) -> bool:
    """Under a home directory (/root, /home/<user>), in or at a name starting with a dot."""
    parts = path.split("/")
    if _under(path, "/root"):
        rest = parts[2:]
    elif _under(path, "/home") and len(parts) > 3:
        rest = parts[3:]
    else:
        return False
    return any(p.startswith(".") for p in rest)


def _forbidden(path: str) -> str | None:
    if _system(path):
        return "a system directory"
    if _home_dotfile(path):
        return "a home directory's dotfiles"
    return None


def unsearchable(pattern: str) -> str | None:
    """Why ``pattern`` must not be searched at all, or None."""
    if is_too_broad(pattern):
        return "too broad (it could match any file of its kind)"
    if pattern.startswith("~"):
        return "relative to a home directory; whose home is not known, so it is not expanded"
    components = [c for c in pattern.split("/") if c]
    if not components or _is_wild(components[0]):
        return "its top directory is computed"
    if any(c in (".", "..") for c in components):
        return "it climbs directories ('..')"
    wild_dirs = sum(_is_wild(c) for c in components[:-1])
    if wild_dirs > MAX_WILD_DIRS:
        return f"more than {MAX_WILD_DIRS} of its directories are computed"
    # The literal directories before the first computed one: a system tree or a home's
    # dotfiles there is reason enough (/proc/*/root/..., /root/.ssh/...).
    prefix = []
    for c in components[:-1]:
        if _is_wild(c):
            break
        prefix.append(c)
    literal_dir = "/" + "/".join(prefix)
    why = _forbidden(literal_dir) or (_forbidden(literal_dir + "/" + components[-1]) if not wild_dirs else None)
    if why:
        return f"under {why}"
    last = components[-1]
    suffix = os.path.splitext(_literal(last))[1].lower()
    if last.startswith(".") and suffix not in DUMP_SUFFIXES:
        return "a dotfile name, not a dump's"
    if suffix in NEVER_DUMPS:
        return f"a {suffix} file is code or configuration, not a dump"
    return None


class _Budget:
    def __init__(self) -> None:
        self.entries = 0
        self.deadline = time.monotonic() + MAX_SECONDS
        self.stopped: str | None = None  # out of entries or time: nothing more is listed
        self.cut: str | None = None  # a computed level had more directories than are followed

    def spend(self, n: int = 1) -> bool:
        self.entries += n
        if self.entries > MAX_ENTRIES:
            self.stopped = f"stopped after visiting {MAX_ENTRIES} directory entries"
        elif time.monotonic() > self.deadline:
            self.stopped = f"stopped after {MAX_SECONDS:.0f} s"
        return self.stopped is None


def _list(directory: str, component: str, budget: _Budget, dirs_only: bool) -> Iterable[str]:
    """Names in ``directory`` matching the glob ``component`` (hidden names only when the
    component starts with a dot, as glob does), within the budget."""
    hidden = component.startswith(".")
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if not budget.spend():
                    return
                name = entry.name
                if name.startswith(".") and not hidden:
                    continue
                if not fnmatch.fnmatchcase(name, component):
                    continue
                if dirs_only:
                    try:
                        if not entry.is_dir(follow_symlinks=False):
                            continue
                    except OSError:
                        continue
                yield entry.path
    except OSError:
        return


def _candidates(pattern: str, budget: _Budget) -> Iterable[str]:
    components = [c for c in pattern.split("/") if c]
    dirs = ["/"]
    for i, component in enumerate(components):
        last = i == len(components) - 1
        if not _is_wild(component):
            name = _literal(component)
            dirs = [os.path.join(d, name) for d in dirs]
            if last:
                yield from dirs
            continue
        if last:
            for d in dirs:
                yield from _list(d, component, budget, dirs_only=False)
                if budget.stopped:
                    return
            return
        expanded: list[str] = []
        for d in dirs:
            for sub in _list(d, component, budget, dirs_only=True):
                expanded.append(sub)
                if len(expanded) >= MAX_WILD_MATCHES:
                    budget.cut = f"stopped at {MAX_WILD_MATCHES} directories matching {component!r}"
                    break
            if budget.stopped or budget.cut:
                break
        dirs = expanded
        if budget.stopped:
            return


def find_artifacts(pattern: str, *, newer_than: float | None = None, owned: Callable[[str], bool] | None = None,
                   exclude: Iterable[str] = (), possible_after: float | None = None) -> ArtifactGroup | None:
    """The files matching ``pattern`` that count as dumps (see the module docstring); None
    when there are none and nothing was refused or cut short.

    ``newer_than``: the writing code's mtime (seconds); older files are not its dumps.
    ``possible_after``: files older than ``newer_than`` but modified at or after this are listed
    apart, in ``possible`` (never in ``paths``); older ones are only counted (``too_old``).
    ``owned(path)``: whether a RECORD owns the file. ``exclude``: directories whose files never
    count (the environment's own). A pattern not searched has ``refused`` set (and
    ``too_broad`` when that is the reason) and no paths.
    """
    why = unsearchable(pattern)
    if why is not None:
        return ArtifactGroup(pattern, (), 0, too_broad=is_too_broad(pattern), refused=why)
    excluded = [os.path.realpath(e) for e in exclude]
    budget = _Budget()
    paths: list[str] = []
    possible: list[str] = []
    total = skipped = possible_bytes = too_old = 0
    for path in _candidates(pattern, budget):
        if len(paths) + len(possible) >= MAX_FILES:
            budget.stopped = f"stopped at {MAX_FILES} files"
            break
        if not budget.spend(0):
            break
        try:
            st = os.lstat(path)
        except OSError:
            continue  # absent, or removed since it was listed
        real = os.path.realpath(path)  # a directory on the way may be a symlink out of /tmp
        if (not stat.S_ISREG(st.st_mode) or st.st_mode & 0o111  # a dump is never executable
                or _forbidden(real) or any(_under(real, e) for e in excluded)
                or (owned is not None and (owned(path) or owned(real)))):
            skipped += 1
            continue
        if newer_than is not None and st.st_mtime < newer_than:
            skipped += 1
            if possible_after is not None and st.st_mtime >= possible_after:
                possible.append(path)
                possible_bytes += st.st_size
            else:
                too_old += 1
            continue
        paths.append(path)
        total += st.st_size
    truncated = budget.stopped or budget.cut
    if not paths and not possible and not too_old and not truncated:
        return None
    return ArtifactGroup(pattern, tuple(sorted(paths)), total, truncated=truncated, skipped=skipped,
                         possible=tuple(sorted(possible)), possible_bytes=possible_bytes, too_old=too_old)


def recheck(paths: Iterable[str], *, newer_than: float | None = None, owned: Callable[[str], bool] | None = None,
            exclude: Iterable[str] = ()) -> ArtifactGroup:
    """Dump files listed earlier (a checkpoint's list: the code that wrote them may be gone since a
    reinstall) that are still there and still count as dumps by the rules ``find_artifacts``
    applies to a file: absolute, a regular file, not executable, outside the system trees, home
    dotfiles and ``exclude``, not a code or key file by its suffix, owned by no RECORD and, with
    ``newer_than``, not older than it. The list is data like a pattern: at most ``MAX_FILES`` paths
    are looked at (``truncated`` says so), and a path refused is counted in ``skipped``."""
    excluded = [os.path.realpath(e) for e in exclude]
    kept: list[str] = []
    total = skipped = 0
    truncated = None
    for i, path in enumerate(dict.fromkeys(paths)):
        if i >= MAX_FILES:
            truncated = f"stopped at {MAX_FILES} files"
            break
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path or \
                os.path.splitext(path)[1].lower() in NEVER_DUMPS:
            skipped += 1
            continue
        try:
            st = os.lstat(path)
        except (OSError, ValueError):
            continue  # gone: nothing left to say of it
        real = os.path.realpath(path)
        if (not stat.S_ISREG(st.st_mode) or st.st_mode & 0o111 or _forbidden(path) or _forbidden(real)
                or any(_under(real, e) for e in excluded) or (owned is not None and (owned(path) or owned(real)))
                or (newer_than is not None and st.st_mtime < newer_than)):
            skipped += 1
            continue
        kept.append(path)
        total += st.st_size
    return ArtifactGroup("", tuple(sorted(kept)), total, truncated=truncated, skipped=skipped)

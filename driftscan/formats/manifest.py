"""driftscan manifests: a snapshot of a directory that later audits compare against.

Format (``manifest_version`` "1")::

    {"manifest_version": "1", "tool": "driftscan", "created": "2026-01-01T00:00:00+00:00",
     "root": "/abs/dir", "started_ns": 1767225599000000000, "hostname": "gpu-03",
     "files": {"config.json": {"xxh3_128": "<32 hex>", "size": 1234, "mode": 33188,
                               "mtime_ns": 1700000000000000000, "text": "{...}"},
               "model.safetensors": {...},
               "link": {..., "link": "../target"}}}

``started_ns`` (optional; absent from manifests of older driftscan) is the wall clock before the
snapshot looked at its first file: ``diff`` trusts a file whose size, mtime_ns and mode match
its entry, and whose recorded mtime is older than that by more than ``RACY_NS``, without reading
it (``Manifest.trusted``; ``--no-cache`` reads every file). Entries are written one per line,
sorted by path.

``unreadable`` (optional; written only when something was) maps each path the snapshot could
not read or list (``"."``: the root) to the reason: a file ``diff`` finds there is reported as
not compared, not as added. A manifest found in the audited tree is not trusted with it.

``mode`` is the full ``st_mode`` of the file (symlinks followed); ``link`` is present only when
the path was a symlink. A symlink to a directory, a dangling one, and one whose target is outside
the tree (a venv's ``bin/python``) are recorded by their target only: the hash is of the target
string, ``mode`` the link's own — what a tree points at elsewhere is never read, so a snapshot
cannot carry a copy of a file outside it. ``text`` embeds small text files (configs, tokenizer
settings, and in a model directory its code too) so an audit can say *what* changed, not only
*that* it changed. xxh3-128 is used because it runs at memory speed: a manifest of a multi-TB
checkpoint is limited by the disk, not the hash.

The tree walk and the list of bookkeeping paths live here too, so that a manifest written by
``driftscan snapshot`` and an audit against it agree on what belongs to the directory.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple, Protocol, TypeVar
import socket

import xxhash

from ..caches.racy import settled
from ..fs.atomic import write_atomic
from ..core.errors import DriftscanError
from ..fs.reader import (
    LIMITS,
    ByteProgress,
    check_inside,
    inside,
    map_by_size,
    open_regular,
    read_regular,
)
from .jsondiff import as_text
from ..core.values import Problem
from ..fs.paths import printable

MANIFEST_NAME = ".driftscan-manifest.json"
MANIFEST_VERSION = "1"
EMBED_LIMIT = 64 << 10
TEXT_SUFFIXES = (".json", ".txt", ".yaml", ".yml", ".md", ".py", ".jinja", ".toml", ".cfg", ".ini", ".csv")
TEXT_NAMES = (".gitattributes", ".gitignore", "LICENSE", "README", "NOTICE")
# A model repository's code is part of its configuration (custom modeling files), a venv's is
# not: embedding every .py of a 40,000-file venv made a 168 MB snapshot and 0.8 GB of memory.
CODE_SUFFIXES = (".py",)
MAX_TREE_MANIFEST = 64 << 20  # a model directory's own manifest: a few hundred files, a few MB
MAX_MANIFEST = LIMITS["manifest"]  # embedded text is capped per file; a larger manifest is not one of ours



class ManifestError(DriftscanError):
    """A manifest that cannot be used; ``issues`` lists every problem found, not just the first."""

    def __init__(self, path: str, issues: list[str]):
        self.path = path
        self.issues = list(issues)
        super().__init__(f"{printable(path)}: " + "; ".join(self.issues))


class ManifestEntry(NamedTuple):
    """One file of a manifest (a NamedTuple: 40,000 of them are built for each diff, and a frozen
    dataclass took five times as long to build)."""

    xxh3_128: str
    size: int
    mode: int
    mtime_ns: int
    text: str | None = None
    link: str | None = None
    # The inode change time when hashed: no edit can restore it (utime() sets it to now), so a
    # signature with it cannot be forged by ``touch -d``. None in manifests written before.
    ctime_ns: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"xxh3_128": self.xxh3_128, "size": self.size, "mode": self.mode,
                                "mtime_ns": self.mtime_ns}
        if self.text is not None:
            data["text"] = self.text
        if self.link is not None:
            data["link"] = self.link
        if self.ctime_ns is not None:
            data["ctime_ns"] = self.ctime_ns
        return data


@dataclass(frozen=True)
class Manifest:
    path: str
    root: str
    created: str
    files: dict[str, ManifestEntry] = field(default_factory=dict)
    tool: str = "driftscan"
    # The wall clock (ns) before the snapshot looked at its first file; None in a manifest written
    # before it was recorded. A file whose recorded mtime is older than this by more than RACY_NS
    # can be trusted by its signature (see ``trusted``): any later write gives it a newer mtime.
    started_ns: int | None = None
    # Which snapshot file (and root of it) this was loaded from, when that file is older than the
    # racy window: (realpath, size, mtime_ns, ctime_ns, inode, device, root number). What a
    # diff's index (snapshot/treeindex.py) is keyed by; None: no index is kept or used.
    identity: tuple[str | int, ...] | None = field(default=None, compare=False)
    # Paths (relative) the snapshot could not read or list, with the reason: not in ``files``, yet
    # no file found there now is "added" — it was there, unread (``/proc``, a file whose size lies).
    unreadable: dict[str, str] = field(default_factory=dict)

    def trusted(self, entry: ManifestEntry, st: os.stat_result) -> bool:
        """Whether ``st`` (an lstat now) matches ``entry``'s signature closely enough to settle
        the file without hashing it: the same size, mtime_ns, ctime_ns and full st_mode, and an
        mtime and ctime older than the snapshot's start by more than RACY_NS (a file written in the
        same clock tick as it was hashed could change again without its times moving). The ctime
        is what makes it safe: an edit that restores size and mtime (``touch -d``, ``os.utime``)
        still moves the ctime, which nothing but the kernel sets. An entry without ctime_ns (an
        older manifest) is never trusted; neither is a tree copied or restored since (new ctimes:
        everything is hashed). ``diff --no-cache`` hashes every file."""
        started = self.started_ns
        ctime = entry.ctime_ns
        return (started is not None and ctime is not None and ctime == st.st_ctime_ns
                and entry.mtime_ns == st.st_mtime_ns and entry.size == st.st_size and entry.mode == st.st_mode
                and settled(entry.mtime_ns, ctime, started))


# ---- what belongs to a directory -------------------------------------------------------------

def is_bookkeeping(relpath: str) -> bool:
    """Download and version-control bookkeeping, never model content: not hashed, never "added"."""
    parts = relpath.split("/")
    return (relpath == MANIFEST_NAME or ".git" in parts
            or (len(parts) >= 2 and parts[0] == ".cache" and parts[1] == "huggingface"))


def walk_tree(root: str) -> tuple[list[str], list[Problem]]:
    """Every non-directory entry under ``root`` (symlinks not followed), sorted, bookkeeping left out."""
    found, problems = scan_tree(root, lstat=False)
    return sorted(found), problems


def _bookkeeping_file(prefix: str, name: str) -> bool:
    """``is_bookkeeping(prefix + name)`` for a file in a directory that is not bookkeeping itself."""
    return name == ".git" or (not prefix and name == MANIFEST_NAME) or (prefix == ".cache/" and name == "huggingface")


def scan_tree(root: str, *, lstat: bool = True) -> tuple[dict[str, os.stat_result | None], list[Problem]]:
    """The one walk of a tree: every non-directory entry under ``root`` as a "/"-separated relative
    path, with its ``os.lstat`` (one per entry; None if it vanished or cannot be stat'ed; without
    ``lstat``, None for all), bookkeeping (``is_bookkeeping``) left out, in walk order.

    What a plain ``os.walk`` of ``root`` skipping ``is_bookkeeping`` lists, without its per-directory
    ``islink`` and ``relpath``: a directory's type comes from the listing (``d_type``), a symlink
    (to a directory too) is an entry and never followed. A directory that cannot be listed is a
    Problem; the walk goes on."""
    found: dict[str, os.stat_result | None] = {}
    problems: list[Problem] = []
    scan_dirs(root, [(root, "")], found, problems, lstat=lstat)
    return found, problems


def scan_dirs(root: str, stack: list[tuple[str, str]], found: dict[str, os.stat_result | None],
              problems: list[Problem], *, lstat: bool = True, expand: int = 0,
              dirs: dict[str, tuple[int, ...] | None] | None = None) -> list[tuple[str, str]]:
    """``scan_tree``'s walk of the directories in ``stack`` (``(path, relative prefix)`` pairs,
    depth first), into ``found`` and ``problems``. With ``expand``, breadth first and only until
    that many directories are waiting: those are returned, unlisted (to be shared out). With
    ``dirs``, each directory's signature (``treeindex.dir_signature`` of its stat, None if it
    cannot be taken) is put there under its prefix before it is listed."""
    do_lstat = os.lstat if lstat else None
    join = os.path.join
    while stack:
        if expand and len(stack) >= expand:
            return stack
        dirpath, prefix = stack.pop(0) if expand else stack.pop()
        subdirs = []
        if dirs is not None:
            try:
                dst = os.stat(dirpath)
                dirs[prefix] = (dst.st_mtime_ns, dst.st_ctime_ns, dst.st_ino, dst.st_dev, dst.st_mode)
            except (OSError, ValueError):
                dirs[prefix] = None
        try:
            with os.scandir(dirpath) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    if is_dir:
                        subdirs.append(name)
                        continue
                    if _bookkeeping_file(prefix, name):
                        continue
                    st = None
                    if do_lstat is not None:
                        try:
                            st = do_lstat(join(dirpath, name))
                        except (OSError, ValueError):
                            st = None
                    found[prefix + name] = st
        except OSError as exc:
            problems.append(Problem(exc.filename or root, f"cannot list directory: {exc.strerror or exc}"))
            continue
        subdirs.sort()
        for name in (subdirs if expand else reversed(subdirs)):
            rel = prefix + name
            if not is_bookkeeping(rel):
                stack.append((join(dirpath, name), rel + "/"))
    return stack


def is_text_name(relpath: str, code: bool = True) -> bool:
    """Whether a file of this name is embedded when small: configs always, code if ``code``."""
    name = relpath.rsplit("/", 1)[-1]
    if not code and name.lower().endswith(CODE_SUFFIXES):
        return False
    return name.lower().endswith(TEXT_SUFFIXES) or name in TEXT_NAMES


# ---- building ----------------------------------------------------------------------------------

def link_only_entry(path: str, target: str) -> ManifestEntry:
    """A symlink to a directory, or a dangling one: only its target can be recorded."""
    st = os.lstat(path)
    raw = target.encode("utf-8", "surrogateescape")
    return ManifestEntry(xxhash.xxh3_128(raw).hexdigest(), len(raw), st.st_mode, st.st_mtime_ns, None, target)


def is_link_only(entry: ManifestEntry) -> bool:
    return stat.S_ISLNK(entry.mode)


def read_regular_fd(path: str, lst: os.stat_result) -> tuple[int, os.stat_result]:
    """An open descriptor of ``path``, which ``lst`` (its lstat) says is a regular file, and its
    fstat. O_NOFOLLOW: a file swapped for a symlink since the lstat is refused, not followed out;
    the fstat refuses one swapped for anything else (a device node is never opened: its type was
    known from the lstat before the open)."""
    return open_regular(path, follow=False, lst=lst)


HASH_BUFFER = 128 << 10  # xxh3 runs at memory speed: a buffer that stays in the CPU's cache, reused
_LOCAL = threading.local()


def _buffer() -> tuple[bytearray, memoryview]:
    """This thread's hashing buffer (hashing threads and a forked child each have their own)."""
    got = getattr(_LOCAL, "buffer", None)
    if got is None:
        buffer = bytearray(HASH_BUFFER)
        got = _LOCAL.buffer = (buffer, memoryview(buffer))
    return got


def hash_fd(fd: int, size: int, counter: Callable[[int], None] | None, keep: bool) -> tuple[str, bytes | None]:
    """The xxh3-128 of an open file of ``size`` bytes (from its fstat), and its content if ``keep``.

    A small file (or one to keep) is read in one read of its size (plus one byte: a file that grew
    is read on). A larger one through this thread's ``HASH_BUFFER``: with a 4 MiB buffer, or one
    the size of the file, every byte went to memory and back before xxh3 saw it (the kernel's
    copy and the hash both at memory speed: 1.7 s of system time for a 2 GB venv, where
    ``xxh128sum``'s 64 KiB buffer took 0.9 s)."""
    if size < HASH_BUFFER or keep:
        data = os.read(fd, size + 1)
        if len(data) != size:  # it grew, or shrank: read to the end, as the size no longer says
            pieces = [data]
            while data:
                data = os.read(fd, 1 << 16)
                pieces.append(data)
            data = b"".join(pieces)
        if counter is not None:
            counter(len(data))
        return xxhash.xxh3_128_hexdigest(data), (data if keep else None)
    hasher = xxhash.xxh3_128()
    buffer, view = _buffer()
    readv, update = os.readv, hasher.update
    done = 0
    while n := readv(fd, [buffer]):
        update(view[:n])
        done += n
        if counter is not None and done >= (16 << 20):
            counter(done)
            done = 0
    if counter is not None and done:
        counter(done)
    return hasher.hexdigest(), None


def _entry(root: str, relpath: str, embed_limit: int, counter: Callable[[int], None] | None,
           embed_code: bool = True, contain: str | None = None, lst: os.stat_result | None = None) -> ManifestEntry:
    """The entry of one file; ``lst``: its lstat if the walk took it (else taken here)."""
    path = os.path.join(root, relpath)
    st = os.lstat(path) if lst is None else lst
    link = None
    if stat.S_ISLNK(st.st_mode):
        link = os.readlink(path)
        real = os.path.realpath(path)
        if not os.path.isfile(real) or not inside(contain or root, real):
            # e.g. a venv's lib64 -> lib; and a link out of the tree (bin/python -> /usr/bin/python3):
            # only its target is recorded, its content is not the tree's and is never read.
            return link_only_entry(path, link)
        path, st = real, os.stat(real)  # a link inside the tree: its content is recorded
    fd, st = read_regular_fd(path, st)
    try:
        keep = st.st_size <= embed_limit and is_text_name(relpath, embed_code)
        digest, kept = hash_fd(fd, st.st_size, counter, keep)
    finally:
        os.close(fd)
    text = as_text(kept) if kept is not None and len(kept) <= embed_limit else None
    return ManifestEntry(digest, st.st_size, st.st_mode, st.st_mtime_ns, text, link, st.st_ctime_ns)


REDO = object()  # a mapper's decode: "the child did not settle this item, run it here"


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_Portable = TypeVar("_Portable")


class Mapper(Protocol):
    """How ``build_manifest`` (and the model directory audit) run ``func`` over ``items``:
    ``in_threads``, or snapshot/run.py's ``forked_mapper``."""

    def __call__(self, func: Callable[[_Item], _Result], child_func: Callable[[_Item], _Portable],
                 decode: Callable[[_Portable], object], items: list[_Item], sizes: list[int],
                 jobs: int) -> list[_Result]: ...


def in_threads(func: Callable[[_Item], _Result], child_func: Callable[[_Item], _Portable],
               decode: Callable[[_Portable], object], items: list[_Item], sizes: list[int],
               jobs: int) -> list[_Result]:
    """The default mapper: ``[func(item) for item in items]``, large items in a thread pool
    (``fileio.map_by_size``). Another mapper (snapshot/run.py's) may run ``child_func`` over a
    share of the small items in a forked process, whose results ``decode`` turns into what
    ``func`` would have returned (or REDO: ``func`` runs again here)."""
    return map_by_size(func, items, sizes, jobs)


def build_manifest(root: str, *, embed_limit: int = EMBED_LIMIT, embed_code: bool = True, jobs: int = 2,
                   progress: Callable[[int, int], None] | None = None,
                   on_error: Callable[[Problem], None] | None = None,
                   contain: str | None = None, mapper: Mapper = in_threads) -> Iterator[tuple[str, ManifestEntry]]:
    """Hash every file under ``root`` (in ``jobs`` threads); yield ``(relpath, entry)`` sorted by path.

    One walk, one lstat per file (taken by the walk; a symlink followed inside the tree costs a
    stat of its target), then an open, an fstat and the reads. A symlink whose target is outside
    ``contain`` (default ``root``; a hub cache snapshot's is its repository folder) is recorded by
    its target only. Files that cannot be read go to ``on_error``; without it, a ManifestError
    listing them all is raised after the walk (a manifest silently missing files would later
    call them "added").
    """
    root = os.path.abspath(root)
    contain = os.path.abspath(contain) if contain else root
    walked, problems = scan_tree(root)
    relpaths = sorted(walked)
    sizes = []
    for rel in relpaths:
        st = walked[rel]
        if st is not None and stat.S_ISLNK(st.st_mode):
            # What will be hashed: a link out of the tree is not (its target's size is not ours).
            path = os.path.join(root, rel)
            try:
                sizes.append(os.stat(path).st_size if inside(contain, path) else 0)
            except OSError:
                sizes.append(0)
        else:
            sizes.append(st.st_size if st is not None else 0)
    meter = ByteProgress(progress, sum(sizes))  # called from the hashing threads, one at a time
    counter = meter.add if progress is not None else None

    def one(rel: str, count: Callable[[int], None] | None = counter) -> tuple[ManifestEntry | None, str]:
        try:
            return _entry(root, rel, embed_limit, count, embed_code, contain, walked[rel]), ""
        except (OSError, ValueError) as exc:
            return None, (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)

    # in a forked child: no progress (the parent draws it), plain tuples
    def portable(rel: str) -> tuple[tuple[Any, ...] | None, str]:
        entry, error = one(rel, None)
        return (tuple(entry) if entry is not None else None, error)

    def decode(value: tuple[tuple[Any, ...] | None, str]) -> tuple[ManifestEntry | None, str]:
        if counter is not None and value[0] is not None:
            counter(value[0][1])
        return (ManifestEntry._make(value[0]) if value[0] is not None else None, value[1])

    for rel, (entry, error) in zip(relpaths, mapper(one, portable, decode, relpaths, sizes, jobs)):
        if entry is not None:
            yield rel, entry
        else:
            problems.append(Problem(os.path.join(root, rel), f"cannot read: {error}"))
    if on_error is not None:
        for problem in problems:
            on_error(problem)
    elif problems:
        raise ManifestError(root, [f"{printable(p.path)}: {p.message}" for p in problems])


def unreadable_of(root: str, problems: Iterable[Problem]) -> dict[str, str]:
    """What a snapshot of ``root`` could not read or list, relative path → reason."""
    root = os.path.abspath(root)
    out: dict[str, str] = {}
    for p in problems:
        path = os.path.abspath(p.path)
        if path != root and path.startswith(root.rstrip(os.sep) + os.sep):
            out[os.path.relpath(path, root).replace(os.sep, "/")] = p.message
        elif path == root:
            out["."] = p.message
    return out


def write_manifest(root: str, files_iter: Iterable[tuple[str, ManifestEntry]], output: str, *,
                   started_ns: int | None = None, unreadable: Callable[[], dict[str, str]] | None = None,
                   prefix_free: Callable[[], dict[str, dict[str, str]]] | None = None) -> Manifest:
    """Write a manifest atomically (temp file in the same directory, then ``os.replace``).

    ``started_ns``: the wall clock before the first file was looked at (``Manifest.started_ns``);
    by default the time before ``files_iter`` is consumed, right for ``build_manifest``, which
    looks at nothing until it is iterated. ``prefix_free``: the files that hold the root's own path
    with their digests without it (``snapshot/ownpath.py``), written as ``prefix_free`` when any."""
    root = os.path.abspath(root)
    started = time.time_ns() if started_ns is None else started_ns
    files = dict(files_iter)
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    doc = {"manifest_version": MANIFEST_VERSION, "tool": "driftscan", "created": created, "root": root,
           "started_ns": started, "hostname": hostname(), "files": files}
    missed = unreadable() if unreadable is not None else {}  # known once ``files_iter`` is consumed
    if missed:  # absent when everything was read: such a manifest is byte for byte as before
        doc["unreadable"] = missed
    own = prefix_free() if prefix_free is not None else {}
    if own:  # absent too when no file holds the root's path
        doc["prefix_free"] = own
    write_atomic(output, json_lines(doc), mode=0o644)
    return Manifest(os.path.abspath(output), root, created, files, started_ns=started, unreadable=missed)


def hostname() -> str:
    """This machine's name, for a snapshot (``socket`` imported here: a diff, which only reads
    snapshots, does not pay for it)."""
    return socket.gethostname()


def write_members(root: str, members: dict[str, str], output: str, started_ns: int,
                  unreadable: dict[str, str] | None = None,
                  prefix_free: dict[str, dict[str, str]] | None = None) -> None:
    """``write_manifest`` of entries already formatted as JSON members (``format_member``), the
    same bytes: for a snapshot whose entries were made and formatted in two processes."""
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    doc = {"manifest_version": MANIFEST_VERSION, "tool": "driftscan", "created": created,
           "root": os.path.abspath(root), "started_ns": started_ns, "hostname": hostname(),
           "files": members}
    if unreadable:
        doc["unreadable"] = unreadable
    if prefix_free:
        doc["prefix_free"] = prefix_free
    write_atomic(output, json_lines(doc, formatted=True), mode=0o644)


_PLAIN_NAME = re.compile(r'[ !#-\[\]-~]*')  # printable ASCII but '"' and '\\': json.dumps leaves it as it is


def format_member(rel: str, entry: ManifestEntry) -> str:
    """``json.dumps(rel): json.dumps(entry.to_json(), sort_keys=True)``, formatted directly for
    the common entry (a plain name, no text, no link): byte for byte what json.dumps writes
    (a test checks both), at a fifth of the cost."""
    if entry.text is None and entry.link is None and _PLAIN_NAME.fullmatch(rel):
        ctime = f'"ctime_ns": {entry.ctime_ns:d}, ' if entry.ctime_ns is not None else ""
        return (f'"{rel}": {{{ctime}"mode": {entry.mode:d}, "mtime_ns": {entry.mtime_ns:d}, "size": {entry.size:d},'
                f' "xxh3_128": "{entry.xxh3_128}"}}')
    return f"{json.dumps(rel)}: {json.dumps(entry.to_json(), sort_keys=True)}"


def json_lines(doc: dict[str, Any], nested: str = "files", formatted: bool = False) -> Iterator[str]:
    """``doc`` as JSON, in pieces, with keys sorted and one member of ``doc[nested]`` (a dict of
    ManifestEntry) per line; json's C encoder for everything else (``indent=`` takes the
    pure-Python one: 1 s for 40,000 files). ASCII escapes keep undecodable names intact.
    ``formatted``: ``doc[nested]`` maps each path to its member already formatted (``format_member``)."""
    yield "{\n"
    keys = sorted(doc)
    for i, key in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        value = doc[key]
        if key == nested and isinstance(value, dict) and value:
            yield f" {json.dumps(key)}: {{\n"
            members = sorted(value)
            if formatted:  # three pieces: "  " + joined + "\n" would copy 14 MB twice more
                yield "  "
                yield ",\n  ".join(map(value.__getitem__, members))
                yield "\n"
            else:
                yield "".join([f"  {format_member(m, value[m])},\n" for m in members[:-1]])
                yield f"  {format_member(members[-1], value[members[-1]])}\n"
            yield f" }}{comma}\n"
        else:
            yield f" {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}\n"
    yield "}\n"


# ---- reading -----------------------------------------------------------------------------------

def _check_relpath(rel: str) -> str | None:
    if not rel or rel.startswith("/") or "\\" in rel or not _os_string(rel):
        return "is not a relative '/'-separated path"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return "has an empty, '.' or '..' component"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_HEX32 = re.compile(r"[0-9a-f]{32}")


MAX_ISSUES = 20


def _shown(value: str, limit: int = 120) -> str:
    return repr(value) if len(value) <= limit else repr(value[:limit]) + "…"


def _value(value: Any) -> str:
    """A value from the document, for an error message: short, and never a recursive repr."""
    if isinstance(value, str):
        return _shown(value)
    if value is None or isinstance(value, (int, float)):
        return repr(value)
    return f"a JSON {'object' if isinstance(value, dict) else 'array' if isinstance(value, list) else 'value'}"


def _short(exc: BaseException) -> str:
    """An error message for one line: RecursionError's says nothing a user can act on."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)


def _os_string(value: str) -> bool:
    """Whether a path or link target from a manifest can be handed to the OS: lone surrogates
    other than os.fsdecode's escapes (U+DC80..U+DCFF), and NUL, cannot."""
    if "\0" in value:
        return False
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _entry_from(rel: str, raw: Any, issues: list[str]) -> ManifestEntry | None:
    where = f"files[{_shown(rel)}]"
    if not isinstance(raw, dict):
        issues.append(f"{where} is not an object")
        return None
    before = len(issues)
    digest: Any = raw.get("xxh3_128")
    if not (isinstance(digest, str) and _HEX32.fullmatch(digest)):
        issues.append(f"{where}.xxh3_128 is not 32 lowercase hex digits")
    for key, bound in (("size", 1 << 63), ("mode", 1 << 32), ("mtime_ns", 1 << 63)):
        # Bounded as the OS's own fields are: stat.S_IFMT and float() refuse larger ones.
        if not _is_int(raw.get(key)) or not 0 <= raw[key] < bound:
            issues.append(f"{where}.{key} is not an integer from 0 to {bound - 1}")
    if "ctime_ns" in raw and not (_is_int(raw["ctime_ns"]) and 0 <= raw["ctime_ns"] < 1 << 63):
        issues.append(f"{where}.ctime_ns is not an integer from 0 to {(1 << 63) - 1}")
    for key in ("text", "link"):
        if key in raw and not isinstance(raw[key], str):
            issues.append(f"{where}.{key} is not a string")
    if isinstance(raw.get("text"), str) and not _utf8(raw["text"]):
        issues.append(f"{where}.text is not valid Unicode text (lone surrogates)")
    if isinstance(raw.get("link"), str) and not _os_string(raw["link"]):
        issues.append(f"{where}.link is not a path the OS can take")
    if len(issues) > before:
        return None
    return ManifestEntry(digest, raw["size"], raw["mode"], raw["mtime_ns"], raw.get("text"), raw.get("link"),
                         raw.get("ctime_ns"))


def read_manifest(path: str, doc: Any = None, *, root: str | None = None) -> Manifest:
    """Read and validate a manifest; raises ManifestError listing every problem found.
    ``doc``: the file's JSON, if the caller has parsed it already. ``root``: for a manifest found
    in an audited tree, the directory it must not lead out of (a symlink elsewhere is not read).

    The last few manifests read are kept, keyed by the file's identity (device, inode, size,
    mtime): ``diff`` asks for the same one as a snapshot and again as a model directory's
    reference, and a 40,000-file manifest takes ~0.4 s to parse and check."""
    if root is not None:
        try:
            check_inside(root, path)  # before the memo: it may hold what a user named through this path
        except OSError as exc:
            raise ManifestError(path, [f"cannot read: {exc.strerror or exc}"]) from None
    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        key = None
    if key is not None and key in _READ:
        return _READ[key]
    if doc is None:
        try:
            # One found in the tree is the tree's: it may not make the audit parse a GiB of JSON.
            limit, what = (MAX_MANIFEST, "manifest") if root is None else (MAX_TREE_MANIFEST, "manifest in a tree")
            data = read_regular(path, limit, what=what, root=root)
        except OSError as exc:
            raise ManifestError(path, [f"cannot read: {exc.strerror or exc}"]) from None
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise ManifestError(path, [f"not valid JSON: {_short(exc)}"]) from None
    manifest = manifest_from(path, doc)
    if key is not None:
        while len(_READ) >= 2:
            _READ.pop(next(iter(_READ)))
        _READ[key] = manifest
    return manifest


_READ: dict[tuple[str, int, int, int, int, int], Manifest] = {}


def manifest_from(path: str, doc: Any) -> Manifest:
    """Validate a parsed manifest document (read from ``path``); raises ManifestError."""
    if not isinstance(doc, dict):
        raise ManifestError(path, ["not a JSON object"])
    issues: list[str] = []
    if doc.get("manifest_version") != MANIFEST_VERSION:
        issues.append(f"manifest_version is {_value(doc.get('manifest_version'))}, this driftscan reads"
                      f" {MANIFEST_VERSION!r}")
    if doc.get("tool") != "driftscan":
        issues.append(f"tool is {_value(doc.get('tool'))}, not 'driftscan'")
    for key in ("created", "root"):
        if not isinstance(doc.get(key), str):
            issues.append(f"{key} is missing or not a string")
    if isinstance(doc.get("created"), str) and not (len(doc["created"]) <= 64 and doc["created"].isprintable()):
        issues.append(f"created {_shown(doc['created'], 64)} is not a timestamp")  # it is quoted in evidence
    if isinstance(doc.get("root"), str) and not (_os_string(doc["root"]) and os.path.isabs(doc["root"])):
        issues.append("root is not an absolute path the OS can take")
    raw_files = doc.get("files")
    files: dict[str, ManifestEntry] | None = None
    if not isinstance(raw_files, dict):
        issues.append("files is missing or not an object")
    elif not issues:
        files = _plain_files(raw_files)
    if files is None and isinstance(raw_files, dict):
        files = {}
        for rel, raw in raw_files.items():
            bad = _check_relpath(rel)
            if bad:
                issues.append(f"files key {_shown(rel)} {bad}")
                continue
            entry = _entry_from(rel, raw, issues)
            if entry is not None:
                files[rel] = entry
    if issues:
        if len(issues) > MAX_ISSUES:  # one line for the CLI, not one per hostile entry
            issues = issues[:MAX_ISSUES] + [f"{len(issues) - MAX_ISSUES} more problems"]
        raise ManifestError(path, issues)
    unreadable = _unreadable_from(doc.get("unreadable", {}), issues)
    if issues:
        raise ManifestError(path, issues[:MAX_ISSUES])
    started = doc.get("started_ns")  # optional, and only ever a reason to trust less: never an issue
    started = started if type(started) is int and 0 <= started < 1 << 63 else None
    return Manifest(os.path.abspath(path), doc["root"], doc["created"], files or {}, doc["tool"], started,
                    unreadable=unreadable)


def _unreadable_from(raw: Any, issues: list[str]) -> dict[str, str]:
    """The optional ``unreadable`` object: relative path (or ".") → reason, both strings."""
    if not isinstance(raw, dict):
        issues.append("unreadable is not an object")
        return {}
    out: dict[str, str] = {}
    for rel, why in raw.items():
        bad = _check_relpath(rel) if rel != "." else None
        if bad or not isinstance(why, str):
            issues.append(f"unreadable key {_shown(rel)} {bad or 'has a reason that is not a string'}")
            continue
        out[rel] = why[:500]
    return out


_BAD_PARTS = ("", ".", "..")
_HEX = re.compile(r"[0-9a-f]*")


def _plain_files(raw_files: dict[str, Any]) -> dict[str, ManifestEntry] | None:
    """The entries of ``raw_files`` when every one is plainly valid, else None (and the full check
    in ``manifest_from`` runs, naming every problem). Only ever accepts what that check accepts,
    building the same entries: each test here implies the one it stands for (exact types where
    the full check takes subclasses too, a relpath's directory checked once for all its files, the
    hex of all digests checked in one match). 0.1 s for 40,000 entries, where the full check took 0.4 s."""
    files: dict[str, ManifestEntry] = {}
    good_dirs: set[str] = set()
    digests: list[str] = []
    b63, b32 = 1 << 63, 1 << 32
    new_entry = tuple.__new__  # ManifestEntry(...) without the Python frame of its __new__
    every_name = "/".join(raw_files)  # the characters no name may hold, looked for in all at once
    if "\\" in every_name or "\0" in every_name:
        return None
    ascii_names = every_name.isascii()
    for rel, raw in raw_files.items():
        folder, sep, name = rel.rpartition("/")
        if name in _BAD_PARTS or not (ascii_names or name.isascii() or _os_string(name)):
            return None
        if sep and folder not in good_dirs:
            if _check_relpath(folder) is not None:
                return None
            good_dirs.add(folder)
        if type(raw) is not dict:
            return None
        digest, size, mode, mtime = raw.get("xxh3_128"), raw.get("size"), raw.get("mode"), raw.get("mtime_ns")
        if not (type(digest) is str and len(digest) == 32 and type(size) is int and type(mode) is int
                and type(mtime) is int and 0 <= size < b63 and 0 <= mode < b32 and 0 <= mtime < b63):
            return None
        text = link = ctime = None
        if len(raw) == 5 and "ctime_ns" in raw:  # the usual entry: those four and ctime_ns
            ctime = raw["ctime_ns"]
            if not (type(ctime) is int and 0 <= ctime < b63):
                return None
        elif len(raw) > 4:  # four keys and all four above: no text, link or ctime_ns is there
            if "ctime_ns" in raw:
                ctime = raw["ctime_ns"]
                if not (type(ctime) is int and 0 <= ctime < b63):
                    return None
            if "text" in raw:
                text = raw["text"]
                if type(text) is not str or not (text.isascii() or _utf8(text)):
                    return None
            if "link" in raw:
                link = raw["link"]
                if type(link) is not str or not _os_string(link):
                    return None
        digests.append(digest)
        files[rel] = new_entry(ManifestEntry, (digest, size, mode, mtime, text, link, ctime))
    if not _HEX.fullmatch("".join(digests)):
        return None
    return files

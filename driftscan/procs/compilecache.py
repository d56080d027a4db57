"""Compile-cache entries built from files of the environment that changed since (docs/procs.md,
"Compile caches").

What each cache records of its sources, as their own code writes it:

- vLLM's ``torch_compile_cache/<hash>/rank_<i>_<j>[/<prefix>]/``: ``computation_graph.py``, the
  split FX graph's ``print_readable()``, whose comments name the source line each node was traced
  from (``# File: /abs/path.py:12 in forward, code: ...``). ``cache_key_factors.json``'s
  ``code_hash`` covers every traced file at once, so it cannot say which one changed.
- Triton's ``<cache>/<key>/``: one directory per compiled kernel, ``__grp__<name>.json`` naming its
  files; the MLIR text (``.ttir``, ``.ttgir``, ``.source``) is printed with debug locations
  (``loc("/abs/path.py":12:3)``), and ``.llir``/``.ptx`` name the file too. Inductor keeps its
  Triton kernels so, below ``<inductor cache>/triton/``.
- Inductor's own entries (``fxgraph/``, ``aotautograd/``: pickles) and its generated ``*.py``
  (node and ATen names only) record no source file: nothing is read of them.

No cache records a file's content digest, so the only signals are the file's own: gone, or
changed (ctime) after the entry was written. Everything below a cache directory is data: nothing
is unpickled, imported or run, nothing below a cache directory is followed through a symlink,
every read is capped, and the walk is bounded in names, depth and bytes. Nothing is deleted: each
entry's remedy is the ``rm -r`` line a person may run.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..fs.reader import os_error, read_head
from .model import CacheSignal, CompileCache as CacheKind, CompileCacheEntryOut, CompileCachesOut
from .scan import Environment

MAX_NAMES = 200_000  # directory entries looked at, over every cache directory
MAX_DEPTH = 8  # directories below a cache directory descended into
MAX_READ = 256 << 20  # bytes read, over every file of every cache
GRAPH_HEAD = 16 << 20  # bytes of a computation_graph.py read
IR_HEAD = 4 << 20  # bytes of one Triton IR file read
FILES_SHOWN = 20  # source files an entry lists (its count says how many)

VLLM_MARKER = "computation_graph.py"
TRITON_GROUP = "__grp__"
# The Triton files that name their source, in the order read: the first that names one settles it.
TRITON_SOURCES = (".ttir", ".ttgir", ".source", ".llir", ".ptx")

# FX's stack-trace summary, a comment line: "# File: PATH:LINE in NAME, code: ..." (older torch:
# "# File: PATH:LINE, code: ..."), after an optional "Annotation: {...}". Every pattern here scans
# linearly: no class can cross the delimiter that ends it, so a hostile file costs one pass.
_FX_MARK = b"File: /"
_FX_TAIL = re.compile(rb":(\d+)(?: in [^:,\n]*)?, code: ")
_MLIR_LOC = re.compile(rb'loc\("(/[^"\n]{1,4096})":\d+:\d+\)')
_PTX_FILE = re.compile(rb'^[ \t]*\.file[ \t]+\d+[ \t]+"(/[^"\n]{1,4096})"', re.MULTILINE)
_LLVM_FILE = re.compile(rb'!DIFile\(filename: "([^"\n]{1,4096})", directory: "([^"\n]{0,4096})"\)')


@dataclass(frozen=True)
class CacheDir:
    """A directory a compile cache keeps its entries below."""

    label: str  # what it is, for people: "vllm", "triton", "inductor", "given"
    path: str


def default_cache_dirs(environ: Mapping[str, str] | None = None, home: str | None = None) -> list[CacheDir]:
    """Where vLLM, Inductor and Triton keep their caches by default, as driftscan's own environment
    variables place them (``VLLM_CACHE_ROOT``, ``XDG_CACHE_HOME``, ``TORCHINDUCTOR_CACHE_DIR``,
    ``TRITON_CACHE_DIR``, ``TRITON_HOME``), never a process's: a server started with other values
    keeps its cache elsewhere, which ``--compile-cache DIR`` names."""
    env = os.environ if environ is None else environ
    home = home or os.path.expanduser("~")
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    vllm_root = os.path.expanduser(env.get("VLLM_CACHE_ROOT") or os.path.join(xdg, "vllm"))
    inductor = env.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(tempfile.gettempdir(),
                                                                  "torchinductor_" + _user())
    triton = (env.get("TRITON_CACHE_DIR") or "").strip() or os.path.join(env.get("TRITON_HOME") or home,
                                                                         ".triton", "cache")
    return [CacheDir("vllm", os.path.join(vllm_root, "torch_compile_cache")), CacheDir("inductor", inductor),
            CacheDir("triton", triton)]


def _user() -> str:
    # Inductor's default directory name: getpass.getuser() with path separators replaced.
    try:
        import getpass  # only when no TORCHINDUCTOR_CACHE_DIR names the directory
        return re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
    except (KeyError, OSError, ImportError):
        return str(os.getuid())


@dataclass
class _Budget:
    names: int
    read: int
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


@dataclass(frozen=True)
class _Entry:
    kind: CacheKind
    path: str
    names: tuple[str, ...]


def scan_compile_caches(env: Environment, dirs: Iterable[CacheDir], *, changed: Iterable[str] | None = None
                        ) -> CompileCachesOut:
    """The entries of the compile caches in ``dirs`` built from a file of ``env`` that is gone or
    changed since the entry was written, each with its size and the ``rm -r`` line that removes
    it (never run). ``changed``: when given (the files an audit found drifted or restored),
    only entries built from one of them are reported."""
    budget = _Budget(MAX_NAMES, MAX_READ)
    wanted = None if changed is None else {os.path.normpath(os.path.abspath(p)) for p in changed}
    roots = _env_roots(env)
    out = CompileCachesOut()
    seen: set[str] = set()
    for d in dirs:
        top = os.path.normpath(os.path.abspath(os.path.expanduser(d.path)))
        try:
            st = os.stat(top)  # the cache directory itself may be a symlink (to a larger disk); nothing below it
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or top in seen:
            continue
        seen.add(top)
        out.dirs.append(top)
        for entry in _entries(top, budget):
            out.entries_read += 1
            found = _check(entry, roots, wanted, budget)
            if found is not None:
                out.entries.append(found)
    out.not_checked = budget.notes
    return out


def _env_roots(env: Environment) -> tuple[str, ...]:
    return tuple(dict.fromkeys(r.rstrip(os.sep) + os.sep for r in (*env.prefixes, *env.site_packages)))


def _entries(top: str, budget: _Budget) -> Iterator[_Entry]:
    """Every cache entry below ``top``: a directory holding ``computation_graph.py`` (vLLM) or a
    ``__grp__*.json`` (Triton); not descended into further. Symlinks are never followed."""
    stack: list[tuple[str, int]] = [(top, 0)]
    while stack:
        path, depth = stack.pop()
        names, subdirs = _listdir(path, budget)
        if names is None:
            return
        if VLLM_MARKER in names:
            yield _Entry(CacheKind.VLLM, path, tuple(names))
            continue
        if any(n.startswith(TRITON_GROUP) and n.endswith(".json") for n in names):
            yield _Entry(CacheKind.TRITON, path, tuple(names))
            continue
        if depth >= MAX_DEPTH:
            if subdirs:
                budget.note(f"directories deeper than {MAX_DEPTH} below a cache directory (first: {path})")
            continue
        stack += [(os.path.join(path, s), depth + 1) for s in sorted(subdirs, reverse=True)]


def _listdir(path: str, budget: _Budget) -> tuple[list[str] | None, list[str]]:
    """(names, subdirectories not symlinks) of ``path``, charged to the budget; ``(None, [])`` once
    the budget is spent."""
    names: list[str] = []
    subdirs: list[str] = []
    try:
        with os.scandir(path) as it:
            for e in it:
                if budget.names <= 0:
                    budget.note(f"names past the first {MAX_NAMES} of the compile caches")
                    return None, []
                budget.names -= 1
                names.append(e.name)
                try:
                    if e.is_dir(follow_symlinks=False):
                        subdirs.append(e.name)
                except OSError:
                    pass
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            budget.note(f"{path}: {os_error(exc)}")
    return names, subdirs


def _check(entry: _Entry, roots: tuple[str, ...], wanted: set[str] | None,
           budget: _Budget) -> CompileCacheEntryOut | None:
    built_from = VLLM_MARKER if entry.kind is CacheKind.VLLM else _triton_metadata(entry.names)
    try:
        built = os.lstat(os.path.join(entry.path, built_from)).st_mtime_ns if built_from else None
    except OSError:
        built = None
    if built is None:
        return None
    sources = _vllm_sources(entry, budget) if entry.kind is CacheKind.VLLM else _triton_sources(entry, budget)
    inside = sorted({p for p in sources if _inside(p, roots) and (wanted is None or p in wanted)})
    deleted: list[str] = []
    changed: list[str] = []
    for p in inside:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            deleted.append(p)
            continue
        except OSError:
            continue
        if st.st_ctime_ns > built:
            changed.append(p)
    files, signal = (deleted, CacheSignal.DELETED) if deleted else (changed, CacheSignal.CHANGED)
    if not files:
        return None
    size, complete = _size(entry.path, budget)
    return CompileCacheEntryOut(
        cache=entry.kind, path=entry.path, bytes=size, size_complete=complete, built_at=built / 1e9,
        signal=signal, files=files[:FILES_SHOWN], count=len(files), sources=len(inside),
        kernel=_kernel_name(entry) if entry.kind is CacheKind.TRITON else None,
        remedy=f"rm -r -- {shlex.quote(entry.path)}")


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return path.startswith(roots)


def _triton_metadata(names: Sequence[str]) -> str | None:
    """The kernel's metadata file (``<name>.json``, the group's own name), or the group file."""
    groups = sorted(n for n in names if n.startswith(TRITON_GROUP) and n.endswith(".json"))
    meta = groups[0][len(TRITON_GROUP):] if groups else None
    return meta if meta in names else (groups[0] if groups else None)


def _kernel_name(entry: _Entry) -> str | None:
    meta = _triton_metadata(entry.names)
    return meta[:-len(".json")] if meta and not meta.startswith(TRITON_GROUP) else None


def _read(path: str, limit: int, budget: _Budget) -> bytes:
    if budget.read <= 0:
        budget.note(f"files past the first {MAX_READ >> 20} MiB read of the compile caches")
        return b""
    try:
        data, size = read_head(path, min(limit, budget.read), follow=False)
    except OSError as exc:
        budget.note(f"{path}: {os_error(exc)}")
        return b""
    budget.read -= len(data)
    if size > len(data):
        budget.note(f"{path}: only its first {len(data)} bytes read (of {size})")
    return data


def _vllm_sources(entry: _Entry, budget: _Budget) -> set[str]:
    data = _read(os.path.join(entry.path, VLLM_MARKER), GRAPH_HEAD, budget)
    found: set[str] = set()
    for line in data.split(b"\n"):
        if not line.lstrip().startswith(b"#") or (i := line.find(_FX_MARK)) < 0:
            continue
        start = i + len(_FX_MARK) - 1
        if m := _FX_TAIL.search(line, start):
            found.add(_norm(line[start:m.start()]))
    return found - {""}


def _triton_sources(entry: _Entry, budget: _Budget) -> set[str]:
    for ext in TRITON_SOURCES:
        for name in sorted(n for n in entry.names if n.endswith(ext)):
            data = _read(os.path.join(entry.path, name), IR_HEAD, budget)
            found = ({m.group(1) for m in _MLIR_LOC.finditer(data)} | {m.group(1) for m in _PTX_FILE.finditer(data)}
                     | {os.path.join(m.group(2), m.group(1)) for m in _LLVM_FILE.finditer(data)})
            paths = {_norm(p) for p in found} - {""}
            if paths:
                return paths
    return set()


def _norm(raw: bytes) -> str:
    """An absolute recorded path, normalised; "" for anything else (relative, escaped, undecodable)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    if not text.startswith("/") or "\\" in text or "\x00" in text:
        return ""
    return os.path.normpath(text)


def _size(top: str, budget: _Budget) -> tuple[int, bool]:
    """The bytes of the regular files below ``top`` (symlinks counted as themselves, never followed)
    and whether every name was counted within the budget."""
    total = 0
    stack = [(top, 0)]
    while stack:
        path, depth = stack.pop()
        try:
            with os.scandir(path) as it:
                for e in it:
                    if budget.names <= 0:
                        budget.note(f"names past the first {MAX_NAMES} of the compile caches")
                        return total, False
                    budget.names -= 1
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        if depth >= MAX_DEPTH:
                            return total, False
                        stack.append((e.path, depth + 1))
                    else:
                        total += st.st_size
        except OSError:
            continue
    return total, True

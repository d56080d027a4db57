"""Snapshots (``driftscan snapshot``) and diffs against them (``driftscan diff``).

A snapshot covers what RECORD does not: the whole venv (bin/ scripts, files pip rewrote, files
no RECORD lists) and model directories. One root is written as a plain manifest (usable as
``--manifest`` too); several roots as a bundle of manifests::

    {"bundle_version": "1", "tool": "driftscan", "created": "...", "hostname": "gpu-03",
     "roots": [{"kind": "venv" | "site-packages" | "model-dir", "manifest": {<manifest v1>}}]}
"""

from __future__ import annotations

import bisect
import enum
import functools
import hashlib
import itertools
import json
import marshal
import os
import tempfile
import time
from array import array
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TypeVar, cast, overload

import xxhash

from ..caches.location import write_cache_file
from ..caches.racy import settled_stat
from ..caches.statcache import user_cache_dir
from ..fs.atomic import write_atomic
from ..modeldir.hfcache import containment_root
from ..modeldir.provenance import detect_layout
from ..core.errors import TargetError
from ..fs.reader import POOL_MIN, map_by_size, open_regular, read_opened
from ..formats.manifest import (
    EMBED_LIMIT,
    MAX_MANIFEST,
    REDO,
    Manifest,
    ManifestEntry,
    ManifestError,
    build_manifest,
    hostname,
    manifest_from,
    read_manifest,
    scan_dirs,
    write_manifest,
    write_members,
    unreadable_of,
)
from ..core.values import (Area, Distribution, Drift, DriftKind, FileCheck, LayoutKind, Prediction, Problem,
                           RecordEntry, Scope)
from ..fs.paths import printable
from ..fs.helpers import Child, may_fork
from ..environment.files import OK, check_entry, expected_of
from ..environment.startup import inspect as inspect_startup, is_startup_file
from ..environment.ownership import Ownership, bytecode_source
from ..modeldir import ModelDirResult, merge_checks
from . import treeindex
from .ownpath import prefix_free_entries
from ..modeldir.consistency import INDEX_SUFFIX, consistency_checks
from ..modeldir.check import SMALL_FILE_LIMIT, Context, KindResult, Meter
from .sharedwalk import WalkedEntries, WalkStat, hash_shared, settle_shared
from ..modeldir.provenance.manifestdir import (
    MATCHED,
    TRUSTED,
    diff_manifest,
    settle,
    SettleOpened,
    settled_by_signature,
    walk_inside,
)

BUNDLE_VERSION = "1"
MAX_BUNDLE = 1 << 31


def own_path(root: Root) -> dict[str, dict[str, str]]:
    """A venv's files that hold its own path, with digests without it (``ownpath.py``); none for
    another kind of root."""
    return prefix_free_entries(root.path) if root.kind is RootKind.VENV else {}


class RootKind(str, enum.Enum):
    """What a snapshot root is: how ``diff`` compares it (environment roots get audit's kinds)."""

    VENV = "venv"
    SITE_PACKAGES = "site-packages"
    MODEL_DIR = "model-dir"


KINDS = tuple(k.value for k in RootKind)


@dataclass(frozen=True)
class Root:
    kind: RootKind
    path: str


CHILD_MIN_FILES = 2048  # below this a fork costs more than it saves
SMALL_FILE_S = 20e-6  # a small file, open to close, hashed with xxh3 (the 40k-file venv, one core)
LARGE_BYTES_PER_S = 3.5e9  # reading a page-cached file through a 128 KiB buffer and xxh3, one core


def _child_share(sizes: list[int]) -> list[int]:
    """The indices a forked child takes so that it and this process each have about half the
    work (``SMALL_FILE_S`` a file plus ``LARGE_BYTES_PER_S``): the largest files first, then
    every n-th of the others."""
    order = sorted(range(len(sizes)), key=lambda k: -sizes[k])
    cost = [SMALL_FILE_S + sizes[k] / LARGE_BYTES_PER_S for k in order]
    half = sum(cost) / 2
    taken, spent = [], 0.0
    n = 0
    while n < len(order) and sizes[order[n]] >= POOL_MIN and spent + cost[n] <= half:
        taken.append(order[n])
        spent += cost[n]
        n += 1
    rest = order[n:]
    if rest and spent < half:
        want = int((half - spent) / (sum(cost[n:]) / len(rest)))  # about this many of the rest
        if want > 0:
            step = max(1, len(rest) // want)
            taken += rest[::step][:want]
    return taken


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_Portable = TypeVar("_Portable")
_T = TypeVar("_T")


def forked_mapper(func: Callable[[_Item], _Result], child_func: Callable[[_Item], _Portable],
                  decode: Callable[[_Portable], object], items: list[_Item], sizes: list[int],
                  jobs: int) -> list[_Result]:
    """``manifest.in_threads`` on two processes: a forked child (a GIL of its own) takes the
    largest files and a share of the small ones (``_child_share``), this process the rest, in
    this thread alone. Threads beside a thread on small files cost it the GIL at every system
    call: a 20 µs open-read-close took 30-50 µs with a thread hashing large files beside it.
    The child runs ``child_func`` and sends the marshalled answers; ``decode`` turns each into
    what ``func`` returns, and anything it cannot (REDO), or a child that failed, is done here."""
    if jobs < 2 or len(items) < CHILD_MIN_FILES or not may_fork():
        return map_by_size(func, items, sizes, jobs)
    share = _child_share(sizes)
    taken = set(share)
    mine = [k for k in range(len(items)) if k not in taken]
    work = [items[k] for k in share]

    def child(fd: int) -> None:
        data = memoryview(marshal.dumps([child_func(item) for item in work]))
        while data:
            data = data[os.write(fd, data):]

    helper = Child(child)
    if not helper.started:
        return map_by_size(func, items, sizes, jobs)
    results: list[_Result | None] = [None] * len(items)
    try:
        for k in mine:
            results[k] = func(items[k])
    except BaseException:
        helper.kill()
        raise
    answers = None
    data = helper.wait()
    if data is not None:
        try:
            answers = marshal.loads(data)
        except (ValueError, EOFError, TypeError):
            answers = None
    if not isinstance(answers, list) or len(answers) != len(share):
        answers = [None] * len(share)
    for k, answer in zip(share, answers):
        value = decode(answer) if answer is not None else REDO
        # decode answers what func would have (or REDO): the Mapper protocol's contract
        results[k] = func(items[k]) if value is REDO else cast(_Result, value)
    return cast("list[_Result]", results)  # every slot filled: by func here, or by the child's answers


def take_snapshot(roots: list[Root], output: str, *, jobs: int = 2,
                  progress: Callable[[int, int], None] | None = None) -> list[Problem]:
    """Hash every file under each root (xxh3-128) and write the snapshot atomically."""
    problems: list[Problem] = []

    def write(root: Root, output: str) -> None:
        # Symlinks out of the root (a hub snapshot's: out of its repository) are recorded by
        # target only: a snapshot must not carry a copy of a file the tree merely points at.
        started = time.time_ns()
        embed_code, contain = root.kind is RootKind.MODEL_DIR, containment_root(root.path)
        path = os.path.abspath(root.path)
        shared = hash_shared(path, embed_limit=EMBED_LIMIT, embed_code=embed_code,
                             contain=os.path.abspath(contain) if contain else path,
                             progress=progress) if jobs >= 2 else None
        # What could not be read is written into the snapshot too: a diff then reports it as not
        # compared, never as "added".
        if shared is not None:
            members, trouble = shared
            problems.extend(trouble)
            write_members(path, members, output, started, unreadable_of(path, trouble),
                          prefix_free=own_path(root))
            return
        mine: list[Problem] = []

        def note(problem: Problem) -> None:
            mine.append(problem)
            problems.append(problem)

        write_manifest(root.path, build_manifest(root.path, jobs=jobs, progress=progress, embed_code=embed_code,
                                                 on_error=note, contain=contain, mapper=forked_mapper),
                       output, started_ns=started, unreadable=lambda: unreadable_of(path, mine),
                       prefix_free=lambda: own_path(root))

    if len(roots) == 1:
        write(roots[0], output)
        return problems
    parts = []
    with tempfile.TemporaryDirectory(prefix="driftscan-snapshot-") as tmp:
        for n, root in enumerate(roots):
            part = os.path.join(tmp, f"{n}.json")
            write(root, part)
            with open(part, encoding="utf-8") as f:  # valid JSON already: spliced in as written
                parts.append(f'{{"kind": {json.dumps(root.kind.value)}, "manifest": {f.read().strip()}}}')
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    text = (f'{{"bundle_version": {json.dumps(BUNDLE_VERSION)}, "created": {json.dumps(created)},\n'
            f'"hostname": {json.dumps(hostname())},\n'
            f'"roots": [\n' + ",\n".join(parts) + '\n], "tool": "driftscan"}\n')
    write_atomic(output, text, mode=0o644)
    return problems


_LOADED_FORMAT = b"driftscan-snapshot-load-4\n"  # 3: entries in columns; 4: what was unreadable


def _loaded_cache_path(path: str) -> str:
    name = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(user_cache_dir(), "snapshots", name + ".bin")


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


_as_entry = functools.partial(tuple.__new__, ManifestEntry)
_NO_CTIME = -1  # in the columns: an entry without ctime_ns (a valid one is >= 0)


# A manifest's entries as ``_columns`` lays them out: paths joined, digests joined, numbers (bytes
# of an array('q')), texts and links by position.
_Columns = tuple[str, str, bytes, dict[int, str], dict[int, str]]


def _columns(files: dict[str, ManifestEntry]) -> _Columns:
    """A manifest's entries as a few large values instead of 40,000 tuples (marshal loads these
    in C, where 40,000 tuples of seven cost ~0.1 s): the paths joined by NUL (which no path may
    hold), the digests joined, sizes, modes, mtimes and ctimes in one ``array('q')``, and the
    few texts and links by position."""
    entries = list(files.values())
    numbers = array("q", itertools.chain.from_iterable(
        (e.size, e.mode, e.mtime_ns, _NO_CTIME if e.ctime_ns is None else e.ctime_ns) for e in entries))
    texts = {k: e.text for k, e in enumerate(entries) if e.text is not None}
    links = {k: e.link for k, e in enumerate(entries) if e.link is not None}
    return ("\0".join(files), "".join(e.xxh3_128 for e in entries), numbers.tobytes(), texts, links)


ONE_BY_ONE = 256  # entries built one at a time before all are built at once (cheaper each)


class ColumnEntries(Mapping[str, ManifestEntry]):
    """A manifest's ``files`` loaded from ``_columns``: the same mapping of path to ManifestEntry
    (equal to the dict it was made from), with each entry built only when asked for. A warm diff
    settles nearly every file from the diff index by path alone; building 40,000 entries it never
    looks at cost it ~40 ms. Iterating the items builds them all, once."""

    __slots__ = ("_asked", "_digests", "_full", "_index", "_links", "_numbers", "_texts")

    def __init__(self, rels: list[str], digests: str, numbers: array[int], texts: dict[int, str],
                 links: dict[int, str]) -> None:
        self._index = dict(zip(rels, range(len(rels))))
        if len(self._index) != len(rels) or len(digests) != 32 * len(rels) or len(numbers) != 4 * len(rels):
            raise ValueError("columns that do not fit together")
        for values in (texts, links):
            if type(values) is not dict or not all(type(k) is int and 0 <= k < len(rels) and type(v) is str
                                                   for k, v in values.items()):
                raise ValueError("a text or link that is not a string of an entry")
        self._digests, self._numbers, self._texts, self._links = digests, numbers, texts, links
        self._full: dict[str, ManifestEntry] | None = None
        self._asked = 0

    def _entry(self, k: int) -> ManifestEntry:
        numbers, at = self._numbers, 4 * k
        ctime = numbers[at + 3]
        return ManifestEntry(self._digests[32 * k:32 * k + 32], numbers[at], numbers[at + 1], numbers[at + 2],
                             self._texts.get(k), self._links.get(k), None if ctime == _NO_CTIME else ctime)

    def __getitem__(self, rel: str) -> ManifestEntry:
        if self._full is not None:
            return self._full[rel]
        self._asked += 1
        if self._asked > ONE_BY_ONE:
            return self.as_dict()[rel]
        return self._entry(self._index[rel])

    @overload
    def get(self, rel: str, default: None = None) -> ManifestEntry | None: ...

    @overload
    def get(self, rel: str, default: ManifestEntry | _T) -> ManifestEntry | _T: ...

    def get(self, rel: str, default: object = None) -> object:
        if self._full is not None:
            return self._full.get(rel, default)
        k = self._index.get(rel)
        return default if k is None else self[rel]

    def position(self, rel: str) -> int:
        """Where ``rel`` is in the manifest's order."""
        return self._index[rel]

    def __contains__(self, rel: object) -> bool:
        return rel in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def keys(self) -> KeysView[str]:
        return self._index.keys()  # a dict's view: set operations in C

    def as_dict(self) -> dict[str, ManifestEntry]:
        """Every entry, built in C-level loops (once)."""
        if self._full is None:
            n, numbers, digests = len(self._index), self._numbers, self._digests
            ctimes: Sequence[int | None] = numbers[3::4].tolist()
            if _NO_CTIME in ctimes:
                ctimes = [None if c == _NO_CTIME else c for c in ctimes]
            texts: list[str | None] = [None] * n
            links: list[str | None] = [None] * n
            for k, text in self._texts.items():
                texts[k] = text
            for k, link in self._links.items():
                links[k] = link
            entries = map(_as_entry, zip([digests[k:k + 32] for k in range(0, 32 * n, 32)], numbers[0::4].tolist(),
                                         numbers[1::4].tolist(), numbers[2::4].tolist(), texts, links, ctimes))
            self._full = dict(zip(self._index, entries))
        return self._full

    def items(self) -> ItemsView[str, ManifestEntry]:
        return self.as_dict().items()

    def values(self) -> ValuesView[ManifestEntry]:
        return self.as_dict().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ColumnEntries):
            other = other.as_dict()
        return self.as_dict() == other if isinstance(other, dict) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a dict: Mapping declares a method

    def __repr__(self) -> str:
        return f"ColumnEntries({self.as_dict()!r})"


def _from_columns(columns: _Columns) -> ColumnEntries:
    """``_columns`` undone (ValueError or TypeError for columns that do not fit together)."""
    joined, digests, raw_numbers, texts, links = columns
    numbers = array("q")
    numbers.frombytes(raw_numbers)
    if type(joined) is not str or type(digests) is not str:
        raise TypeError("not strings")
    return ColumnEntries(joined.split("\0") if joined else [], digests, numbers, texts, links)


def _loaded_from_cache(path: str, st: os.stat_result) -> list[tuple[Root, str, Manifest]] | None:
    """The roots a previous load of this very snapshot file validated (same size, mtime, ctime,
    inode and device), from a checksummed marshal file in the user cache directory: 20 ms for
    40,000 entries, where reading and validating the JSON takes 0.15-0.2 s. Anything amiss: None."""
    try:
        with open(_loaded_cache_path(path), "rb") as f:
            data = f.read(MAX_BUNDLE + 1)
    except OSError:
        return None
    head = len(_LOADED_FORMAT) + 8
    if not data.startswith(_LOADED_FORMAT) or xxhash.xxh3_64_digest(data[head:]) != data[len(_LOADED_FORMAT):head]:
        return None
    try:
        signature, roots = marshal.loads(memoryview(data)[head:])
        if tuple(signature) != _signature(st):
            return None
        out = []
        for kind, part, root, created, tool, started, columns, unreadable in roots:
            files = _from_columns(columns)
            if part is None:  # a plain manifest: the snapshot file itself, its kind as load_snapshot tells it now
                kind = RootKind.VENV if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else RootKind.MODEL_DIR
            if type(unreadable) is not dict:
                return None
            out.append((Root(RootKind(kind), root), part,
                        # ColumnEntries stands in for (and equals) the dict Manifest.files is typed as
                        Manifest("", root, created, files, tool, started, unreadable=unreadable)))  # type: ignore[arg-type]
        return out
    except Exception:  # noqa: BLE001 - a damaged or foreign cache file is no cache
        return None


def _remember_loaded(path: str, st: os.stat_result, roots: list[tuple[Root, str, Manifest]]) -> None:
    """Keep what was validated, if the snapshot file is older than the racy window (a file
    rewritten within the same clock tick could keep its signature)."""
    if not settled_stat(st, time.time_ns()):
        return
    try:
        value = (_signature(st), [(root.kind.value, None if part == path else n, m.root, m.created, m.tool,
                                   m.started_ns, _columns(m.files), m.unreadable)
                                  for n, (root, part, m) in enumerate(roots)])
        blob = marshal.dumps(value)
        target = _loaded_cache_path(path)
        write_cache_file(target, _LOADED_FORMAT + xxhash.xxh3_64_digest(blob) + blob, prefix=".snapshot-",
                         dir_mode=0o700)
    except (OSError, ValueError, OverflowError):
        pass  # a cache that cannot be written is no cache


def _identify(path: str, st: os.stat_result, roots: list[tuple[Root, str, Manifest]]) -> list[tuple[Root, str, Manifest]]:
    """Each manifest with its ``identity`` (the snapshot file's path and signature, the root's
    number), if the file is older than the racy window: what the diff index is kept under."""
    if not settled_stat(st, time.time_ns()):
        return roots
    real = os.path.realpath(path)
    return [(root, part, replace(m, identity=(real, *_signature(st), n))) for n, (root, part, m) in enumerate(roots)]


def load_snapshot(path: str, workdir: str, *, use_cache: bool = False) -> list[tuple[Root, str, Manifest]]:
    """The roots of a snapshot, each with the path of its single manifest and the manifest read
    from it (a bundle's are named ``workdir/<n>.json``). Raises ManifestError with every problem found.
    ``use_cache``: what an earlier load of the same file validated may be used (``_loaded_from_cache``),
    and each manifest carries its ``identity`` (for the diff index)."""
    try:
        fd, st = open_regular(path)
    except OSError as exc:
        raise ManifestError(path, [f"cannot read: {exc.strerror or exc}"]) from None
    try:
        # The fstat names the file: what an earlier load of it validated needs no read of its
        # JSON (14 MB for a 40,000-file venv).
        cached = _loaded_from_cache(path, st) if use_cache else None
        if cached is not None:
            roots = []
            for root, index, m in cached:
                part = path if index is None else os.path.join(workdir, f"{index}.json")
                roots.append((root, part, replace(m, path=os.path.abspath(part))))
        else:
            try:
                data = read_opened(fd, st, MAX_BUNDLE, what="snapshot")
            except OSError as exc:
                raise ManifestError(path, [f"cannot read: {exc.strerror or exc}"]) from None
            roots = _load_snapshot(path, workdir, use_cache, data, st)
    finally:
        os.close(fd)
    return _identify(path, st, roots) if use_cache else roots


def _load_snapshot(path: str, workdir: str, use_cache: bool, data: bytes,
                   st: os.stat_result) -> list[tuple[Root, str, Manifest]]:
    try:
        doc = json.loads(data)
    except RecursionError:
        raise ManifestError(path, ["not valid JSON: nested too deeply"]) from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise ManifestError(path, [f"not valid JSON: {exc}"]) from None
    del data
    if isinstance(doc, dict) and "manifest_version" in doc:
        manifest = read_manifest(path, doc)  # kept: an audit --manifest of the same file reads it again
        kind = RootKind.VENV if os.path.isfile(os.path.join(manifest.root, "pyvenv.cfg")) else RootKind.MODEL_DIR
        out = [(Root(kind, manifest.root), path, manifest)]
        if use_cache:
            _remember_loaded(path, st, out)
        return out
    if isinstance(doc, dict) and "bundle_version" in doc and doc["bundle_version"] != BUNDLE_VERSION:
        shown = json.dumps(doc["bundle_version"])[:40] if isinstance(doc["bundle_version"], str | int | float) \
            else type(doc["bundle_version"]).__name__
        raise ManifestError(path, [f"a snapshot bundle of bundle_version {shown}; this driftscan reads "
                                   f"{BUNDLE_VERSION!r}"])
    if not (isinstance(doc, dict) and doc.get("bundle_version") == BUNDLE_VERSION and isinstance(doc.get("roots"), list)):
        raise ManifestError(path, ["neither a driftscan manifest nor a snapshot bundle"])
    # Each part was once written out and read back as a manifest (capped at MAX_MANIFEST); a
    # part's JSON is at most 6 bytes per byte of the bundle (\u escapes), so a bundle this small
    # has no part over the cap, and its parts are checked as they are, unwritten.
    small = st.st_size * 6 <= MAX_MANIFEST
    out = []
    for n, item in enumerate(doc["roots"]):
        where = f"{path} roots[{n}]"
        if not isinstance(item, dict) or item.get("kind") not in KINDS:
            raise ManifestError(where, [f"not an object with a kind of {', '.join(KINDS)}"])
        part = os.path.join(workdir, f"{n}.json")
        try:
            if small:
                manifest = manifest_from(part, item.get("manifest"))
            else:
                with open(part, "w", encoding="utf-8") as f:
                    json.dump(item.get("manifest"), f)
                manifest = read_manifest(part)
        except RecursionError:
            raise ManifestError(where, ["nested too deeply"]) from None
        except ManifestError as exc:  # named by where it is in the snapshot, not by the split-off file
            raise ManifestError(where, exc.issues) from None
        out.append((Root(RootKind(item["kind"]), manifest.root), part, manifest))
    if use_cache and small:
        _remember_loaded(path, st, out)
    return out


def attach_ownership(checks: tuple[FileCheck, ...], own: Ownership, site_packages: tuple[str, ...]) -> list[FileCheck]:
    """Venv roots: files RECORD lists become package drifts of their distribution, the rest
    environment drifts; bytecode derived from a source file is not drift (Python rewrites it)."""
    out = []
    for check in checks:
        source = bytecode_source(check.path)
        if source is not None and (source in own.owners or os.path.lexists(source)):
            continue
        owners = own.owners.get(check.path) or []
        dist = owners[0][0] if owners else None
        root = next((s for s in site_packages if check.path.startswith(s + os.sep)), check.root)
        check = replace(check, area=Area.PYTHON, distribution=dist, root=root, remedy_hint=None)
        if not owners and check.kind is DriftKind.ADDED and root in site_packages and is_startup_file(root, check.path):
            startup = inspect_startup(root, check.path)  # as audit tells it from a plain added file
            if startup is not None:
                check = replace(check, kind=DriftKind.STARTUP_CODE, evidence=startup.evidence,
                                content_preview=startup.preview)
        out.append(_against_record(check, owners) if owners else check)
    return out


_RESTORABLE = (DriftKind.MODIFIED, DriftKind.ADDED, DriftKind.TYPE_CHANGED)


def _against_record(check: FileCheck, owners: list[tuple[Distribution, RecordEntry]]) -> FileCheck:
    """A file a RECORD lists that differs from the snapshot, judged against RECORD as well: one
    that matches its row's hash again is ``restored`` (back to pristine since the snapshot: a
    reinstall or a restore); one the snapshot did not have that differs from RECORD is
    ``modified`` (a package drift, as audit calls it), never an unowned ``added`` file."""
    if check.kind not in _RESTORABLE:
        return check
    for dist, entry in owners:
        if entry.hash is None:
            if check.kind is not DriftKind.TYPE_CHANGED and _is_own_record(dist, check.path):
                return replace(check, kind=DriftKind.RESTORED, distribution=dist,
                               evidence=f"{dist.key}'s RECORD, rewritten since the snapshot: installers write it "
                                        "when they (re)install, and it has no hash of itself to check",
                               actual={**check.actual, "rewritten_by_installer": True})
            continue  # a hashless row (bytecode, a directory): matching it says nothing of the content
        result = check_entry(check.path, entry)
        if result is not None and result.status == OK:
            was = "not in the snapshot" if check.kind is DriftKind.ADDED else \
                f"{check.kind.value} in the snapshot"
            return replace(check, kind=DriftKind.RESTORED, distribution=dist,
                           evidence=f"{was}; now matches the RECORD of {dist.key} again (back to pristine since the "
                                    "snapshot, as a reinstall or restore leaves it)",
                           actual={**check.actual, "matches_record": True})
    if check.kind is DriftKind.ADDED:
        dist, entry = owners[0]
        return replace(check, kind=DriftKind.MODIFIED, expected=expected_of(entry),
                       evidence=f"not in the snapshot; listed in the RECORD of {dist.key} and differs from it")
    return check


def _is_own_record(dist: Distribution, path: str) -> bool:
    return os.path.join(dist.metadata_dir, "RECORD") == path and dist.metadata_dir.endswith(".dist-info")


def restored_drift(check: FileCheck) -> Drift:
    """The drift of a ``restored`` file: nothing to undo, and a reinstall leaves it as it is."""
    return Drift(check, Scope.PACKAGE, False, "nothing to do: it matches its RECORD again", check.evidence,
                 Prediction.WIPED)


SPLIT_DIRS = 256  # directories listed breadth first before the rest of the walk is shared out
SPLIT_MIN_ENTRIES = 8192  # a manifest this small is walked in one process


def _share_out(pending: list[tuple[str, str]], manifest: Manifest,
               limit: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The directories waiting to be walked in two shares of about as much work each, by the
    manifest's files under each (``SMALL_FILE_S`` a file and the bytes of the small ones to hash;
    its paths are sorted, so two bisections a directory)."""
    names = list(manifest.files)
    if any(a > b for a, b in itertools.pairwise(names)):
        names.sort()
    cumulative = [0.0]
    for name in names:
        size = manifest.files[name].size
        cumulative.append(cumulative[-1] + SMALL_FILE_S + (size / LARGE_BYTES_PER_S if size < limit else 0))
    weighed = []
    for item in pending:
        prefix = item[1]  # "dir/sub/": every path under it sorts in [prefix, prefix with "/" → "0")
        lo, hi = bisect.bisect_left(names, prefix), bisect.bisect_left(names, prefix[:-1] + "0")
        weighed.append((cumulative[hi] - cumulative[lo], item))
    weighed.sort(key=lambda w: -w[0])
    theirs: list[tuple[str, str]] = []
    mine: list[tuple[str, str]] = []
    load = [0.0, 0.0]
    for cost, item in weighed:
        side = 0 if load[0] <= load[1] else 1
        (theirs if side == 0 else mine).append(item)
        load[side] += cost + SMALL_FILE_S
    return theirs, mine


def _split_walk(ctx: Context, manifest: Manifest, trust: bool,
                dirs: dict[str, tuple[int, ...] | None] | None = None) -> tuple[WalkedEntries, list[Problem]] | None:
    """``scan_tree(ctx.root)`` and the settling of every unchanged small file (``settle``: by
    signature, or hashed) on two cores: the first directories are listed here breadth first, the
    rest shared out (``_share_out``); a forked walker walks and settles its share and sends back
    the names of the files it settled and the lstat of every other, while this process does the
    same with its own. None where forking is not allowed (the caller walks, and compares, alone).
    ``dirs``: each directory's signature, for the diff index (``scan_dirs``)."""
    if not (len(manifest.files) >= SPLIT_MIN_ENTRIES and may_fork() and walk_inside(ctx)):
        return None
    found: WalkedEntries = {}
    problems: list[Problem] = []
    pending = scan_dirs(ctx.root, [(ctx.root, "")], found, problems, expand=SPLIT_DIRS, dirs=dirs)
    theirs, mine = _share_out(pending, manifest, ctx.limit)

    def settled_in(walked: dict[str, os.stat_result | None]) -> tuple[dict[str, object], int]:
        done: dict[str, object] = {}
        hashed = 0
        for rel, st in walked.items():
            verdict = settle(ctx, manifest, rel, st, trust)
            if verdict is not None:
                done[rel] = verdict
                hashed += st.st_size if verdict is MATCHED and st is not None else 0  # settled: st is one
        return done, hashed

    def walker(fd: int) -> None:
        got: dict[str, os.stat_result | None] = {}
        trouble: list[Problem] = []
        listed: dict[str, tuple[int, ...] | None] | None = {} if dirs is not None else None
        scan_dirs(ctx.root, list(reversed(theirs)), got, trouble, dirs=listed)
        done, hashed = settled_in(got)
        trusted = [rel for rel, v in done.items() if v is TRUSTED]
        matched = [rel for rel, v in done.items() if v is MATCHED]
        other = [(rel, None if st is None else (st.st_mode, st.st_size, st.st_mtime_ns, st.st_mtime, st.st_ctime_ns))
                 for rel, st in got.items() if rel not in done]
        data = memoryview(marshal.dumps((trusted, matched, other, hashed, [(p.path, p.message) for p in trouble],
                                         listed)))
        while data:
            data = data[os.write(fd, data):]

    helper = Child(walker) if theirs else None
    scan_dirs(ctx.root, list(reversed(mine)), found, problems, dirs=dirs)
    done, hashed = settled_in(found)
    found.update(done)
    ctx.meter.note_hashed(hashed)
    answer = helper.wait() if helper is not None and helper.started else None
    try:
        if answer is None:
            raise ValueError("no answer")
        trusted, matched, other, hashed, trouble, listed = marshal.loads(answer)
        for rel in trusted:
            found[rel] = TRUSTED
        for rel in matched:
            found[rel] = MATCHED
        for rel, st in other:
            found[rel] = None if st is None else WalkStat(*st)
        problems += [Problem(path, message) for path, message in trouble]
        ctx.meter.note_hashed(hashed)
        if dirs is not None:
            dirs.update(listed)
    except (ValueError, EOFError, TypeError):  # the walker failed: its share, here
        more: dict[str, os.stat_result | None] = {}
        scan_dirs(ctx.root, list(reversed(theirs)), more, problems, dirs=dirs)
        found.update(more)
    return found, problems


def _save_index(ctx: Context, manifest: Manifest, walked: WalkedEntries, dirs: dict[str, tuple[int, ...] | None],
                walk_started: int,
                consistency: bool) -> None:
    """Keep the diff index of this full walk: the files trusted by signature (settled so in the
    walk, or by ``settled_by_signature`` in the comparison), and every other entry walked."""
    trusted, others = [], []
    files, limit = manifest.files, ctx.limit
    for rel, st in walked.items():
        if st is TRUSTED or (st is not MATCHED and settled_by_signature(manifest, files.get(rel), st, limit)):
            trusted.append(rel)
        else:
            others.append(rel)
    missing = list(files.keys() - walked.keys())
    treeindex.save(manifest, ctx.root, limit, dirs, walk_started, trusted, others, consistency, missing)


def _to_compare(manifest: Manifest, walked: WalkedEntries, missing: list[str]) -> list[str]:
    """The manifest's entries an index-served diff compares (those not trusted: the walked ones
    and the missing ones), in the manifest's order, as the full comparison meets them."""
    files = manifest.files
    rels = [rel for rel in walked if rel in files] + [rel for rel in missing if rel in files]
    if len(rels) > 1:
        where = files.position if isinstance(files, ColumnEntries) else {r: k for k, r in enumerate(files)}.__getitem__
        rels.sort(key=where)
    return rels


@dataclass(frozen=True)
class DiffResult(ModelDirResult):
    trusted: int = 0  # files settled by their signature matching the snapshot's, not hashed


def diff_root(root: Root, manifest_path: str, manifest: Manifest | None = None, *, jobs: int, deep: bool = False,
              progress: Callable[[int, int], None] | None = None, trust: bool = False) -> DiffResult:
    """Compare one root with its manifest: ``verify_model_dir(root, manifest=...)``'s result, from
    one walk of the root. Large files are compared by size and mtime unless ``deep``; with
    ``trust``, a small file whose size, mtime and mode match the snapshot's (older than its racy
    window) is settled without being read, and counted in ``trusted``."""
    if not os.path.isdir(root.path):
        raise TargetError(f"{printable(root.path)}: recorded in the snapshot but not a directory now")
    layout = detect_layout(root.path, manifest=manifest_path)  # a named manifest: always LayoutKind.MANIFEST
    meter = Meter(progress)
    ctx = Context(layout.root, deep, SMALL_FILE_LIMIT, max(1, jobs), meter, [], contain=containment_root(layout.root))
    # The diff index (treeindex): with trust, for a snapshot file it can name, inside containment.
    indexed = trust and manifest is not None and manifest.identity is not None and walk_inside(ctx)
    index = treeindex.load(manifest, ctx.root, ctx.limit) if indexed and manifest is not None else None
    hit = treeindex.walk(ctx.root, index) if index is not None else None
    dirs: dict[str, tuple[int, ...] | None] | None = None
    from_index: tuple[int, list[str]] | None = None
    walked: WalkedEntries
    if hit is not None and index is not None and manifest is not None:  # a hit: an index, of a manifest
        walk_problems: list[Problem] = []
        walked = hit.entries
        from_index = (hit.trusted, _to_compare(manifest, walked, index.missing))
    else:
        index = None  # a directory changed: the walk, and a new index
        dirs = {} if indexed else None
        walk_started = time.time_ns()
        split = None
        if manifest is not None and not trust and len(manifest.files) >= SPLIT_MIN_ENTRIES and walk_inside(ctx):
            # Nothing trusted: every file is read, its open and fstat standing for its lstat,
            # from the first directory listed, on two cores.
            shared = settle_shared(ctx.root, SettleOpened(ctx, manifest))
            if shared is not None:
                split = shared[:2]
                ctx.meter.note_hashed(shared[2])
        if split is None and manifest is not None:
            split = _split_walk(ctx, manifest, trust, dirs)
        if split is not None:
            walked, walk_problems = split
        else:
            walked, walk_problems = {}, []
            scan_dirs(ctx.root, [(ctx.root, "")], walked, walk_problems, dirs=dirs)
    trusted = 0
    try:
        result, trusted = diff_manifest(ctx, layout, manifest, walked, walk_problems, trust=trust,
                                        mapper=forked_mapper, from_index=from_index)
        checks, problems = list(result.checks), list(result.problems)
    except Exception as exc:  # noqa: BLE001 - the other roots and the report must go on
        result = KindResult()
        checks, problems = [], [Problem(layout.root, f"model directory audit failed: {type(exc).__name__}: {exc}")]
    consistency = index.consistency if index is not None else \
        any(rel.endswith((INDEX_SUFFIX, ".safetensors")) for rel in walked)
    if dirs is not None and manifest is not None and not walk_problems:  # dirs: indexed, so a manifest
        _save_index(ctx, manifest, walked, dirs, walk_started, consistency)
    try:
        # The consistency checks look only at weight-map indexes and safetensors files: a tree
        # without any (a venv) has nothing for them, and their own walk is not taken.
        if os.path.isdir(ctx.root) and consistency:
            flagged = {c.path: c for c in checks}
            extra, more = consistency_checks(ctx, flagged)
            checks, problems = merge_checks(checks, extra), problems + more
    except Exception as exc:  # noqa: BLE001 - the provenance checks above still stand
        problems.append(Problem(layout.root, f"consistency checks failed: {type(exc).__name__}: {exc}"))
    checks.sort(key=lambda c: (c.path, c.kind.value))
    problems.sort(key=lambda p: (p.path, p.message))
    return DiffResult(
        path=layout.path, root=layout.root, kind=LayoutKind.MANIFEST, checks=tuple(checks),
        files_checked=result.files_checked, unverifiable=tuple(result.unverifiable), errors=tuple(problems),
        bytes_hashed=meter.hashed, bytes_read=meter.read, large_files_unread=meter.unread_large,
        commit=result.commit, deep=deep, trusted=trusted)

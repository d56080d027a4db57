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
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import NamedTuple

import xxhash

from ..atomic import write_atomic
from ..discover.hfcache import containment_root
from ..discover.modeldir import detect_layout
from ..errors import TargetError
from ..fileio import POOL_MIN, map_by_size, read_regular_stat
from ..manifest import (
    MAX_MANIFEST,
    RACY_NS,
    REDO,
    Manifest,
    ManifestEntry,
    ManifestError,
    build_manifest,
    manifest_from,
    read_manifest,
    scan_dirs,
    write_manifest,
)
from ..model import Area, DriftKind, FileCheck, LayoutKind, Problem
from ..paths import printable
from ..forked import Child, may_fork
from .env.ownership import Ownership, bytecode_source
from .tree import ModelDirResult, merge_checks, treeindex
from .tree.consistency import INDEX_SUFFIX, consistency_checks
from .tree.engine import SMALL_FILE_LIMIT, Context, KindResult, Meter
from .tree.manifestdir import MATCHED, TRUSTED, diff_manifest, settle, settled_by_signature, walk_inside

BUNDLE_VERSION = "1"
MAX_BUNDLE = 1 << 31
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


def forked_mapper(func: Callable, child_func: Callable, decode: Callable, items: list, sizes: list[int],
                  jobs: int) -> list:
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
    results: list = [None] * len(items)
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
        results[k] = func(items[k]) if value is REDO else value
    return results


def take_snapshot(roots: list[Root], output: str, *, jobs: int = 2,
                  progress: Callable[[int, int], None] | None = None) -> list[Problem]:
    """Hash every file under each root (xxh3-128) and write the snapshot atomically."""
    problems: list[Problem] = []

    def entries(root: Root):
        # Symlinks out of the root (a hub snapshot's: out of its repository) are recorded by
        # target only: a snapshot must not carry a copy of a file the tree merely points at.
        return build_manifest(root.path, jobs=jobs, progress=progress, embed_code=root.kind is RootKind.MODEL_DIR,
                              on_error=problems.append, contain=containment_root(root.path), mapper=forked_mapper)

    if len(roots) == 1:
        write_manifest(roots[0].path, entries(roots[0]), output, started_ns=time.time_ns())
        return problems
    parts = []
    with tempfile.TemporaryDirectory(prefix="driftscan-snapshot-") as tmp:
        for n, root in enumerate(roots):
            part = os.path.join(tmp, f"{n}.json")
            write_manifest(root.path, entries(root), part, started_ns=time.time_ns())
            with open(part, encoding="utf-8") as f:  # valid JSON already: spliced in as written
                parts.append(f'{{"kind": {json.dumps(root.kind.value)}, "manifest": {f.read().strip()}}}')
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    text = (f'{{"bundle_version": {json.dumps(BUNDLE_VERSION)}, "created": {json.dumps(created)},\n'
            f'"hostname": {json.dumps(socket.gethostname())},\n'
            f'"roots": [\n' + ",\n".join(parts) + '\n], "tool": "driftscan"}\n')
    write_atomic(output, text, mode=0o644)
    return problems


_LOADED_FORMAT = b"driftscan-snapshot-load-2\n"  # 2: entries carry ctime_ns


def _loaded_cache_path(path: str) -> str:
    from ..cache import user_cache_dir

    name = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(user_cache_dir(), "snapshots", name + ".bin")


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


_as_entry = functools.partial(tuple.__new__, ManifestEntry)


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
        signature, roots = marshal.loads(data[head:])
        if tuple(signature) != _signature(st):
            return None
        out = []
        for kind, part, root, created, tool, started, rels, entries in roots:
            if len(rels) != len(entries) or (entries and set(map(len, entries)) != {len(ManifestEntry._fields)}):
                return None
            files = dict(zip(rels, map(_as_entry, entries)))  # as ManifestEntry._make, without a frame per entry
            if part is None:  # a plain manifest: the snapshot file itself, its kind as load_snapshot tells it now
                kind = RootKind.VENV if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else RootKind.MODEL_DIR
            out.append((Root(RootKind(kind), root), part, Manifest("", root, created, files, tool, started)))
        return out
    except Exception:  # noqa: BLE001 - a damaged or foreign cache file is no cache
        return None


def _remember_loaded(path: str, st: os.stat_result, roots: list[tuple[Root, str, Manifest]]) -> None:
    """Keep what was validated, if the snapshot file is older than the racy window (a file
    rewritten within the same clock tick could keep its signature)."""
    if max(st.st_mtime_ns, st.st_ctime_ns) > time.time_ns() - RACY_NS:
        return
    value = (_signature(st), [(root.kind.value, None if part == path else n, m.root, m.created, m.tool, m.started_ns,
                               list(m.files), [tuple(e) for e in m.files.values()])
                              for n, (root, part, m) in enumerate(roots)])
    try:
        blob = marshal.dumps(value)
        target = _loaded_cache_path(path)
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        write_atomic(target, _LOADED_FORMAT + xxhash.xxh3_64_digest(blob) + blob, mode=0o600)
    except (OSError, ValueError):
        pass  # a cache that cannot be written is no cache


def _identify(path: str, st: os.stat_result, roots: list[tuple[Root, str, Manifest]]) -> list[tuple[Root, str, Manifest]]:
    """Each manifest with its ``identity`` (the snapshot file's path and signature, the root's
    number), if the file is older than the racy window: what the diff index is kept under."""
    if max(st.st_mtime_ns, st.st_ctime_ns) > time.time_ns() - RACY_NS:
        return roots
    real = os.path.realpath(path)
    return [(root, part, replace(m, identity=(real, *_signature(st), n))) for n, (root, part, m) in enumerate(roots)]


def load_snapshot(path: str, workdir: str, *, use_cache: bool = False) -> list[tuple[Root, str, Manifest]]:
    """The roots of a snapshot, each with the path of its single manifest and the manifest read
    from it (a bundle's are named ``workdir/<n>.json``). Raises ManifestError with every problem found.
    ``use_cache``: what an earlier load of the same file validated may be used (``_loaded_from_cache``),
    and each manifest carries its ``identity`` (for the diff index)."""
    try:
        data, st = read_regular_stat(path, MAX_BUNDLE, what="snapshot")
    except OSError as exc:
        raise ManifestError(path, [f"cannot read: {exc.strerror or exc}"]) from None
    roots = _load_snapshot(path, workdir, use_cache, data, st)
    return _identify(path, st, roots) if use_cache else roots


def _load_snapshot(path: str, workdir: str, use_cache: bool, data: bytes,
                   st: os.stat_result) -> list[tuple[Root, str, Manifest]]:
    if use_cache:
        cached = _loaded_from_cache(path, st)
        if cached is not None:
            out = []
            for root, index, m in cached:
                part = path if index is None else os.path.join(workdir, f"{index}.json")
                out.append((root, part, replace(m, path=os.path.abspath(part))))
            return out
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
        out.append(replace(check, area=Area.PYTHON, distribution=dist, root=root, remedy_hint=None))
    return out


SPLIT_DIRS = 256  # directories listed breadth first before the rest of the walk is shared out
SPLIT_MIN_ENTRIES = 8192  # a manifest this small is walked in one process


class WalkStat(NamedTuple):
    """The fields of a forked walker's lstat that a diff uses."""

    st_mode: int
    st_size: int
    st_mtime_ns: int
    st_mtime: float
    st_ctime_ns: int  # Manifest.trusted compares it (a file the walker did not settle may still be asked)


def _share_out(pending: list[tuple[str, str]], manifest: Manifest, limit: int) -> tuple[list, list]:
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
    theirs: list = []
    mine: list = []
    load = [0.0, 0.0]
    for cost, item in weighed:
        side = 0 if load[0] <= load[1] else 1
        (theirs if side == 0 else mine).append(item)
        load[side] += cost + SMALL_FILE_S
    return theirs, mine


def _split_walk(ctx: Context, manifest: Manifest, trust: bool,
                dirs: dict | None = None) -> tuple[dict, list[Problem]] | None:
    """``scan_tree(ctx.root)`` and the settling of every unchanged small file (``settle``: by
    signature, or hashed) on two cores: the first directories are listed here breadth first, the
    rest shared out (``_share_out``); a forked walker walks and settles its share and sends back
    the names of the files it settled and the lstat of every other, while this process does the
    same with its own. None where forking is not allowed (the caller walks, and compares, alone).
    ``dirs``: each directory's signature, for the diff index (``scan_dirs``)."""
    if not (len(manifest.files) >= SPLIT_MIN_ENTRIES and may_fork() and walk_inside(ctx)):
        return None
    found: dict = {}
    problems: list[Problem] = []
    pending = scan_dirs(ctx.root, [(ctx.root, "")], found, problems, expand=SPLIT_DIRS, dirs=dirs)
    theirs, mine = _share_out(pending, manifest, ctx.limit)

    def settled_in(walked: dict) -> tuple[dict, int]:
        done, hashed = {}, 0
        for rel, st in walked.items():
            verdict = settle(ctx, manifest, rel, st, trust)
            if verdict is not None:
                done[rel] = verdict
                hashed += st.st_size if verdict is MATCHED else 0
        return done, hashed

    def walker(fd: int) -> None:
        got: dict = {}
        trouble: list[Problem] = []
        listed: dict | None = {} if dirs is not None else None
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
        more: dict = {}
        scan_dirs(ctx.root, list(reversed(theirs)), more, problems, dirs=dirs)
        found.update(more)
    return found, problems


def _save_index(ctx: Context, manifest: Manifest, walked: dict, dirs: dict, walk_started: int,
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
    treeindex.save(manifest, ctx.root, limit, dirs, walk_started, trusted, others, consistency)


@dataclass(frozen=True)
class DiffResult(ModelDirResult):
    trusted: int = 0  # files settled by their signature matching the snapshot's, not hashed


def diff_root(root: Root, manifest_path: str, manifest: Manifest | None = None, *, jobs: int, deep: bool = False,
              progress=None, trust: bool = False) -> DiffResult:
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
    index = treeindex.load(manifest, ctx.root, ctx.limit) if indexed else None  # type: ignore[arg-type]
    walked = treeindex.walk(ctx.root, index, TRUSTED) if index is not None else None
    dirs: dict | None = None
    if walked is not None:
        walk_problems: list[Problem] = []
    else:
        index = None  # a directory changed: the walk, and a new index
        dirs = {} if indexed else None
        walk_started = time.time_ns()
        split = _split_walk(ctx, manifest, trust, dirs) if manifest is not None else None
        if split is not None:
            walked, walk_problems = split
        else:
            walked, walk_problems = {}, []
            scan_dirs(ctx.root, [(ctx.root, "")], walked, walk_problems, dirs=dirs)
    trusted = 0
    try:
        result, trusted = diff_manifest(ctx, layout, manifest, walked, walk_problems, trust=trust,
                                        mapper=forked_mapper)
        checks, problems = list(result.checks), list(result.problems)
    except Exception as exc:  # noqa: BLE001 - the other roots and the report must go on
        result = KindResult()
        checks, problems = [], [Problem(layout.root, f"model directory audit failed: {type(exc).__name__}: {exc}")]
    consistency = index.consistency if index is not None else \
        any(rel.endswith((INDEX_SUFFIX, ".safetensors")) for rel in walked)
    if dirs is not None and not walk_problems:
        _save_index(ctx, manifest, walked, dirs, walk_started, consistency)  # type: ignore[arg-type]
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

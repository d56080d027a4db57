"""Verify every installed distribution against its RECORD (or installed-files.txt)."""

from __future__ import annotations

import multiprocessing
import os
import stat
import sys
import threading
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass

from ..discover.dists import TRUSTED_INSTALLERS, MetadataDir
from ..model import Distribution, DriftKind, FileCheck, Problem, RecordEntry, Target, Unverifiable
from . import files
from .ownership import Ownership, bytecode_source, is_bytecode, is_virtualenv_style_row
from .roots import root_of

_KIND = {
    files.MODIFIED: DriftKind.MODIFIED,
    files.MISSING: DriftKind.MISSING,
    files.TYPE_CHANGED: DriftKind.TYPE_CHANGED,
}


@dataclass(frozen=True)
class _Task:
    dist: Distribution
    entry: RecordEntry
    path: str
    presence_only: bool


@dataclass(frozen=True)
class RecordsOutcome:
    checks: list[FileCheck]
    files_checked: int
    unverifiable: list[Unverifiable]
    errors: list[Problem]


def _is_uv_cache_link(path: str, link_target: str) -> bool:
    resolved = os.path.realpath(os.path.join(os.path.dirname(path), link_target))
    return f"{os.sep}archive-v0{os.sep}" in resolved


def _tasks(metadirs: list[MetadataDir], own: Ownership) -> list[_Task]:
    tasks = []
    for dist, entry, path in own.rows:
        source = bytecode_source(path) if entry.path.endswith((".pyc", ".pyo")) else None
        # Bytecode is derived data: Python rewrites it at will, even a wheel-shipped .pyc (FACTS §6a).
        derived = source is not None and source in own.owners
        presence_only = dist.kind == "egg-info" or entry.hash is None or derived
        tasks.append(_Task(dist, entry, path, presence_only))
    return tasks


class _Recorder:
    """Stat-cache stand-in for worker processes: reads the inherited cache, records new digests."""

    def __init__(self, cache):
        self.cache = cache
        self.stored: list[tuple] = []

    def lookup(self, path, st, algorithm):
        return self.cache.lookup(path, st, algorithm) if self.cache is not None else None

    def store(self, path, st, algorithm, digest, hashed_at):
        self.stored.append((path, st, algorithm, digest, hashed_at))


_WORKER_CACHE = None  # set in the parent before forking; read by the workers


def _check_chunk(chunk: list[tuple[int, str, RecordEntry, bool]]):
    recorder = _Recorder(_WORKER_CACHE)
    results = [(i, files.check_entry(path, entry, presence, recorder)) for i, path, entry, presence in chunk]
    return results, recorder.stored


def _chunks(tasks: list[_Task], n: int) -> list[list[tuple[int, str, RecordEntry, bool]]]:
    """``n`` chunks of similar cost: big files spread round-robin, then the many small ones."""
    def cost(i: int) -> int:
        size = tasks[i].entry.size or 0
        return 0 if tasks[i].presence_only else size
    order = sorted(range(len(tasks)), key=cost, reverse=True)
    chunks: list[list] = [[] for _ in range(n)]
    for k, i in enumerate(order):
        t = tasks[i]
        chunks[k % n].append((i, t.path, t.entry, t.presence_only))
    return [c for c in chunks if c]


def _run_processes(tasks: list[_Task], jobs: int, cache) -> list[files.EntryResult]:
    global _WORKER_CACHE
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    _WORKER_CACHE = cache
    results: list[files.EntryResult | None] = [None] * len(tasks)
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method)) as pool:
            for chunk_results, stored in pool.map(_check_chunk, _chunks(tasks, jobs * 8)):
                for i, result in chunk_results:
                    results[i] = result
                if cache is not None:
                    for item in stored:
                        cache.store(*item)
    finally:
        _WORKER_CACHE = None
    return results  # type: ignore[return-value]


def _stat_pass(tasks: list[_Task], cache) -> list[files.EntryResult | None]:
    """One lstat per file. The common cases — a plain regular file present where a hashless row
    says, or unchanged since the stat cache saw it — are settled inline; anything unusual goes
    through ``check_entry``, which knows every case (symlinks, types, sizes, errors)."""
    lstat, is_reg = os.lstat, stat.S_ISREG
    plain_ok = files._PLAIN_OK
    fresh = cache.fresh if cache is not None else None
    results: list[files.EntryResult | None] = []
    append = results.append
    for t in tasks:
        entry = t.entry
        try:
            st = lstat(t.path)
        except OSError:
            append(files.check_entry(t.path, entry, t.presence_only, cache, read=False))
            continue
        if is_reg(st.st_mode) and st.st_nlink == 1:
            digest = entry.hash
            if t.presence_only or (digest is None and entry.size is None):
                append(plain_ok)
                continue
            if (digest is not None and fresh is not None and (entry.size is None or entry.size == st.st_size)
                    and fresh(t.path, st, digest.algorithm, digest.digest)):
                append(plain_ok)
                continue
        append(files.check_entry(t.path, entry, t.presence_only, cache, read=False, lookup=False))
    return results


class _Meter:
    """Bytes hashed so far, reported to ``progress(done, total)`` from the hashing threads."""

    def __init__(self, total: int, progress) -> None:
        self.total, self.done, self.progress = total, 0, progress
        self.lock = threading.Lock()

    def add(self, n: int) -> None:
        if self.progress is None:
            return
        with self.lock:
            self.done += n
            self.progress(min(self.done, self.total), self.total)


def _run(tasks: list[_Task], jobs: int, cache, mode: str = "auto", progress=None) -> list[files.EntryResult]:
    """Check every task. Threads share the GIL for the per-file Python work; processes do not,
    but cost a fork: used for large inventories (see benchmarks/bench_audit.py)."""
    if mode == "auto":
        mode = os.environ.get("DRIFTSCAN_HASH_WORKERS", "threads")
        if PROCESS_THRESHOLD and jobs > 1 and len(tasks) >= PROCESS_THRESHOLD:
            mode = "processes"
    if mode == "processes" and jobs > 1:
        return _run_processes(tasks, jobs, cache)

    # Pass 1, in this thread: stat, presence and stat-cache hits; nothing is read.
    results = _stat_pass(tasks, cache)
    pending = [i for i, r in enumerate(results) if r is None]

    # Pass 2: the files whose content must be hashed, in a thread pool (hashlib drops the GIL).
    quick, check = files.quick_check, files.check_entry
    meter = _Meter(sum(tasks[i].entry.size or 0 for i in pending), progress)

    def batch(chunk: list[int]) -> list[tuple[int, files.EntryResult]]:
        out = []
        for i in chunk:
            t = tasks[i]
            result = quick(t.path, t.entry, cache) if t.entry.hash is not None else None
            out.append((i, result or check(t.path, t.entry, t.presence_only, cache, lookup=False)))
        meter.add(sum(tasks[i].entry.size or 0 for i in chunk))
        return out

    size = 32
    chunks = [pending[i : i + size] for i in range(0, len(pending), size)]
    if jobs <= 1 or len(chunks) <= 1:
        done = [pair for c in chunks for pair in batch(c)]
    else:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="driftscan-hash") as pool:
            done = [pair for pairs in pool.map(batch, chunks) for pair in pairs]
    for i, result in done:
        results[i] = result
    return results  # type: ignore[return-value]


# Forked workers measured slower than threads here (1.64-1.85 s vs 1.35-1.59 s for the records pass of
# a 40k-file venv on 2 cores; benchmarks/bench_audit.py):
# opt in with DRIFTSCAN_HASH_WORKERS=processes, or pass mode="processes".
PROCESS_THRESHOLD = int(os.environ.get("DRIFTSCAN_PROCESS_THRESHOLD", "0")) or None


def _not_drift(task: _Task, result: files.EntryResult) -> bool:
    if result.status != files.MISSING:
        return False
    # Missing bytecode is regenerated on import; virtualenv lists rows that never exist.
    return is_bytecode(task.path) or (task.entry.hash is None and is_virtualenv_style_row(task.entry.path))


def verify_records(target: Target, metadirs: list[MetadataDir], own: Ownership, jobs: int,
                   cache=None, mode: str = "auto", progress=None) -> RecordsOutcome:
    tasks = _tasks(metadirs, own)
    results = _run(tasks, jobs, cache, mode, progress)
    errors: list[Problem] = []
    checked = 0
    raw: dict[str, list[tuple[_Task, files.EntryResult]]] = defaultdict(list)
    for task, result in zip(tasks, results):
        if result.status == files.ERROR:
            errors.append(Problem(task.path, result.message))
            continue
        checked += 1
        if result is files._PLAIN_OK and len(own.owners.get(task.path, ())) < 2:
            continue  # the common case: nothing to resolve
        if _not_drift(task, result):
            continue
        if result.link_target is not None and result.status in (files.OK, files.MODIFIED):
            if not _is_uv_cache_link(task.path, result.link_target):
                result = files.EntryResult(
                    files.TYPE_CHANGED,
                    files.expected_of(task.entry),
                    {"type": "symlink", "target": result.link_target, "content_matches": result.status == files.OK},
                    link_target=result.link_target,
                )
        raw[task.path].append((task, result))

    checks_by_dist: dict[str, list[FileCheck]] = defaultdict(list)
    for path, pairs in raw.items():
        winners = [t.dist for t, r in pairs if r.status == files.OK]
        for task, result in pairs:
            if result.status == files.OK:
                continue
            kind = _KIND[result.status]
            evidence = ""
            if kind is DriftKind.MODIFIED and winners:
                kind = DriftKind.CLOBBERED
                evidence = "also installed by " + ", ".join(w.key for w in winners) + ", whose copy is on disk"
            elif result.message:
                evidence = result.message
            checks_by_dist[task.dist.metadata_dir].append(
                FileCheck(kind, path, root_of(target, path), task.dist, result.expected, result.actual, evidence)
            )

    checks: list[FileCheck] = []
    unverifiable: list[Unverifiable] = []
    for md in metadirs:
        dist = md.distribution
        if dist is None:
            continue
        found = checks_by_dist.get(dist.metadata_dir, [])
        reason = _unverifiable_reason(md, dist, found)
        if reason:
            unverifiable.append(Unverifiable(dist.key, reason))
        else:
            checks.extend(found)
    return RecordsOutcome(checks, checked, unverifiable, errors)


def _unverifiable_reason(md: MetadataDir, dist: Distribution, found: list[FileCheck]) -> str | None:
    if dist.kind == "egg-info":
        if not md.has_file_list:
            return "egg-info without installed-files.txt: no list of installed files to check"
        return None
    if not md.has_file_list:
        return "RECORD could not be read"
    trusted = dist.installer is not None and dist.installer.lower() in TRUSTED_INSTALLERS
    if trusted or not found:
        return None
    hex_rows = any(e.hash is not None and e.hash.encoding == "hex" for e in dist.entries)
    counts = defaultdict(int)
    for check in found:
        counts[check.kind.value] += 1
    detail = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    who = f"installer {dist.installer!r}" if dist.installer else "no INSTALLER (Debian-style)"
    extra = "; nonstandard RECORD (hex digests)" if hex_rows else ""
    return f"{who} and its RECORD does not describe the installed files ({detail}){extra}"

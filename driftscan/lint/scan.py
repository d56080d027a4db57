"""Scan trees of Python files: walk, prefilter, inspect in parallel, sort.

Directories are walked for ``*.py`` files without following symlinked directories and
skipping ``__pycache__``; a file named explicitly is scanned whatever its extension. Work is
spread over ``jobs`` processes (default: the usable cores) through one shared queue, no fixed
chunks: a worker that is free takes the next batch of files to prefilter (largest first), and
parses the small ones it lets through at once; a file that libcst would get more than
``DEFER_BYTES`` of comes back and waits in the queue by that cost — the bytes that reach
libcst — and the largest waiting one goes to the next free worker, one file at a time (only so
many bytes of them at once: a parse takes 100-500 times the file's size in memory). The result
is sorted and depends neither on ``jobs`` nor on the order files finish in.

The files scanned are data, never instructions: a worker reports each file as it finishes it,
so the parent knows which file a worker is on. A file that outlives its time budget
(``file_budget``) has its worker killed, one that crashes the worker (libcst's parser is
native code) costs that worker — either way that file gets a DBG004 finding, the rest of its
batch goes back to the queue for a fresh worker, and every other file's findings stay. With one
job (or one file) files up to ``IN_PROCESS_BYTES`` are parsed in this process: there the byte
scan of complexity.py, which keeps the parser's crashes and quadratic cases from ever reaching
it, is the protection, and bounds a small file's parse to seconds; larger ones go to one worker.

With a ``cache`` (scancache.py, handed in by the caller), a file whose signature (size,
mtime, ctime, inode, device) is the one an earlier scan with the same rules saw gets that
scan's row without being read.
"""
from __future__ import annotations

import bisect
import faulthandler
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import Connection, wait

import libcst

from ..fs.helpers import may_fork
from ..fs.reader import default_jobs
from ..core.values import Problem
from .files import ParseLimits, Row, ScanResult, collect_files, gather
from .engine import RuleError, complexity_finding, inspect_path
from .files import MAX_FILE_BYTES
from .noqa import with_unused_noqa
from .registry import load_rules, select_rules
from .rule import Rule

from .scancache import ResultCache, selection_id

# What every worker scans with: the rules, the prefilter, the size cap (``_scan_files``'s arguments).
_Config = tuple[Sequence[type[Rule]], bool, "int | None"]

# -- worker side ---------------------------------------------------------------------------

#: Seconds a worker may spend on one file (``FILE_BUDGET_PER_MB`` more per MB): far above any
#: real file (libcst parses ~0.3 MB/s, so a 4 MB file needs ~13 s), far below a stalled run.
FILE_BUDGET = 20.0
FILE_BUDGET_PER_MB = 10.0
STARTUP_BUDGET = 120.0  # for a worker to start (import driftscan and libcst)
IN_PROCESS_BYTES = 128 * 1024  # with one job, larger files are parsed in a worker
#: A file that libcst would get more bytes of than this is not parsed where the prefilter meets
#: it but handed back, and parsed later by cost (largest first) — its size is its measured cost.
DEFER_BYTES = 24 * 1024
#: Files handed to a worker at a time for the prefilter (and the parse of the small ones).
BATCH_FILES = 24
BATCH_BYTES = 384 * 1024
#: Deferred files parsed at the same time may hold at most this many bytes in all (libcst's tree
#: takes 100-500 bytes of memory per byte of source): one big file at a time, the others
#: prefiltering meanwhile. A single file is never held back.
HEAVY_INFLIGHT_BYTES = 320 * 1024
#: A forked worker whose memory grew past this after a parse is replaced by a fresh fork (freed
#: memory is not given back to the system reliably); 0: never.
RECYCLE_RSS = 96 * 1024 * 1024


def _scan_one(path: str, rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None,
              defer_over: int | None = None, ast_checks: bool = True) -> Row:
    """The row of one file; with ``defer_over`` a row with ``None`` findings for a file that
    libcst would get more bytes of (to be scanned later). ``ast_checks=False`` for a deferred
    file: it passed the rules' AST checks when it was deferred (engine.inspect_path)."""
    try:
        findings, nbytes, parsed = inspect_path(path, rules, prefilter, max_bytes, defer_over, ast_checks)
        # A deferred file's row holds None findings until it is scanned; Row types a finished one.
        return (path, findings, nbytes, parsed, None)  # type: ignore[return-value]
    except RuleError as e:
        return (path, [], 0, True, str(e))


def _scan_files(paths: list[str], rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None) -> list[Row]:
    return [_scan_one(path, rules, prefilter, max_bytes) for path in paths]


def _rss() -> int:
    """This process's resident memory in bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _worker_main(inbox: Connection, outbox: Connection, rules: Sequence[type[Rule]], prefilter: bool,
                 max_bytes: int | None) -> None:
    """Scan the files the parent sends, one ``(row, memory)`` message per file, until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and ends its workers
    outbox.send(None)  # ready: the parent starts timing the first file from here
    while True:
        try:
            task = inbox.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        paths, defer_over = task
        for path in paths:
            try:
                # A task without defer_over is a deferred file (_Queue.take): checked already.
                row = _scan_one(path, rules, prefilter, max_bytes, defer_over, ast_checks=defer_over is not None)
            except Exception as e:  # noqa: BLE001 - one file's failure must not cost the others
                row = (path, [], 0, True, f"could not inspect: {type(e).__name__}: {e}")
            outbox.send((row, _rss() if row[3] and row[1] is not None else 0))


def _exec_worker_main(inbox: Connection, outbox_fd: int) -> None:
    """Entry point of a worker started as a fresh interpreter (``_BOOT`` has set the parent's
    sys.path): the configuration (the rules travel by reference: module and class name), then work."""
    outbox = Connection(outbox_fd, readable=False)
    config = inbox.recv()
    _worker_main(inbox, outbox, *config)


# A fresh interpreter, isolated (-I: no current directory, user site or PYTHON* variables on its
# path, so nothing of an audited tree it may run in is imported), given the parent's sys.path.
# Not multiprocessing's "spawn": that re-runs the host's __main__ module in the child.
_BOOT = ("import sys\n"
         "from multiprocessing.connection import Connection\n"
         "inbox = Connection(int(sys.argv[1]), writable=False)\n"
         "sys.path[:] = inbox.recv()\n"
         "from driftscan.lint.scan import _exec_worker_main\n"
         "_exec_worker_main(inbox, int(sys.argv[2]))\n")


class _Worker:
    """One worker process: forked where driftscan may fork its host, else a fresh interpreter."""

    def __init__(self, fork: bool, config: _Config) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self.inbox = Connection(from_child_r, writable=False)
        self.outbox = Connection(to_child_w, readable=False)
        self.proc: multiprocessing.process.BaseProcess | subprocess.Popen[bytes] | None = None
        self.asked = False
        try:
            if fork:
                ctx = multiprocessing.get_context("fork")
                child_in, child_out = Connection(to_child_r, writable=False), Connection(from_child_w, readable=False)
                process = ctx.Process(target=_fork_worker_main, args=(child_in, child_out, self, config), daemon=True)
                process.start()
                self.proc = process
                child_in.close()
                child_out.close()
            else:
                self.proc = subprocess.Popen(
                    [sys.executable, "-I", "-c", _BOOT, str(to_child_r), str(from_child_w)],
                    pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    close_fds=True)
                os.close(to_child_r)
                os.close(from_child_w)
                self.outbox.send(list(sys.path))
                self.outbox.send(config)
        except BaseException:
            self.close()
            raise
        self.task: deque[tuple[str, int]] = deque()  # files given and not answered yet, in order
        self.heavy = 0  # bytes of the deferred file it parses (0: it prefilters a batch)
        self.ready = False  # it has started up (a fresh interpreter takes a while)
        self.started = time.monotonic()  # when it began the file at the head of ``task``

    def give(self, files: list[tuple[str, int]], defer_over: int | None, heavy: int = 0) -> None:
        self.task = deque(files)
        self.heavy = heavy
        if self.ready:
            self.started = time.monotonic()
        try:
            self.outbox.send(([p for p, _ in files], defer_over))
        except OSError:
            pass  # it died: the next wait sees its end

    def deadline(self) -> float:
        return self.started + (file_budget(self.task[0][1]) if self.ready else STARTUP_BUDGET)

    def close(self) -> None:
        for conn in (self.inbox, self.outbox):
            try:
                conn.close()
            except OSError:
                pass

    def ask_to_stop(self) -> None:
        """Tell it to exit once it is idle; ``stop`` then reaps it. Telling every worker first
        lets them wind down side by side (a fresh interpreter takes a while to exit)."""
        if not self.asked:
            self.asked = True
            try:
                self.outbox.send(None)
            except OSError:
                pass

    def stop(self, kill: bool = False) -> int | None:
        """End the process (kill: at once); its exit code (negative: the signal that ended it)."""
        proc = self.proc
        if not kill:
            self.ask_to_stop()
        code = None
        if isinstance(proc, subprocess.Popen):
            try:
                if kill:
                    proc.kill()
                code = proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        elif proc is not None:
            if kill:
                proc.kill()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()
            code = proc.exitcode
        self.close()
        return code


def _fork_worker_main(inbox: Connection, outbox: Connection, parent_side: _Worker, config: _Config) -> None:
    parent_side.close()  # the parent's ends of the pipes, inherited by the fork
    faulthandler.disable()  # a crash here costs one file and is reported by the parent, not dumped to stderr
    _worker_main(inbox, outbox, *config)


def file_budget(size: int) -> float:
    return FILE_BUDGET + FILE_BUDGET_PER_MB * size / 1e6


def _lost(path: str, why: str, rules: Sequence[type[Rule]]) -> Row:
    """The row of a file whose worker crashed or ran out of time on it."""
    file_rules = {r.FILE_PROBLEM: r for r in rules if r.FILE_PROBLEM}
    findings = complexity_finding(file_rules, f"not inspected: {why}")
    return (path, findings, 0, True, None if findings else f"not inspected: {why}")


class _Arriving(list[Row]):
    """Rows as they arrive, each arrival reported to ``progress(files done, files in all)``
    and to ``sink(row, lost)`` (the result cache)."""

    def __init__(self, total: int, progress: Callable[[int, int], None] | None, done: int = 0,
                 sink: Callable[[Row, bool], None] | None = None) -> None:
        super().__init__()
        self.total, self.progress, self.done, self.sink = total, progress, done, sink

    def _tick(self, n: int) -> None:
        self.done += n
        if self.progress is not None and n:
            self.progress(self.done, self.total)

    def append(self, row: Row, lost: bool = False) -> None:
        super().append(row)
        if self.sink is not None:
            self.sink(row, lost)
        self._tick(1)

    def extend(self, rows: Iterable[Row], lost: bool = False) -> None:
        rows = list(rows)
        super().extend(rows)
        if self.sink is not None:
            for row in rows:
                self.sink(row, lost)
        self._tick(len(rows))

    def __iadd__(self, rows: Iterable[Row]) -> _Arriving:  # type: ignore[override, misc]  # += takes any iterable, + a list (so typeshed's list)
        self.extend(rows)
        return self


class _Queue:
    """What is left to do: files to prefilter (largest first, in batches) and the deferred files
    libcst must parse, taken largest first within ``HEAVY_INFLIGHT_BYTES`` of memory in flight."""

    def __init__(self, files: Iterable[tuple[str, int]]):
        self.screen: deque[tuple[str, int]] = deque(sorted(files, key=lambda f: -f[1]))
        self.heavy: list[tuple[int, str, int]] = []  # (bytes to parse, path, size), ascending

    def __bool__(self) -> bool:
        return bool(self.screen or self.heavy)

    def defer(self, path: str, size: int, nbytes: int) -> None:
        bisect.insort(self.heavy, (nbytes, path, size))

    def put_back(self, files: Iterable[tuple[str, int]]) -> None:
        self.screen.extendleft(reversed(list(files)))

    def take(self, inflight: int) -> tuple[list[tuple[str, int]], int | None, int] | None:
        """``(files, defer_over, heavy bytes)`` for an idle worker, or None (nothing that fits now)."""
        if self.heavy:
            room = HEAVY_INFLIGHT_BYTES - inflight
            i = len(self.heavy) - 1 if inflight == 0 else bisect.bisect_right(self.heavy, (room, "\U0010ffff", 0)) - 1
            if i >= 0:
                nbytes, path, size = self.heavy.pop(i)
                return [(path, size)], None, max(1, nbytes)
        if self.screen:
            batch = [self.screen.popleft()]
            total = batch[0][1]
            while self.screen and len(batch) < BATCH_FILES and total + self.screen[0][1] <= BATCH_BYTES:
                total += self.screen[0][1]
                batch.append(self.screen.popleft())
            return batch, DEFER_BYTES, 0
        return None

    def drain(self) -> list[tuple[str, int]]:
        out = list(self.screen) + [(path, size) for _, path, size in self.heavy]
        self.screen.clear()
        self.heavy.clear()
        return out


def _scan_in_workers(files: list[tuple[str, int]], jobs: int, config: _Config,
                     budget: float | None = None, progress: Callable[[int, int], None] | None = None,
                     total: int | None = None, done: int = 0,
                     sink: Callable[[Row, bool], None] | None = None) -> list[Row]:
    """Rows for every file of ``files``, scanned by ``jobs`` worker processes (see the module
    docstring: a file that crashes or stalls its worker costs that file, and only it).
    ``budget``: seconds for all of it; files not parsed by then get DBG004 with that reason
    (a tree of many slow-but-legal files must not hold an audit for minutes)."""
    rules = config[0]
    rows: _Arriving = _Arriving(total if total is not None else len(files), progress, done, sink)
    fork = may_fork()  # only where driftscan may fork its host (driftscan/fs/helpers.py)
    if not fork and not sys.executable:
        rows.extend(_scan_files([p for p, _ in files], *config))  # no interpreter to start
        return rows
    queue = _Queue(files)
    stop_at = time.monotonic() + budget if budget is not None else float("inf")
    workers: list[_Worker] = []
    slots = min(jobs, len(files))
    starts_failed = False

    def feed(w: _Worker) -> bool:
        work = queue.take(sum(x.heavy for x in workers if x.task))
        if work is None:
            return False
        w.give(*work)
        return True

    try:
        workers = [_Worker(fork, config) for _ in range(slots)]
        for w in workers:
            feed(w)
        while any(w.task for w in workers):
            busy = [w for w in workers if w.task]
            now = time.monotonic()
            if now > stop_at:
                why = f"not parsed: the scan's {budget:.0f} s budget ran out"
                rows.extend([_lost(p, why, rules) for w in busy for p, _ in w.task], lost=True)
                rows.extend([_lost(p, why, rules) for p, _ in queue.drain()], lost=True)
                break  # the finally clause kills the workers, whose tasks are not cleared
            deadline = min(min(w.deadline() for w in busy), stop_at)
            ready = wait([w.inbox for w in busy], timeout=max(0.0, deadline - now))
            failed: list[tuple[_Worker, str]] = []
            for w in busy:
                if w.inbox in ready:
                    try:
                        message = w.inbox.recv()
                    except (EOFError, OSError):  # it died on the file at the head of its task
                        failed.append((w, "crashed" if w.ready else "failed to start"))
                        continue
                    w.started = time.monotonic()
                    if message is None:
                        w.ready = True
                        continue
                    row, rss = message
                    _path, size = w.task.popleft()
                    if row[1] is None:  # deferred: to be parsed by its cost
                        queue.defer(row[0], size, row[2])
                    else:
                        rows.append(row)
                    if fork and not w.task and RECYCLE_RSS and rss > RECYCLE_RSS:  # (a fork is cheap)
                        failed.append((w, "recycle"))
                elif time.monotonic() > w.deadline():
                    failed.append((w, "timeout" if w.ready else "failed to start"))
            for w, what in failed:
                code = w.stop(kill=what not in ("crashed", "recycle"))
                i = workers.index(w)
                if what == "failed to start":  # no file's fault: the work is done here instead
                    starts_failed = True
                    rows.extend(_scan_files([p for p, _ in w.task], *config))
                    w.task.clear()
                    del workers[i]
                    continue
                if what != "recycle":
                    path, size = w.task.popleft()
                    if what == "timeout":
                        why = f"parsing took longer than its {file_budget(size):.0f} s budget"
                    else:
                        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
                        why = f"the parser crashed on this file ({how})"
                    rows.append(_lost(path, why, rules), lost=True)
                    queue.put_back(w.task)  # the rest of its batch: for whichever worker is free
                    w.task.clear()
                del workers[i]
            if not starts_failed:
                while queue and len(workers) < slots:  # a fresh worker for each one lost
                    workers.append(_Worker(fork, config))
            for w in workers:
                if not w.task and queue:
                    feed(w)
        rows.extend(_scan_files([p for p, _ in queue.drain()], *config))  # every worker failed to start
    finally:
        for w in workers:
            if not w.task:
                w.ask_to_stop()
        for w in workers:
            w.stop(kill=bool(w.task))
    return rows


def _picklable(rules: Sequence[type[Rule]]) -> bool:
    try:
        pickle.dumps(list(rules))
        return True
    except Exception:  # rules defined in a function, a REPL...: scan in this process
        return False


def _code_signature(rules: Sequence[type[Rule]], prefilter: bool,
                    max_bytes: int | None) -> tuple[str, list[str]] | None:
    """What a cached result depends on besides the file: the rules (each class by name and the
    signature of its source file), the prefilter, the size cap, the inspect package's own
    sources, the interpreter and libcst — as a key, and the source files it was taken from
    (the result cache's guards, scancache.py). None when a rule's source cannot be told apart
    (a class made at run time): such a scan is not cached."""
    parts: list[object] = [sys.version, prefilter, max_bytes]
    here = os.path.dirname(os.path.abspath(__file__))
    sources = {os.path.join(here, n) for n in os.listdir(here) if n.endswith(".py")}
    sources.add(os.path.abspath(libcst.__file__))  # a new libcst is installed anew
    for rule in rules:
        module = sys.modules.get(rule.__module__)
        source = getattr(module, "__file__", None)
        if not source or "<locals>" in rule.__qualname__:
            return None
        parts.append((rule.CODE, rule.__module__, rule.__qualname__))
        sources.add(os.path.abspath(source))
    for source in sorted(sources):
        try:
            st = os.stat(source)
        except OSError:
            return None
        parts.append((source, st.st_size, st.st_mtime_ns, st.st_ino))
    return repr(parts), sorted(sources)


def scan_paths(
    paths: Iterable[str],
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    jobs: int | None = None,
    extra_rule_modules: Iterable[str] = (),
    *,
    rules: Sequence[type[Rule]] | None = None,
    plugins: bool = True,
    limits: ParseLimits = ParseLimits(),
    unused_noqa: bool = False,
    progress: Callable[[int, int], None] | None = None,
    cache: ResultCache | None = None,
    walked: tuple[list[tuple[str, int]], dict[str, os.stat_result], list[Problem]] | None = None,
) -> ScanResult:
    """Run the selected rules over every Python file under ``paths``.

    ``rules`` replaces the available rules (built-ins, plugins, ``extra_rule_modules``)
    before ``select``/``ignore`` apply. ``limits``: the prefilter, the largest file parsed and the
    seconds the parsing in workers may take in all (``ParseLimits``). ``unused_noqa`` (``scan --strict``): the
    unused-noqa rule runs too, unless ``ignore`` names it (lint/noqa.py). ``cache``: results
    of files whose signature is unchanged since an earlier scan with the same rules
    (scancache.py). Unknown selectors and broken plugins raise ``driftscan.core.errors.ConfigError``;
    everything file-specific ends up in the result. ``walked``: the walk of ``paths`` already
    made (warmscan.py's files, stats and errors), not made again.
    """
    paths, select, ignore, extra_rule_modules = list(paths), list(select), list(ignore), list(extra_rule_modules)
    prefilter, max_bytes, budget = limits.prefilter, limits.max_bytes, limits.budget
    available = list(rules) if rules is not None else load_rules(extra_rule_modules, plugins=plugins)
    # Rules handed over as they are run as they are (opt-in ones included) unless a selection is given too.
    chosen = list(rules) if rules is not None and not select and not ignore else select_rules(available, select, ignore)
    if unused_noqa:
        chosen = with_unused_noqa(available, chosen, ignore)
    result = ScanResult(rules=tuple(r.CODE for r in chosen))
    if walked is None:
        stats: dict[str, os.stat_result] = {}
        files = collect_files(paths, result.errors, stats)
    else:
        files, stats, errors = walked
        result.errors.extend(errors)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    config: _Config = (chosen, prefilter, max_bytes)
    rows: list[Row] = []
    sink = None
    if cache is not None:
        signed = _code_signature(chosen, prefilter, max_bytes) if chosen else None
        if signed is not None and cache.open(paths, signed[0]):
            extra = [getattr(sys.modules.get(spec.partition(":")[0]), "__file__", None) for spec in extra_rule_modules]
            cache.remember(selection_id(select, ignore, plugins, extra_rule_modules, unused_noqa, prefilter, max_bytes),
                           result.rules, [*signed[1], *(os.path.abspath(f) for f in extra if f)], plugins)
            todo = []
            for path, size in files:
                row = cache.lookup(path, stats[path])
                if row is None:
                    todo.append((path, size))
                else:
                    rows.append(row)
            files_all, files = files, todo
            if progress is not None and rows:
                progress(len(rows), len(files_all))
            started_ns = time.time_ns()

            opened = cache

            def sink(row: Row, lost: bool) -> None:
                if not lost and row[4] is None:
                    opened.store(row[0], stats[row[0]], row, started_ns)
        else:
            cache = None
    done, total = len(rows), len(rows) + len(files)
    if not _picklable(chosen):
        new = _scan_files([p for p, _ in files], *config)
        if sink is not None:
            for row in new:
                sink(row, False)
        rows += new
    elif jobs > 1 and len(files) > 1:
        rows += _scan_in_workers(files, jobs, config, budget, progress, total, done, sink)
    else:
        # One job: here, but for files big enough to take long (dense code parses ~30 s/MB),
        # which one worker takes, so that the time budget holds for them too.
        big = [(p, size) for p, size in files if size > IN_PROCESS_BYTES]
        small = _scan_files([p for p, size in files if size <= IN_PROCESS_BYTES], *config)
        if sink is not None:
            for row in small:
                sink(row, False)
        rows += small
        if progress is not None and small:
            progress(len(rows), total)
        if big:
            rows += _scan_in_workers(big, 1, config, budget, progress, total, len(rows), sink)
    if cache is not None:
        cache.save(stats)
    return gather(result, rows)

"""Scan trees of Python files: walk, prefilter, inspect in parallel, sort.

Directories are walked for ``*.py`` files without following symlinked directories and
skipping ``__pycache__``; a file named explicitly is scanned whatever its extension. Work is
spread over ``jobs`` processes (default: the usable cores) in chunks, largest files first so
that one big file does not finish last; the result is sorted and does not depend on ``jobs``.

The files scanned are data, never instructions: a worker reports each file as it finishes it,
so the parent knows which file a worker is on. A file that outlives its time budget
(``file_budget``) has its worker killed, one that crashes the worker (libcst's parser is
native code) costs that worker — either way that file gets a DBG004 finding, a fresh worker
takes the rest of the chunk, and every other file's findings stay. With one job (or one file)
files up to ``IN_PROCESS_BYTES`` are parsed in this process: there the byte scan of
complexity.py, which keeps the parser's crashes and quadratic cases from ever reaching it, is
the protection, and bounds a small file's parse to seconds; larger ones go to one worker.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import stat
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait

from ..fileio import default_jobs, file_type, walk
from ..model import Finding, Problem
from .engine import MAX_FILE_BYTES, RuleError, complexity_finding, inspect_path
from .noqa import with_unused_noqa
from .registry import load_rules, select_rules
from .rule import Rule


@dataclass
class ScanResult:
    findings: list[tuple[str, Finding]] = field(default_factory=list)  # (path, finding), sorted
    errors: list[Problem] = field(default_factory=list)
    files_scanned: int = 0
    bytes_scanned: int = 0
    files_parsed: int = 0  # files the prefilter let through to libcst
    rules: tuple[str, ...] = ()  # codes of the rules that ran


def collect_files(paths: Iterable[str], errors: list[Problem]) -> list[tuple[str, int]]:
    """``(path, size)`` of every file to scan, deduplicated, in walk order."""
    seen: set[str] = set()
    out: list[tuple[str, int]] = []

    def add(path: str) -> None:
        key = os.path.normpath(path)
        if key in seen:
            return
        seen.add(key)
        try:
            st = os.stat(path)
        except OSError as e:
            errors.append(Problem(path, f"cannot stat: {e.strerror or e}"))
            return
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device named on the command line: not scanned (bit 2)
            errors.append(Problem(path, f"not a regular file ({file_type(st.st_mode)}): not scanned"))
            return
        out.append((path, st.st_size))

    def onerror(e: OSError) -> None:
        errors.append(Problem(e.filename or "?", f"cannot list directory: {e.strerror or e}"))

    for top in paths:
        if os.path.isdir(top):
            for dirpath, dirnames, filenames in walk(top, onerror=onerror):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for name in sorted(filenames):
                    if name.endswith(".py"):
                        add(os.path.join(dirpath, name))
        elif os.path.exists(top):
            add(top)
        else:
            errors.append(Problem(top, "no such file or directory"))
    return out


# -- worker side ---------------------------------------------------------------------------
Row = tuple[str, list[Finding], int, bool, "str | None"]  # path, findings, bytes, parsed, error

#: Seconds a worker may spend on one file (``FILE_BUDGET_PER_MB`` more per MB): far above any
#: real file (libcst parses ~0.3 MB/s, so a 4 MB file needs ~13 s), far below a stalled run.
FILE_BUDGET = 20.0
FILE_BUDGET_PER_MB = 10.0
STARTUP_BUDGET = 120.0  # for a worker to start (import driftscan and libcst)
IN_PROCESS_BYTES = 128 * 1024  # with one job, larger files are parsed in a worker


def _scan_one(path: str, rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None) -> Row:
    try:
        findings, nbytes, parsed = inspect_path(path, rules, prefilter, max_bytes)
        return (path, findings, nbytes, parsed, None)
    except RuleError as e:
        return (path, [], 0, True, str(e))


def _scan_files(paths: list[str], rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None) -> list[Row]:
    return [_scan_one(path, rules, prefilter, max_bytes) for path in paths]


def _worker_main(inbox: Connection, outbox: Connection, rules: Sequence[type[Rule]], prefilter: bool,
                 max_bytes: int | None) -> None:
    """Scan the chunks the parent sends, one result message per file, until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and ends its workers
    outbox.send(None)  # ready: the parent starts timing the first file from here
    while True:
        try:
            paths = inbox.recv()
        except (EOFError, OSError):
            return
        if paths is None:
            return
        for path in paths:
            try:
                row = _scan_one(path, rules, prefilter, max_bytes)
            except Exception as e:  # noqa: BLE001 - one file's failure must not cost the others
                row = (path, [], 0, True, f"could not inspect: {type(e).__name__}: {e}")
            outbox.send(row)


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
         "from driftscan.inspect.scan import _exec_worker_main\n"
         "_exec_worker_main(inbox, int(sys.argv[2]))\n")


class _Worker:
    """One worker process: forked where driftscan may fork its host, else a fresh interpreter."""

    def __init__(self, fork: bool, config: tuple):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self.inbox = Connection(from_child_r, writable=False)
        self.outbox = Connection(to_child_w, readable=False)
        self.proc: multiprocessing.process.BaseProcess | subprocess.Popen | None = None
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
        self.chunk: deque[tuple[str, int]] = deque()
        self.ready = False  # it has started up (a fresh interpreter takes a while)
        self.started = time.monotonic()  # when it began the file at the head of ``chunk``

    def give(self, chunk: list[tuple[str, int]]) -> None:
        self.chunk = deque(chunk)
        if self.ready:
            self.started = time.monotonic()
        try:
            self.outbox.send([p for p, _ in chunk])
        except OSError:
            pass  # it died: the next wait sees its end

    def deadline(self) -> float:
        return self.started + (file_budget(self.chunk[0][1]) if self.ready else STARTUP_BUDGET)

    def close(self) -> None:
        for conn in (self.inbox, self.outbox):
            try:
                conn.close()
            except OSError:
                pass

    def stop(self, kill: bool = False) -> int | None:
        """End the process (kill: at once); its exit code (negative: the signal that ended it)."""
        proc = self.proc
        if not kill:
            try:
                self.outbox.send(None)
            except OSError:
                pass
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


def _fork_worker_main(inbox: Connection, outbox: Connection, parent_side: _Worker, config: tuple) -> None:
    parent_side.close()  # the parent's ends of the pipes, inherited by the fork
    import faulthandler

    faulthandler.disable()  # a crash here costs one file and is reported by the parent, not dumped to stderr
    _worker_main(inbox, outbox, *config)


def file_budget(size: int) -> float:
    return FILE_BUDGET + FILE_BUDGET_PER_MB * size / 1e6


def _lost(path: str, why: str, rules: Sequence[type[Rule]]) -> Row:
    """The row of a file whose worker crashed or ran out of time on it."""
    file_rules = {r.FILE_PROBLEM: r for r in rules if r.FILE_PROBLEM}
    findings = complexity_finding(file_rules, f"not inspected: {why}")
    return (path, findings, 0, True, None if findings else f"not inspected: {why}")


class _Arriving(list):
    """Rows as they arrive, each arrival reported to ``progress(files done, files in all)``."""

    def __init__(self, total: int, progress: Callable[[int, int], None] | None, done: int = 0) -> None:
        super().__init__()
        self.total, self.progress, self.done = total, progress, done

    def _tick(self, n: int) -> None:
        self.done += n
        if self.progress is not None and n:
            self.progress(self.done, self.total)

    def append(self, row) -> None:
        super().append(row)
        self._tick(1)

    def extend(self, rows) -> None:
        rows = list(rows)
        super().extend(rows)
        self._tick(len(rows))

    def __iadd__(self, rows):  # type: ignore[override, misc]
        self.extend(rows)
        return self


def _scan_in_workers(chunks: list[list[tuple[str, int]]], jobs: int, config: tuple,
                     budget: float | None = None, progress: Callable[[int, int], None] | None = None,
                     total: int | None = None, done: int = 0) -> list[Row]:
    """Rows for every file of ``chunks``, scanned by ``jobs`` worker processes (see the module
    docstring: a file that crashes or stalls its worker costs that file, and only it).
    ``budget``: seconds for all of it; files not parsed by then get DBG004 with that reason
    (a tree of many slow-but-legal files must not hold an audit for minutes)."""
    from ..forking import may_fork

    rules = config[0]
    fork = may_fork()  # only where driftscan may fork its host (verify/env/fast/forked.py)
    if not fork and not sys.executable:
        return _scan_files([p for chunk in chunks for p, _ in chunk], *config)  # no interpreter to start
    todo = deque(chunks)
    rows: list[Row] = _Arriving(total if total is not None else sum(len(c) for c in chunks), progress, done)
    stop_at = time.monotonic() + budget if budget is not None else float("inf")
    workers = [_Worker(fork, config) for _ in range(min(jobs, len(chunks)))]
    try:
        busy: list[_Worker] = []
        for w in workers:
            if todo:
                w.give(todo.popleft())
                busy.append(w)
        while busy:
            now = time.monotonic()
            if now > stop_at:
                why = f"not parsed: the scan's {budget:.0f} s budget ran out"
                rows += [_lost(p, why, rules) for w in busy for p, _ in w.chunk]
                rows += [_lost(p, why, rules) for chunk in todo for p, _ in chunk]
                todo.clear()
                break  # the finally clause kills the workers, whose chunks are not cleared
            deadline = min(min(w.deadline() for w in busy), stop_at)
            ready = wait([w.inbox for w in busy], timeout=max(0.0, deadline - now))
            replaced: list[tuple[_Worker, str]] = []
            for w in busy:
                if w.inbox in ready:
                    try:
                        row = w.inbox.recv()
                    except (EOFError, OSError):  # it died on the file at the head of its chunk
                        replaced.append((w, "crashed" if w.ready else "failed to start"))
                        continue
                    w.started = time.monotonic()
                    if row is None:
                        w.ready = True
                        continue
                    if w.chunk:
                        rows.append(row)
                        w.chunk.popleft()
                elif time.monotonic() > w.deadline():
                    replaced.append((w, "timeout" if w.ready else "failed to start"))
            for w, what in replaced:
                code = w.stop(kill=what != "crashed")
                if what == "failed to start":  # no file's fault: the work is done here instead
                    rows.extend(_scan_files([p for p, _ in w.chunk], *config))
                    w.chunk.clear()
                    busy.remove(w)
                    workers.remove(w)
                    continue
                path, size = w.chunk.popleft()
                if what == "timeout":
                    why = f"parsing took longer than its {file_budget(size):.0f} s budget"
                else:
                    how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
                    why = f"the parser crashed on this file ({how})"
                rows.append(_lost(path, why, rules))
                fresh = _Worker(fork, config)
                workers[workers.index(w)] = fresh
                busy[busy.index(w)] = fresh
                if w.chunk:
                    fresh.give(list(w.chunk))
                else:
                    fresh.chunk = deque()
            for w in busy:
                if not w.chunk and todo:
                    w.give(todo.popleft())
            busy = [w for w in busy if w.chunk]
        while todo:  # every worker failed to start
            rows.extend(_scan_files([p for p, _ in todo.popleft()], *config))
    finally:
        for w in workers:
            w.stop(kill=bool(w.chunk))
    return rows


def _chunks(files: list[tuple[str, int]], jobs: int) -> list[list[tuple[str, int]]]:
    by_size = sorted(files, key=lambda f: -f[1])
    size = max(1, min(64, len(by_size) // (jobs * 8) or 1))
    return [by_size[i : i + size] for i in range(0, len(by_size), size)]


def _picklable(rules: Sequence[type[Rule]]) -> bool:
    try:
        pickle.dumps(list(rules))
        return True
    except Exception:  # rules defined in a function, a REPL...: scan in this process
        return False


def scan_paths(
    paths: Iterable[str],
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    jobs: int | None = None,
    prefilter: bool = True,
    extra_rule_modules: Iterable[str] = (),
    *,
    rules: Sequence[type[Rule]] | None = None,
    plugins: bool = True,
    max_bytes: int | None = MAX_FILE_BYTES,
    budget: float | None = None,
    unused_noqa: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ScanResult:
    """Run the selected rules over every Python file under ``paths``.

    ``rules`` replaces the available rules (built-ins, plugins, ``extra_rule_modules``)
    before ``select``/``ignore`` apply. ``budget``: seconds the parsing in workers may take in
    all (files beyond it get DBG004); None for none. ``unused_noqa`` (``scan --strict``): the
    unused-noqa rule runs too, unless ``ignore`` names it (inspect/noqa.py). Unknown selectors and
    broken plugins raise ``driftscan.errors.ConfigError``; everything file-specific ends up in the result.
    """
    available = list(rules) if rules is not None else load_rules(extra_rule_modules, plugins=plugins)
    # Rules handed over as they are run as they are (opt-in ones included) unless a selection is given too.
    chosen = list(rules) if rules is not None and not select and not ignore else select_rules(available, select, ignore)
    if unused_noqa:
        chosen = with_unused_noqa(available, chosen, ignore)
    result = ScanResult(rules=tuple(r.CODE for r in chosen))
    files = collect_files(paths, result.errors)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    config = (chosen, prefilter, max_bytes)
    if not _picklable(chosen):
        rows = _scan_files([p for p, _ in files], *config)
    elif jobs > 1 and len(files) > 1:
        rows = _scan_in_workers(_chunks(files, jobs), jobs, config, budget, progress, len(files))
    else:
        # One job: here, but for files big enough to take long (dense code parses ~30 s/MB),
        # which one worker takes, so that the time budget holds for them too.
        big = [(p, size) for p, size in files if size > IN_PROCESS_BYTES]
        rows = _scan_files([p for p, size in files if size <= IN_PROCESS_BYTES], *config)
        if progress is not None and rows:
            progress(len(rows), len(files))
        if big:
            rows += _scan_in_workers([big], 1, config, budget, progress, len(files), len(rows))
    for path, findings, nbytes, parsed, error in rows:
        result.files_scanned += 1
        result.bytes_scanned += nbytes
        result.files_parsed += parsed
        result.findings.extend((path, f) for f in findings)
        if error:
            result.errors.append(Problem(path, error))
    result.findings.sort(key=lambda pf: (pf[0], pf[1].line, pf[1].column, pf[1].code, pf[1].message))
    result.errors.sort(key=lambda p: (p.path, p.message))
    return result

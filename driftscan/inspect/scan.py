"""Scan trees of Python files: walk, prefilter, inspect in parallel, sort.

Directories are walked for ``*.py`` files without following symlinked directories and
skipping ``__pycache__``; a file named explicitly is scanned whatever its extension. Work is
spread over ``jobs`` processes (default: the usable cores) in chunks, largest files first so
that one big file does not finish last; the result is sorted and does not depend on ``jobs``.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from ..model import Finding, Problem
from .engine import MAX_FILE_BYTES, RuleError, inspect_path
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


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


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
            out.append((path, os.stat(path).st_size))
        except OSError as e:
            errors.append(Problem(path, f"cannot stat: {e.strerror or e}"))

    def onerror(e: OSError) -> None:
        errors.append(Problem(e.filename or "?", f"cannot list directory: {e.strerror or e}"))

    for top in paths:
        if os.path.isdir(top):
            for dirpath, dirnames, filenames in os.walk(top, followlinks=False, onerror=onerror):
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
_worker_config: tuple[Sequence[type[Rule]], bool, int | None] | None = None


def _init_worker(rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None) -> None:
    global _worker_config
    _worker_config = (rules, prefilter, max_bytes)


def _scan_chunk(paths: list[str]) -> list[tuple[str, list[Finding], int, bool, str | None]]:
    assert _worker_config is not None, "worker not initialised"
    return _scan_files(paths, *_worker_config)


def _scan_files(
    paths: list[str], rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None
) -> list[tuple[str, list[Finding], int, bool, str | None]]:
    out = []
    for path in paths:
        try:
            findings, nbytes, parsed = inspect_path(path, rules, prefilter, max_bytes)
            out.append((path, findings, nbytes, parsed, None))
        except RuleError as e:
            out.append((path, [], 0, True, str(e)))
    return out


def _chunks(files: list[tuple[str, int]], jobs: int) -> list[list[str]]:
    by_size = [p for p, _ in sorted(files, key=lambda f: -f[1])]
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
) -> ScanResult:
    """Run the selected rules over every Python file under ``paths``.

    ``rules`` replaces the available rules (built-ins, plugins, ``extra_rule_modules``)
    before ``select``/``ignore`` apply. Unknown selectors and broken plugins raise
    ``driftscan.errors.ConfigError``; everything file-specific ends up in the result.
    """
    available = list(rules) if rules is not None else load_rules(extra_rule_modules, plugins=plugins)
    chosen = select_rules(available, select, ignore)
    result = ScanResult(rules=tuple(r.CODE for r in chosen))
    files = collect_files(paths, result.errors)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if jobs > 1 and len(files) > 1 and _picklable(chosen):
        chunks = _chunks(files, jobs)
        with ProcessPoolExecutor(
            max_workers=min(jobs, len(chunks)), initializer=_init_worker, initargs=(chosen, prefilter, max_bytes)
        ) as pool:
            rows = [row for chunk in pool.map(_scan_chunk, chunks) for row in chunk]
    else:
        rows = _scan_files([p for p, _ in files], chosen, prefilter, max_bytes)
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

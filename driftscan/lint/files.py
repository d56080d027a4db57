"""What a scan looks at and what it returns, without the rule engine: the walk for ``*.py``
files and the result type. Kept apart from scan.py so that a scan settled from the result
cache (warmscan.py) never imports libcst or the rules."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..fs.reader import file_type, walk
from ..core.values import Finding, Problem

#: Files larger than this are not parsed (DBG003); the rule engine's limit (engine.py), here so
#: that a scan settled from the cache knows the default without importing the engine.
MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ParseLimits:
    """How far a scan parses: ``prefilter`` (the byte and AST pre-checks that spare files no rule
    can match; never a finding's difference), the largest file parsed (``max_bytes``; None: any),
    and ``budget``, the seconds the parsing in workers may take in all (None: no limit; files
    beyond it get DBG004)."""

    prefilter: bool = True
    max_bytes: int | None = MAX_FILE_BYTES
    budget: float | None = None

Row = tuple[str, list[Finding], int, bool, "str | None"]  # path, findings, bytes, parsed, error


@dataclass
class ScanResult:
    findings: list[tuple[str, Finding]] = field(default_factory=list)  # (path, finding), sorted
    errors: list[Problem] = field(default_factory=list)
    files_scanned: int = 0
    bytes_scanned: int = 0
    files_parsed: int = 0  # files the prefilter let through to libcst
    rules: tuple[str, ...] = ()  # codes of the rules that ran


def collect_files(paths: Sequence[str], errors: list[Problem],
                  stats: dict[str, os.stat_result] | None = None) -> list[tuple[str, int]]:
    """``(path, size)`` of every file to scan, deduplicated, in walk order (``stats``: each
    one's stat, by path)."""
    seen: set[str] = set()
    out: list[tuple[str, int]] = []
    dedupe = len(paths) > 1  # one directory's walk never meets a file twice

    def add(path: str) -> None:
        if dedupe:
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
        if stats is not None:
            stats[path] = st

    def onerror(e: OSError) -> None:
        errors.append(Problem(e.filename or "?", f"cannot list directory: {e.strerror or e}"))

    for top in paths:
        if os.path.isdir(top):
            for dirpath, dirnames, filenames in walk(top, onerror=onerror):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                prefix = dirpath if dirpath.endswith(os.sep) else dirpath + os.sep  # os.path.join's result
                for name in sorted(filenames):
                    if name.endswith(".py"):
                        add(prefix + name)
        elif os.path.exists(top):
            add(top)
        else:
            errors.append(Problem(top, "no such file or directory"))
    return out


def gather(result: ScanResult, rows: Iterable[Row]) -> ScanResult:
    """Add the rows' counts, findings and errors to ``result``, sorted as the scan promises
    (by path, line, column, code, message; errors by path and message)."""
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

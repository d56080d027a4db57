"""``scan_paths`` with the result cache consulted first, before the rule engine is imported.

A re-scan of an unchanged tree is the common case (a CI job, an editor, ``driftscan scan`` run
twice). When the cache remembers this selection of rules and every file that decided it is
unchanged (scancache.py ``recall``), and every scanned file's row is still valid, the result is
assembled from the cache alone: no rule, no libcst, no worker process. Anything else — a file
changed or new, another selection, a rule's source edited, no cache — goes to the full scan
(scan.py), handed the walk already made.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ..core.values import Problem
from .files import ParseLimits, ScanResult, collect_files, gather
from .scancache import selection_id

if TYPE_CHECKING:
    from .rule import Rule
    from .scancache import ResultCache


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
) -> ScanResult:
    """As ``scan.scan_paths`` (same arguments, same result), settled from ``cache`` when it can be."""
    paths, select, ignore, extra_rule_modules = list(paths), list(select), list(ignore), list(extra_rule_modules)
    walked = None
    if cache is not None and rules is None:
        selection = selection_id(select, ignore, plugins, extra_rule_modules, unused_noqa, limits.prefilter,
                                 limits.max_bytes)
        codes = cache.recall(paths, selection)
        if codes is not None:
            errors: list[Problem] = []
            stats: dict[str, os.stat_result] = {}
            files = collect_files(paths, errors, stats)
            rows = []
            for path, _ in files:
                row = cache.lookup(path, stats[path])
                if row is None:
                    break
                rows.append(row)
            else:
                if progress is not None and rows:
                    progress(len(rows), len(rows))
                cache.save(stats)  # drops the rows of files no longer there
                return gather(ScanResult(errors=errors, rules=codes), rows)
            walked = (files, stats, errors)
            cache.hits = cache.misses = 0  # the full scan looks every file up again
    # Deferred: the full scan imports the engine and libcst (0.3-0.7 s, python -X importtime),
    # which a scan settled from its cache above never needs (this module's reason to be).
    from .scan import scan_paths as full_scan

    return full_scan(paths, select, ignore, jobs, extra_rule_modules, rules=rules, plugins=plugins, limits=limits,
                     unused_noqa=unused_noqa, progress=progress, cache=cache, walked=walked)

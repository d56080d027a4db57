"""The inspect stage of an audit: debug-code rules on drifted Python files, and the dumps they left.

Runs the rule engine (``driftscan.lint``) only on files verify flagged — modified or added
``.py`` files in the environment and in editable source trees — then searches what each dump
call writes and reports the files found as one ``debug-artifacts`` drift per pattern. The
patterns come from the audited code, so only plausible ones are searched, within bounds, and
only regular files no RECORD owns, outside the environment's package directories and newer
than the code that writes them count (lint/artifacts.py); the remedy names each file.
Matching files older than the code's last change but no older than its own mtime or its
distribution's install (RECORD's ctime) are one ``possible-debug-artifacts`` drift, listed for
review and never deleted; older ones are counted in a note (docs/security.md §4).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple, Optional

from typing import TYPE_CHECKING

from ..caches.keys import cache_key
from ..fs.reader import read_regular
from ..core.units import count, size as readable
from ..core.values import Area, DriftKind, DumpFiles, DumpWriter, FileCheck, FileState, Finding, Problem
from .artifacts import ArtifactGroup, find_artifacts
from .files import MAX_FILE_BYTES, ParseLimits
from .scancache import OutcomeMemo
from .vocabulary import NOT_INSPECTED, FileProblem

if TYPE_CHECKING:
    from .rule import Rule

# The rule engine (and libcst) is imported only when the drifted files must really be inspected:
# an audit whose drifted files are unchanged since the last one takes their findings from its
# memo (scancache.OutcomeMemo) and never imports it.

_INSPECTED_KINDS = {DriftKind.MODIFIED, DriftKind.ADDED, DriftKind.CLOBBERED, DriftKind.STARTUP_CODE,
                    DriftKind.RECORD_REWRITTEN}
# Added .py files are syntax-checked up to this many (a package copied in by hand can bring
# thousands, and compiling 50 MB costs seconds); modified files always are.
SYNTAX_CHECK_ADDED_LIMIT = 500
# Seconds the parsing of drifted files may take in all: an audit ends within a minute even when a
# tree holds many slow-but-legal files (each also has its own budget in lint/scan.py).
PARSE_BUDGET = 45.0
_PY = (".py", ".pyw")


@dataclass
class InspectOutcome:
    checks: list[FileCheck]
    artifacts: list[FileCheck] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)  # deliberately not searched (too-broad patterns)


def _inspectable(check: FileCheck) -> bool:
    return (check.kind in _INSPECTED_KINDS and check.area in (Area.PYTHON, Area.SOURCE) and check.path.endswith(_PY)
            and check.regular_file)


def _package_dirs(checks: Sequence[FileCheck]) -> set[str]:
    """The environment's package directories (and editable source trees) that drifts were
    found in: dumps are never counted inside them (files there are the audit's own drifts)."""
    return {c.root for c in checks if c.area in (Area.PYTHON, Area.SOURCE) and c.root}


def _mtime(path: str) -> float | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    # The later of mtime and ctime: the tree sets mtimes at will (touch -d 1971), so a writer
    # backdated that way would make every plausible old file on the machine count as its dump;
    # ctime cannot be set back, and is when the code last changed (or was copied) here.
    return max(st.st_mtime, st.st_ctime)


def _claimed_mtime(path: str) -> float | None:
    """The writer's own mtime: what the tree says of when the code was written (it can be set back)."""
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return None


def installed_at(check: FileCheck) -> float | None:
    """When the distribution owning ``check`` was installed here: its RECORD's ctime (lstat), which
    the tree cannot set back, and which a later edit, chmod or ``cp -a`` of the code does not move."""
    dist = check.distribution
    if dist is None or not dist.metadata_dir:
        return None
    try:
        return os.lstat(os.path.join(dist.metadata_dir, "RECORD")).st_ctime
    except OSError:
        return None


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


class DumpSearch(NamedTuple):
    drift: FileCheck | None  # the debug-artifacts drift, when files were found
    note: Problem | None  # why the search was refused or cut short, or files not counted
    possible: FileCheck | None = None  # the possible-debug-artifacts drift (older files, never deleted)


def _artifact_check(pattern: str, writers: list[tuple[str, Finding]], owned: Callable[[str], bool] | None,
                    exclude: set[str], dump_list: DumpLister | None = None,
                    audited: Iterable[str] = (), installed: dict[str, float] | None = None) -> DumpSearch:
    """The debug-artifacts drift of one dump pattern, and what to say about a search refused or
    cut short. A file counts only if it is no older than the code that writes it (its mtime and
    ctime); an older one is a *possible* dump when it is no older than the code's own mtime or its
    distribution's install (``installed``: writer path → its RECORD's ctime), listed in a drift of
    its own that deletes nothing; older still, it is counted in a note."""
    times = [t for t in (_mtime(p) for p, _ in writers) if t is not None]
    claimed = [t for t in (_claimed_mtime(p) for p, _ in writers) if t is not None]
    install = [installed[p] for p, _ in writers if installed and p in installed]
    floor = min(claimed + install) if claimed or install else None
    group = find_artifacts(pattern, newer_than=min(times) if times else None, owned=owned, exclude=exclude,
                           possible_after=floor)
    if group is None:
        return DumpSearch(None, None)
    if group.refused:
        return DumpSearch(None, Problem(pattern, f"dump pattern not searched: {group.refused}; "
                                                 "look for the files by hand"))
    notes = [f"dump search {group.truncated}; the files found so far are listed"] if group.truncated else []
    if group.too_old:
        notes.append(f"{count(group.too_old, 'file')} matching it not counted as dumps: older than the code that writes "
                     "them and than its distribution's install here")
    note = Problem(pattern, "; ".join(notes)) if notes else None
    possible = _possible_check(pattern, group, writers, min(times) if times else None,
                               min(install) if install else None, dump_list, audited)
    if not group.paths:
        return DumpSearch(None, note, possible)
    where = ", ".join(f"{p}:{f.line}" for p, f in writers)
    size = group.total_bytes
    evidence = (f"{count(len(group.paths), 'file')}, {readable(size)}, matching {pattern}, newer than the code that "
                f"writes them ({where}, {writers[0][1].code} {writers[0][1].name}) and owned by no distribution; "
                "no reinstall removes them; review them, then remove them")
    # Every file by name: the remedy never hands a pattern from the audited code to a shell.
    paths = tuple(group.paths)
    list_file = dump_list(paths, tuple(audited)) if dump_list is not None and len(paths) > INLINE_DUMPS else None
    if list_file is not None:
        quoted = shlex.quote(list_file)
        remedy = (f"{len(paths)} files matching {pattern}; list in {list_file} (review them: xargs -0 ls -l -- < "
                  f"{quoted}), then: xargs -0 rm -- < {quoted}")
    else:
        remedy = "rm -- " + " ".join(shlex.quote(p) for p in paths)
    found = DumpFiles(pattern, paths, size, tuple(DumpWriter(p, f.line, f.code) for p, f in writers),
                      list_file=list_file)
    drift = FileCheck(DriftKind.DEBUG_ARTIFACTS, pattern, os.path.dirname(pattern), None, {}, {}, evidence,
                      area=Area.EXTERNAL, remedy_hint=remedy, dumps=found)
    return DumpSearch(drift, note, possible)


def _possible_check(pattern: str, group: ArtifactGroup, writers: list[tuple[str, Finding]], changed: float | None,
                    install: float | None, dump_list: DumpLister | None, audited: Iterable[str]) -> FileCheck | None:
    """The possible-debug-artifacts drift: files matching ``pattern`` older than the code's last
    change (``changed``: its ctime or mtime, the later) but no older than its own mtime or its
    distribution's install. Listed for review; the remedy never deletes (the tree could have
    backdated the code's mtime to have a victim's old files offered, so only a file newer than
    what the tree cannot backdate is ever a definite dump)."""
    if not group.possible:
        return None
    paths = tuple(group.possible)
    where = ", ".join(f"{p}:{f.line}" for p, f in writers)
    last = f" ({_when(changed)})" if changed is not None else ""
    after = (f"written after its distribution was installed here ({_when(install)}) or after the code's own "
             "recorded modification time" if install is not None else "written after the code's own recorded "
             "modification time")
    why = (f"older than the last change of the code that writes them{last}, {after}: the code was edited again "
           "after writing them, or copied (cp -a, rsync) or chmod-ed since — or its modification time was set back "
           "to make older files look like its dumps")
    evidence = (f"{count(len(paths), 'possible dump file')}, {readable(group.possible_bytes)}, matching {pattern}, "
                f"written by {where} ({writers[0][1].code} {writers[0][1].name}): {why}; owned by no distribution; "
                "driftscan does not offer to delete files older than the code that writes them")
    list_file = dump_list(paths, tuple(audited)) if dump_list is not None and len(paths) > INLINE_DUMPS else None
    if list_file is not None:
        remedy = (f"review them (xargs -0 ls -l -- < {shlex.quote(list_file)}); if they are the debug code's dumps, "
                  "remove them yourself: driftscan does not offer to delete possible dumps")
    else:
        remedy = ("review them (ls -l -- " + " ".join(shlex.quote(p) for p in paths) + "); if they are the debug "
                  "code's dumps, remove them yourself: driftscan does not offer to delete possible dumps")
    actual: FileState = {"possible_artifacts": list(paths), "count": len(paths), "bytes": group.possible_bytes,
                         "why": why, "written_by": [{"path": p, "line": f.line, "code": f.code} for p, f in writers]}
    if list_file:
        actual["list_file"] = list_file
    return FileCheck(DriftKind.POSSIBLE_DEBUG_ARTIFACTS, pattern, os.path.dirname(pattern), None, {}, actual,
                     evidence, area=Area.EXTERNAL, remedy_hint=remedy)


# Up to this many dump files are named in the remedy itself; more go to a list file.
INLINE_DUMPS = 3
# (paths, directories the audit reads) -> the list file written, or None: the caller's writer
# (api passes driftscan.caches.statcache.write_dump_list; this layer writes nothing).
DumpLister = Callable[[Sequence[str], Sequence[str]], Optional[str]]
#: The rules available to a run, loaded on the first call (the rule engine imports libcst).
RuleLoader = Callable[[], "Sequence[type[Rule]]"]
# <prefix>/lib/pythonX.Y/site-packages: the prefix is audited too (environment/target.py's layout)
_PREFIX_LAYOUT = re.compile(r"^(?P<prefix>.+?)[\\/](?:lib(?:64)?[\\/](?:python|pypy)\d[^\\/]*|Lib)[\\/](?:site|dist)-packages$")


def _unparsable(path: str, rules: Sequence[type[Rule]]) -> list[Finding]:
    # Deferred: the engine and the scanner import libcst (0.3-0.7 s, python -X importtime), which
    # an audit with no drifted file to parse must not pay (tests/contract/test_imports.py).
    from .engine import import_check
    from .scan import IN_PROCESS_BYTES

    try:
        data = read_regular(path, MAX_FILE_BYTES)
    except OSError:
        return []  # the engine reports unreadable and too large files itself
    return import_check(data, path, rules, parse=len(data) <= IN_PROCESS_BYTES)


def _syntax_skipped(targets: Sequence[str], edited: set[str]) -> list[Problem]:
    added = [p for p in targets if p not in edited]
    if len(added) <= SYNTAX_CHECK_ADDED_LIMIT:
        return []
    return [Problem(os.path.commonpath(added), f"syntax check skipped for {len(added)} added .py files "
                    f"(more than {SYNTAX_CHECK_ADDED_LIMIT}); the debug rules still ran on them")]


#: Drifted files up to this many bytes in all are parsed in this process (scan.py's one-job
#: path, which still hands any file over IN_PROCESS_BYTES to a worker): starting workers costs
#: more than parsing a handful of edited modules.
IN_PROCESS_TOTAL = 1 << 20


def _inspect_files(targets: Sequence[str], edited: set[str], jobs: int | None, select: Sequence[str],
                   ignore: Sequence[str], rules_modules: Sequence[str], plugins: bool, memo: OutcomeMemo | None,
                   loaded: RuleLoader | None = None) -> \
        tuple[dict[str, list[Finding]], dict[str, list[tuple[str, Finding]]], list[Problem], list[Problem]]:
    """Run the rules on ``targets``: (findings by file, dump writers by pattern, scan errors,
    notes on what was skipped); remembered in ``memo`` when one is given and all went well."""
    # Deferred, as in _unparsable: the registry and the scanner import libcst (0.3-0.7 s).
    from .registry import load_rules, select_rules
    from .scan import _code_signature, scan_paths

    # The prefilter never changes findings (a test holds it to that) and spares parsing files
    # that cannot match, which matters when thousands of .py files were added by hand.
    available = list(loaded()) if loaded is not None else load_rules(rules_modules, plugins=plugins)
    selected = select_rules(available, select, ignore)
    reported = {r.CODE for r in selected}
    # Rule selection picks the findings shown, never the drift found: the dumps the code left are
    # searched for with every dump-writing rule's patterns (the default rules run for that, their
    # findings outside the selection dropped), so --ignore DBG10 cannot make 35 dumps vanish.
    scanned = {r.CODE: r for r in (*select_rules(available), *selected)}
    total = 0
    for path in targets:
        try:
            total += os.stat(path).st_size
        except OSError:
            pass
    if total <= IN_PROCESS_TOTAL:
        jobs = 1
    result = scan_paths(targets, select=sorted(scanned), jobs=jobs, rules=list(scanned.values()), plugins=plugins,
                        limits=ParseLimits(budget=PARSE_BUDGET))
    by_path: dict[str, list[Finding]] = defaultdict(list)
    writers: dict[str, list[tuple[str, Finding]]] = defaultdict(list)
    for path, finding in result.findings:
        if finding.code in reported:
            by_path[path].append(finding)
        if finding.artifact_pattern:
            writers[finding.artifact_pattern].append((path, finding))
    skipped = _syntax_skipped(targets, edited)
    # A file with one of these was not inspected (DBG006, an unused noqa, says nothing of that).
    file_level = {r.CODE for r in selected if r.FILE_PROBLEM in NOT_INSPECTED}
    if any(r.FILE_PROBLEM in (FileProblem.PARSE, FileProblem.COMPLEXITY) for r in selected):
        added = [p for p in targets if p not in edited]
        checked = sorted(edited) + (added if len(added) <= SYNTAX_CHECK_ADDED_LIMIT else [])
        for path in checked:
            if not any(f.code in file_level for f in by_path.get(path, ())):
                by_path[path].extend(_unparsable(path, selected))
    # Not remembered: an error, a file that could not be read, or one not inspected (timeout,
    # crash, too complex) — what may go differently next time is tried again.
    transient = {r.CODE for r in scanned.values() if r.FILE_PROBLEM in (FileProblem.COMPLEXITY, FileProblem.READ)}
    if memo is not None and not result.errors and not any(f.code in transient for _, f in result.findings):
        signed = _code_signature(list(scanned.values()), True, None)
        if signed is not None:
            extra = [getattr(sys.modules.get(spec.partition(":")[0]), "__file__", None) for spec in rules_modules]
            memo.store(by_path, [w for ws in writers.values() for w in ws], [], [*signed[1], *(f for f in extra if f)],
                       plugins)
    return by_path, writers, list(result.errors), skipped


def inspect_drifts(checks: Sequence[FileCheck], *, jobs: int | None = None, select: Sequence[str] = (),
                   ignore: Sequence[str] = (), rules_modules: Sequence[str] = (),
                   owned: Callable[[str], bool] | None = None, package_dirs: Iterable[str] = (),
                   plugins: bool = True, dump_list: DumpLister | None = None,
                   memo_dir: str | None = None, loaded: RuleLoader | None = None) -> InspectOutcome:
    """Findings on the drifted Python files, and the dumps their code left.

    ``owned(path)``: whether a RECORD owns ``path`` (such a file is never a dump);
    ``package_dirs``: directories of the environment where no file counts as a dump (the
    package directories drifts were found in always are); ``dump_list``: writes the exact list of
    many dump files somewhere outside the audited directories and says where, for a remedy of
    one ``xargs -0 rm`` (None, or it returning None: the remedy names every file); ``memo_dir``:
    where the findings of these files with these rules are remembered (the user cache; None:
    inspect them, remember nothing); ``loaded``: the rules available (``rules_modules`` and
    ``plugins`` loaded), called only when a file is parsed, so that a run loads them once. The
    dumps are searched for anew every time."""
    targets = sorted({c.path for c in checks if _inspectable(c)})
    if not targets:
        return InspectOutcome(list(checks))
    edited = {c.path for c in checks if _inspectable(c) and c.kind not in (DriftKind.ADDED, DriftKind.STARTUP_CODE)}
    memo = None
    if memo_dir is not None:
        selection = cache_key("audit", sys.version, list(sys.path), list(select), list(ignore), list(rules_modules),
                              plugins, SYNTAX_CHECK_ADDED_LIMIT, PARSE_BUDGET, sorted(edited))
        memo = OutcomeMemo(memo_dir, selection, targets)
    recalled = memo.recall() if memo is not None else None
    if recalled is not None:
        found, wrote, errors = recalled
        by_path: dict[str, list[Finding]] = defaultdict(list, found)
        writers: dict[str, list[tuple[str, Finding]]] = defaultdict(list)
        for path, finding in wrote:
            writers[finding.artifact_pattern].append((path, finding))  # type: ignore[index]  # recall keeps writers with a pattern only
        scan_errors = [Problem(p, m) for p, m in errors]
        skipped = _syntax_skipped(targets, edited)
    else:
        by_path, writers, scan_errors, skipped = _inspect_files(targets, edited, jobs, select, ignore, rules_modules,
                                                                plugins, memo, loaded)
    outcome = InspectOutcome([replace(c, findings=tuple(by_path.get(c.path, ()))) if _inspectable(c) else c
                              for c in checks], errors=scan_errors, skipped=skipped)
    exclude = _package_dirs(checks) | set(package_dirs)
    # Everything the audit reads: a list of dumps is never written there.
    audited = {m.group("prefix") if (m := _PREFIX_LAYOUT.match(os.path.abspath(d))) else d for d in exclude} | \
        {c.root for c in checks if c.area is not Area.EXTERNAL and c.root}
    installed = {c.path: t for c in checks if _inspectable(c) and (t := installed_at(c)) is not None}
    for pattern in sorted(writers):
        check, note, possible = _artifact_check(pattern, writers[pattern], owned, exclude, dump_list,
                                                sorted(audited), installed)
        if note is not None:
            outcome.skipped.append(note)
        if check is not None:
            outcome.artifacts.append(check)
        if possible is not None:
            outcome.artifacts.append(possible)
    return outcome

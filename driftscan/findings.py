"""The inspect stage of an audit: debug-code rules on drifted Python files, and the dumps they left.

Runs the rule engine (``driftscan.inspect``) only on files verify flagged — modified or added
``.py`` files in the environment and in editable source trees — then globs each dump call's
target pattern and reports the files found as one ``debug-artifacts`` drift per pattern.
"""

from __future__ import annotations

import os
import shlex
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import libcst

from .inspect import find_artifacts, load_rules, scan_paths, select_rules
from .model import DriftKind, FileCheck, Finding, Problem, Severity

_INSPECTED_KINDS = {DriftKind.MODIFIED, DriftKind.ADDED, DriftKind.CLOBBERED}
# Added .py files are syntax-checked up to this many (a package copied in by hand can bring
# thousands, and compiling 50 MB costs seconds); modified files always are.
SYNTAX_CHECK_ADDED_LIMIT = 500
_PY = (".py", ".pyw")


@dataclass
class InspectOutcome:
    checks: list[FileCheck]
    artifacts: list[FileCheck] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)  # deliberately not searched (too-broad patterns)


def _inspectable(check: FileCheck) -> bool:
    return (check.kind in _INSPECTED_KINDS and check.area in ("python", "source") and check.path.endswith(_PY)
            and check.actual.get("type", "file") == "file")


def _artifact_check(pattern: str, writers: list[tuple[str, Finding]]) -> FileCheck | None | str:
    group = find_artifacts(pattern)
    if group is None:
        return None
    if group.too_broad:
        return "too-broad"
    where = ", ".join(f"{p}:{f.line}" for p, f in writers)
    size = group.total_bytes
    evidence = (f"{len(group.paths)} file(s), {size / 1e6:.1f} MB, matching {pattern}, written by {where} "
                f"({writers[0][1].code} {writers[0][1].name}); no reinstall removes them")
    files = " ".join(shlex.quote(p) for p in group.paths[:50]) + (" ..." if len(group.paths) > 50 else "")
    return FileCheck(
        DriftKind.DEBUG_ARTIFACTS, pattern, os.path.dirname(pattern), None, {},
        {"pattern": pattern, "artifacts": list(group.paths), "count": len(group.paths), "bytes": size,
         "written_by": [{"path": p, "line": f.line, "code": f.code} for p, f in writers]},
        evidence, area="external", remedy_hint=f"rm {files}")


def _unparsable(path: str) -> Finding | None:
    """``scan`` reports a syntax error only where debug code could hide (that is what keeps it
    fast); a drifted file that does not parse is news on its own: the module no longer imports.

    CPython's own parser answers first (fast); only a file it rejects goes to libcst, whose
    grammar may be newer than the interpreter driftscan runs on (a 3.12 venv audited from 3.10).
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None  # the engine reports unreadable files itself
    try:
        with warnings.catch_warnings():  # SyntaxWarnings (invalid escapes) are not ours to print
            warnings.simplefilter("ignore")
            compile(data, path, "exec", dont_inherit=True)  # 6x faster than ast.parse: no Python AST objects
        return None
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pass
    try:
        libcst.parse_module(data)
    except Exception as exc:  # noqa: BLE001 - any parser failure means the same thing here
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Finding("DBG001", "parse-error", Severity.MEDIUM, getattr(exc, "raw_line", 1) or 1, 1,
                       f"could not parse this drifted file (it will not import): {message}")
    return None


def inspect_drifts(checks: Sequence[FileCheck], *, jobs: int | None = None, select: Sequence[str] = (),
                   ignore: Sequence[str] = (), rules_modules: Sequence[str] = ()) -> InspectOutcome:
    targets = sorted({c.path for c in checks if _inspectable(c)})
    if not targets:
        return InspectOutcome(list(checks))
    # The prefilter never changes findings (a test holds it to that) and spares parsing files
    # that cannot match, which matters when thousands of .py files were added by hand.
    result = scan_paths(targets, select=select, ignore=ignore, jobs=jobs, extra_rule_modules=rules_modules)
    by_path: dict[str, list[Finding]] = defaultdict(list)
    writers: dict[str, list[tuple[str, Finding]]] = defaultdict(list)
    for path, finding in result.findings:
        by_path[path].append(finding)
        if finding.artifact_pattern:
            writers[finding.artifact_pattern].append((path, finding))
    skipped: list[Problem] = []
    if "DBG001" in {r.CODE for r in select_rules(load_rules(rules_modules), select, ignore)}:
        edited = {c.path for c in checks if _inspectable(c) and c.kind is not DriftKind.ADDED}
        added = [p for p in targets if p not in edited]
        checked = sorted(edited) + (added if len(added) <= SYNTAX_CHECK_ADDED_LIMIT else [])
        if len(added) > SYNTAX_CHECK_ADDED_LIMIT:
            skipped.append(Problem(os.path.commonpath(added), f"syntax check skipped for {len(added)} added .py files "
                                   f"(more than {SYNTAX_CHECK_ADDED_LIMIT}); the debug rules still ran on them"))
        for path in checked:
            if not any(f.code in ("DBG001", "DBG002") for f in by_path.get(path, ())):
                broken = _unparsable(path)
                if broken is not None:
                    by_path[path].append(broken)
    outcome = InspectOutcome([replace(c, findings=tuple(by_path.get(c.path, ()))) if _inspectable(c) else c
                              for c in checks], errors=list(result.errors), skipped=skipped)
    for pattern in sorted(writers):
        check = _artifact_check(pattern, writers[pattern])
        if check == "too-broad":
            outcome.skipped.append(Problem(pattern, "dump pattern too broad to search (it could match half the "
                                                    "disk); look for the files by hand"))
        elif check is not None:
            outcome.artifacts.append(check)  # type: ignore[arg-type]
    return outcome

"""Inspect one file: prefilter, parse once, walk once with every rule, locate the findings.

Findings carry a 1-based ``line`` and a 1-based ``column`` (a code-point offset in the line,
as ruff and flake8 print it). A file that cannot be inspected is not an exception but a
finding of a file-level rule: could not parse (DBG001), could not read or decode (DBG002),
larger than ``MAX_FILE_BYTES`` (DBG003), nested too deeply or too complex to parse safely
(DBG004: measured by a byte scan before libcst sees the file, see complexity.py) — each one
only if that rule is selected.

With ``prefilter`` a file is parsed only if some selected rule's trigger matches its bytes
(see triggers.py) and, on CPython's syntax tree, its ``AST_CHECK`` (see astfacts.py); when every
rule left decides its findings exactly on CPython's tree (``AST_EXACT``, astdump.py), libcst is
not needed at all. The findings are the same either way: rules report nothing without their
trigger, astdump.py answers only what libcst would, and DBG001 is decided by triggers in both
modes (see _may_hide_debug_code).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import warnings
from collections.abc import Sequence

import libcst as cst

from ..core.errors import DriftscanError
from ..fs.reader import read_regular
from ..core.values import Finding
from .astdump import dump_hits, exact_kind
from .complexity import measure, refusal
from .context import FileContext
from .noqa import apply_noqa
from .positions import node_starts
from .registry import default_rules
from .rule import Rule
from .vocabulary import FileProblem
from .triggers import OPTIMISTIC, PYTHON2, Memo, python_ast
from .walker import walk

#: Files larger than this are not parsed (libcst needs seconds per MB; generated files this
#: large are tables, not code anyone patches by hand). Reported as DBG003.
from .files import MAX_FILE_BYTES as MAX_FILE_BYTES  # noqa: E402 - defined where the cache-only scan reads it

_NEWLINE_RE = re.compile(r"\r\n?|\n")
#: With ``defer_over``, a file this large that a tree rule's trigger holds for is deferred before
#: its AST checks: CPython's tree takes ~40 bytes of memory per byte of source (twice that while
#: it is built), so such a file is best scheduled by its size, as the scan does deferred files.
AST_DEFER_BYTES = 256 * 1024


class RuleError(DriftscanError):
    """A rule raised while walking a file: a bug in that rule, not a property of the file."""

    def __init__(self, path: str, rules: Sequence[type[Rule]], error: BaseException):
        self.path = path
        self.error = error
        codes = ",".join(r.CODE for r in rules)
        super().__init__(f"{path}: a rule ({codes}) failed: {type(error).__name__}: {error}")


def inspect_source(
    source: bytes | str,
    path: str = "<string>",
    rules: Sequence[type[Rule]] | None = None,
    *,
    prefilter: bool = False,
    max_bytes: int | None = MAX_FILE_BYTES,
) -> list[Finding]:
    """Findings of ``rules`` (default: every enabled rule) on one file's content."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    return _inspect(data, path, _rules(rules), prefilter, max_bytes)[0] or []  # None only when deferred


def inspect_file(
    path: str,
    rules: Sequence[type[Rule]] | None = None,
    *,
    prefilter: bool = False,
    max_bytes: int | None = MAX_FILE_BYTES,
) -> list[Finding]:
    """Findings for the file at ``path``; an unreadable file is a DBG002 finding."""
    return inspect_path(path, _rules(rules), prefilter, max_bytes)[0] or []  # None only when deferred


def inspect_path(
    path: str, rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None, defer_over: int | None = None,
    ast_checks: bool = True,
) -> tuple[list[Finding] | None, int, bool]:
    """``(findings, bytes read, parsed?)`` — the scan's unit of work. With ``defer_over``, a file
    of more bytes that libcst would have to parse is left alone: ``(None, bytes, True)`` (the scan
    schedules such files by that cost, largest first). ``ast_checks=False`` skips the rules'
    AST_CHECKs (for a deferred file, which passed them already: the findings are the same)."""
    file_rules = _file_rules(rules)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read forever
            return _file_finding(file_rules.get(FileProblem.READ), "could not read: not a regular file"), 0, False
        if max_bytes is not None and st.st_size > max_bytes:
            return _too_large(file_rules, st.st_size, max_bytes), 0, False
        data = read_regular(path, sys.maxsize if max_bytes is None else max_bytes)
    except OSError as e:
        return _file_finding(file_rules.get(FileProblem.READ), f"could not read: {e.strerror or e}"), 0, False
    findings, parsed = _inspect(data, path, rules, prefilter, max_bytes, defer_over, ast_checks)
    return findings, len(data), parsed


def _rules(rules: Sequence[type[Rule]] | None) -> Sequence[type[Rule]]:
    """``rules``, or every rule enabled by default (opt-in rules such as DBG109 run only when selected)."""
    return [r for r in default_rules() if r.DEFAULT_ENABLED] if rules is None else rules


def _file_rules(rules: Sequence[type[Rule]]) -> dict[FileProblem, type[Rule]]:
    return {r.FILE_PROBLEM: r for r in rules if r.FILE_PROBLEM}


def import_check(data: bytes, path: str, rules: Sequence[type[Rule]], *, parse: bool = True) -> list[Finding]:
    """The file-level finding for a drifted file that no longer imports.

    A scan reports a syntax error only where debug code could hide (that is what keeps it
    fast); in a drifted file it is news on its own. CPython's parser answers first (fast, and
    no Python AST objects); only a file it rejects goes to libcst, whose grammar may be newer
    than the interpreter driftscan runs on (a 3.12 venv audited from 3.10) — and only if the
    byte scan finds it safe to parse (the complexity rule's finding otherwise: libcst can
    crash on deep nesting, and CPython rejects nesting it does not support, so such a file
    reaches here). ``parse=False`` stops before libcst (a big file's parse is the scan's)."""
    try:
        with warnings.catch_warnings():  # SyntaxWarnings (invalid escapes) are not ours to print
            warnings.simplefilter("ignore")
            compile(data, path, "exec", dont_inherit=True)
        return []
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pass
    file_rules = _file_rules(rules)
    too_complex = refusal(data)
    if too_complex is not None:
        return complexity_finding(file_rules, f"not parsed: {too_complex}")
    if not parse or FileProblem.PARSE not in file_rules:
        return []
    try:
        cst.parse_module(data)
    except Exception as exc:  # noqa: BLE001 - any parser failure means the same thing here
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return _file_finding(file_rules[FileProblem.PARSE], f"could not parse this drifted file (it will not import): {message}",
                             getattr(exc, "raw_line", 1) or 1)
    return []


def _inspect(
    data: bytes, path: str, rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None,
    defer_over: int | None = None, ast_checks: bool = True,
) -> tuple[list[Finding] | None, bool]:
    """The findings ``# noqa`` comments leave, and whether the file was parsed (noqa.py)."""
    findings, parsed = _inspect_all(data, path, rules, prefilter, max_bytes, defer_over, ast_checks)
    return (None if findings is None else apply_noqa(data, findings, rules)), parsed


def _inspect_all(
    data: bytes, path: str, rules: Sequence[type[Rule]], prefilter: bool, max_bytes: int | None,
    defer_over: int | None = None, ast_checks: bool = True,
) -> tuple[list[Finding] | None, bool]:
    if not rules:
        return [], False
    file_rules = _file_rules(rules)
    if max_bytes is not None and len(data) > max_bytes:
        return _too_large(file_rules, len(data), max_bytes), False
    tree_rules = [r for r in rules if not r.FILE_PROBLEM]
    memo = Memo()
    if prefilter:
        # A file that will be deferred if a tree rule's trigger holds needs no CPython tree for
        # that (the shape-guard trigger says yes without one): it is deferred before it is built.
        big = defer_over is not None and len(data) > max(defer_over, AST_DEFER_BYTES)
        if big:
            memo[OPTIMISTIC] = True
        tree_rules = [r for r in tree_rules if _triggered(r, data, memo)]
        memo.pop(OPTIMISTIC, None)
        problem_rules = [file_rules[k] for k in (FileProblem.PARSE, FileProblem.READ, FileProblem.COMPLEXITY)
                         if k in file_rules]
        if not tree_rules and not any(_triggered(r, data, memo) for r in problem_rules):
            return [], False
        if big and tree_rules:
            return None, True
        # Second stage: CPython's tree says which of them could report anything (astfacts.py).
        # A file they all pass over is still "parsed" (by CPython, below), as before. A rule that
        # runs anyway reports nothing where its check fails: ast_checks=False (a deferred file,
        # checked when it was deferred) skips them, but for a file deferred before them.
        if ast_checks or len(data) > AST_DEFER_BYTES:
            tree_rules = [r for r in tree_rules if r.AST_CHECK is None or r.AST_CHECK.matches(data, memo)]
        if not tree_rules and python_ast(data, memo) is not None:
            # Only whether it parses is asked (DBG001): CPython's parser says yes ten times faster
            # (and it parsed, so the complexity scan passed it too: python_ast asks it first).
            return [], True
        if ast_checks or len(data) > AST_DEFER_BYTES:
            # Third stage: rules whose findings CPython's tree decides exactly (astdump.py) need
            # no libcst at all; where it cannot tell, libcst decides as before.
            exact = exact_findings(data, path, tree_rules, memo)
            if exact is not None:
                return exact, True
    if defer_over is not None and len(data) > defer_over:
        return None, True
    # libcst must never see such a file: it can crash or stall on it (known if a trigger parsed it)
    too_complex = memo["refusal"] if "refusal" in memo else refusal(data)
    memo["refusal"] = too_complex
    if too_complex is not None:
        if not _may_hide_debug_code(data, rules, memo):
            return [], False
        return complexity_finding(file_rules, f"not parsed: {too_complex}"), True  # (the prefilter let it through)
    memo.pop("ast", None)  # CPython's tree is not needed any more: not in memory beside libcst's
    try:
        module = cst.parse_module(data)
    except Exception as e:  # whatever the parser raises, the file is not inspectable
        return _parse_failure(data, rules, file_rules, memo, e), True
    if not tree_rules:
        return [], True
    ctx = FileContext(path)
    try:
        walk(module, ctx.stack, [ctx, *(rule(ctx) for rule in tree_rules)])
    except Exception as e:  # a bug in a rule: say which file and rules, let the caller decide
        raise RuleError(path, tree_rules, e) from e
    return _locate(ctx, module, data), True


def exact_findings(data: bytes, path: str, tree_rules: Sequence[type[Rule]], memo: Memo) -> list[Finding] | None:
    """The findings of ``tree_rules`` from CPython's tree (astdump.py), when every one of them
    is decided there and CPython parsed the file; else None (libcst's turn)."""
    if not tree_rules or not all(exact_kind(r) for r in tree_rules):
        return None
    tree = python_ast(data, memo)
    if tree is None:
        return None
    hits = dump_hits(data, tree, tree_rules, memo.get("complexity") or measure(data))
    if hits is None:
        return None
    lines = _source_lines(data, "utf-8") if hits else []
    return [Finding(h.code, h.name, h.severity, h.line, h.column, h.message, _snippet(lines, h.line),
                    h.artifact_pattern) for h in hits]


def _parse_failure(
    data: bytes, rules: Sequence[type[Rule]], file_rules: dict[FileProblem, type[Rule]], memo: Memo, error: Exception
) -> list[Finding]:
    if isinstance(error, (UnicodeDecodeError, LookupError)) or (
        isinstance(error, SyntaxError) and "encoding" in str(error.msg)
    ):
        return _undecodable(file_rules, data, error)
    if not _may_hide_debug_code(data, rules, memo):
        return []
    if isinstance(error, cst.ParserSyntaxError):
        return _unparsable(file_rules, data, error)
    return _file_finding(file_rules.get(FileProblem.PARSE), f"could not parse: {type(error).__name__}: {error}")


def _triggered(rule: type[Rule], data: bytes, memo: Memo) -> bool:
    return rule.TRIGGER is None or rule.TRIGGER.matches(data, memo)


def _may_hide_debug_code(data: bytes, rules: Sequence[type[Rule]], memo: Memo) -> bool:
    """Whether an unparsable file is worth a DBG001 finding: some selected rule could have
    reported on it (its trigger matches), or the parse-error rule's own trigger does (debug
    code patterns, Python 2 statements, NUL bytes). Decided the same way with and without
    the prefilter, so the prefilter never changes the findings: a file that can hold no
    debug code needs no parse, and its syntax is not the scan's business."""
    return any(_triggered(r, data, memo) for r in rules
               if r.FILE_PROBLEM in (None, FileProblem.PARSE, FileProblem.COMPLEXITY))


def _locate(ctx: FileContext, module: cst.Module, data: bytes) -> list[Finding]:
    if not ctx.reports:
        return []
    starts = node_starts(module, [r.node for r in ctx.reports])
    lines = _source_lines(data, module.encoding)
    findings = []
    for r in ctx.reports:
        start = starts.get(id(r.node))
        line, col0 = start or (1, 0)
        message = r.message if start else r.message + " (position unknown: expression nested too deeply)"
        findings.append(
            Finding(r.code, r.name, r.severity, line, col0 + 1, message, _snippet(lines, line), r.artifact_pattern)
        )
    findings.sort(key=lambda f: (f.line, f.column, f.code, f.message))
    return findings


def _source_lines(data: bytes, encoding: str) -> list[str]:
    return _NEWLINE_RE.split(data.decode(encoding, "replace"))


def _snippet(lines: list[str], line: int, width: int = 160) -> str:
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else " " if c == "\t" else "\N{REPLACEMENT CHARACTER}" for c in text)
    return text if len(text) <= width else text[: width - 3] + "..."


def _file_finding(
    rule: type[Rule] | None, message: str, line: int = 1, column: int = 1, snippet: str = ""
) -> list[Finding]:
    if rule is None:
        return []
    return [Finding(rule.CODE, rule.NAME, rule.SEVERITY, line, column, message, snippet)]


def complexity_finding(file_rules: dict[FileProblem, type[Rule]], message: str) -> list[Finding]:
    """The DBG004 finding (if selected): not parsed, or the parse crashed or ran out of time."""
    return _file_finding(file_rules.get(FileProblem.COMPLEXITY), message)


def _too_large(file_rules: dict[FileProblem, type[Rule]], size: int, max_bytes: int) -> list[Finding]:
    return _file_finding(file_rules.get(FileProblem.SIZE), f"not inspected: {size} bytes is over the {max_bytes}-byte limit")


def _undecodable(file_rules: dict[FileProblem, type[Rule]], data: bytes, error: Exception) -> list[Finding]:
    line = 1
    if isinstance(error, UnicodeDecodeError):
        line = data[: error.start].count(b"\n") + 1
    return _file_finding(file_rules.get(FileProblem.READ), f"could not decode: {error}", line)


def _unparsable(file_rules: dict[FileProblem, type[Rule]], data: bytes, error: cst.ParserSyntaxError) -> list[Finding]:
    # libcst's error positions are often off; CPython's compiler locates the same error well.
    line, column = error.raw_line, error.raw_column + 1
    detail = " ".join(x.strip() for x in str(error).strip().splitlines()[:2] if x.strip())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<parse-error>", "exec", dont_inherit=True)
    except SyntaxError as e:
        if e.lineno:
            line, column = e.lineno, max(1, e.offset or 1)
        detail = e.msg
    except Exception as e:  # NUL bytes: ValueError before 3.12
        detail = str(e)
    hint = " (Python 2 code?)" if PYTHON2.matches(data) else ""
    lines = _source_lines(data, "utf-8")
    message = f"could not parse{hint}: {detail}"
    return _file_finding(file_rules.get(FileProblem.PARSE), message, line, column, _snippet(lines, line))

"""``# noqa`` comments: a finding on a line that says ``# noqa: DBG101`` (or a bare ``# noqa``)
is not reported. ruff's semantics:

* the directive is a comment (never text in a string) on the finding's own physical line — the
  line the finding's ``line`` names, which for a statement over several lines is the line where
  the reported node starts (as ruff puts a violation where it starts);
* ``# noqa`` with any case, spaces allowed after ``#``, anywhere in the comment
  (``# type: ignore  # noqa: DBG101``);
* ``# noqa: CODE[, CODE…]``: codes separated by commas and/or spaces, each matched exactly
  (``DBG1`` is not a prefix of ``DBG101`` here), up to the first word that is not a code, so
  an explanation may follow (``# noqa: DBG109 the CLI prints``); ``# noqa:`` followed by no
  code is not a directive (ruff warns and ignores it);
* a bare ``# noqa`` (or one followed by anything but ``:``) suppresses every finding on the line.

Findings that say a file could not be inspected (DBG001–DBG004: the rules with a
``FILE_PROBLEM``) are never suppressed: there is no line to put the comment on that would mean
what it says.

Unused codes (the ``unused-noqa`` rule, DBG006; only when that rule runs: ``scan --strict`` or
a selection naming it): every code of a ``# noqa: …`` directive that has no finding of its own
on that line — because that rule found nothing there, or did not run (not selected, or no such
rule). Only codes of driftscan's families are considered — those with the letters of a rule that
ran (``DBG``, a plugin's ``ACME``) — since ``# noqa: E501`` belongs to another linter. A bare
``# noqa`` is never reported: it serves other linters too. A file that could not be inspected
gets no unused-code findings (nothing is known about what it would report).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.values import Finding
from .rule import Rule
from .vocabulary import FileProblem

#: The ``FILE_PROBLEM`` of the unused-noqa rule: the engine reports it, no visitor does.
NOQA_PROBLEM = FileProblem.NOQA

_CANDIDATE = re.compile(rb"#[ \t\f]*noqa", re.IGNORECASE)  # cheap: which files to look at at all
_DIRECTIVE = re.compile(r"#[ \t\f]*noqa(?![\w-])", re.IGNORECASE)
_COLON = re.compile(r"[ \t\f]*:")
_CODE = re.compile(r"[ \t\f,]*([A-Z]+[0-9]+)(?=[\s,#]|$)")
_FAMILY = re.compile(r"[A-Z]+")
_NEWLINE = re.compile(r"\r\n?|\n")


@dataclass(frozen=True)
class Directive:
    line: int
    column: int  # 1-based, of the directive's "#", in code points
    codes: tuple[str, ...] | None  # None: bare, every finding on the line
    text: str  # the physical line, for a finding's snippet


def parse_comment(comment: str) -> tuple[int, tuple[str, ...] | None] | None:
    """``(offset of the directive's "#", codes or None for bare)`` of the first noqa directive
    in a comment, or None when there is none (or only ``# noqa:`` with no code)."""
    for m in _DIRECTIVE.finditer(comment):
        colon = _COLON.match(comment, m.end())
        if colon is None:
            return m.start(), None
        codes: list[str] = []
        pos = colon.end()
        while code := _CODE.match(comment, pos):
            if code.group(1) not in codes:
                codes.append(code.group(1))
            pos = code.end()
        if codes:
            return m.start(), tuple(codes)
    return None


def _comments(data: bytes) -> Iterable[tuple[int, int, str, str]]:
    """``(line, column0, comment, physical line)`` of every comment that may hold a directive.
    The tokenizer tells comments from strings; a file it cannot tokenize (a syntax error,
    grammar newer than this interpreter) falls back to each line's first ``#…noqa``."""
    try:
        found = []
        for tok in tokenize.tokenize(io.BytesIO(data).readline):
            if tok.type == tokenize.COMMENT and "noqa" in tok.string.lower():
                found.append((tok.start[0], tok.start[1], tok.string, tok.line))
        return found
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, LookupError, ValueError):
        pass
    text = data.decode("utf-8", "replace")
    out = []
    for number, line in enumerate(_NEWLINE.split(text), start=1):
        m = _DIRECTIVE.search(line)
        if m:
            out.append((number, m.start(), line[m.start():], line))
    return out


def directives(data: bytes) -> dict[int, Directive]:
    """The noqa directives of a file, by line."""
    if not _CANDIDATE.search(data):
        return {}
    out: dict[int, Directive] = {}
    for line, col0, comment, physical in _comments(data):
        parsed = parse_comment(comment)
        if parsed is not None and line not in out:
            offset, codes = parsed
            out[line] = Directive(line, col0 + offset + 1, codes, physical.rstrip("\r\n"))
    return out


def _snippet(text: str, width: int = 160) -> str:
    text = text.strip()
    if not text.isprintable():
        text = "".join(c if c.isprintable() else " " if c == "\t" else "\N{REPLACEMENT CHARACTER}" for c in text)
    return text if len(text) <= width else text[: width - 3] + "..."


def apply_noqa(data: bytes, findings: list[Finding], rules: Sequence[type[Rule]]) -> list[Finding]:
    """``findings`` without those a noqa directive suppresses, plus the unused-noqa findings when
    that rule is among ``rules`` (see the module docstring)."""
    unused_rule = next((r for r in rules if r.FILE_PROBLEM == NOQA_PROBLEM), None)
    file_codes = {r.CODE for r in rules if r.FILE_PROBLEM}
    if not findings and unused_rule is None:
        return findings
    if any(f.code in file_codes for f in findings):
        return findings  # not inspected: nothing to suppress, nothing known to be unused
    found = directives(data)
    if not found:
        return findings
    kept: list[Finding] = []
    used: set[tuple[int, str]] = set()
    for f in findings:
        d = found.get(f.line)
        if d is not None and (d.codes is None or f.code in d.codes):
            used.add((f.line, f.code))
            continue
        kept.append(f)
    if unused_rule is None:
        return kept
    ran = {r.CODE for r in rules}
    families = {m.group(0) for r in rules if (m := _FAMILY.match(r.CODE))}
    for d in sorted(found.values(), key=lambda d: d.line):
        for code in d.codes or ():
            family = _FAMILY.match(code)
            if (d.line, code) in used or family is None or family.group(0) not in families:
                continue
            why = f"no {code} finding on this line" if code in ran else \
                f"{code} did not run (not selected, or no such rule)"
            kept.append(Finding(unused_rule.CODE, unused_rule.NAME, unused_rule.SEVERITY, d.line, d.column,
                                f"unused noqa code {code}: {why}", _snippet(d.text)))
    kept.sort(key=lambda f: (f.line, f.column, f.code, f.message))
    return kept


def with_unused_noqa(available: Sequence[type[Rule]], chosen: Sequence[type[Rule]],
                     ignore: Iterable[str] = ()) -> list[type[Rule]]:
    """``chosen`` plus the unused-noqa rule (``scan --strict``), unless an ``ignore`` entry
    matches it (its code, a prefix of it, its name, or ALL)."""
    ignore = [s.strip() for s in ignore if s.strip()]
    out = list(chosen)
    for rule in available:
        if rule.FILE_PROBLEM != NOQA_PROBLEM or rule in out:
            continue
        if any(s == "ALL" or s == rule.NAME or rule.CODE.startswith(s.upper()) for s in ignore):
            continue
        out.append(rule)
    return sorted(out, key=lambda r: r.CODE)


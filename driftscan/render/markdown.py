"""GitHub-flavoured markdown: for ``$GITHUB_STEP_SUMMARY`` and pull-request comments.

The counts per scope and kind first, then one table per distribution (per model directory,
source tree, group of dumps) with each drift's kind, path, what a reinstall does and the remedy,
the debug findings as ``path:line CODE message``, and each diff (or JSON change list) in a
collapsed ``<details>`` block.

Every value from the audited tree (file names, distribution names, messages quoting code) is
made inert: HTML-significant characters and markdown punctuation become character references,
line breaks become a visible ``\\n``, and paths and commands sit in ``<code>`` (where GitHub
links no ``@mention`` and no ``#123``). A file named ``a|b<script>.py`` is shown as that text; it
cannot end a table cell, open a tag or start a line.

GitHub refuses a step summary over 1 MiB; the output stays under ``max_bytes`` (default
1,000,000 bytes): diffs are left out first (from the last one up), then rows (from the last one
up), and the output says so at its top.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from ..core.values import Origin
from ..report.contract import SCOPE_ORDER, DriftOut, Report, pristine_of
from .sarif import accepted_reason
from .text import DIFF_TOO_LARGE, stale_detail, summary_line
from ..core.units import plural, size as readable, size_change
from ..procs.model import ProcsReport
from ..procs.restart import evidence_summary
from ..procs.where import shown_command

MAX_BYTES = 1_000_000  # GitHub: "$GITHUB_STEP_SUMMARY upload aborted, supports content up to a size of 1024k"
COLLAPSE_OVER = 10  # added files under one top-level directory shown as one row beyond this
VALUE_CAP = 300  # characters of a JSON value shown in a change table

_MARK = {"wiped": "WIPED", "survives": "SURVIVES", "may-survive": "MAY SURVIVE"}

# Markdown and HTML punctuation that could change what a value means where it is shown: a cell
# end, a tag, emphasis, a link, a code span, an escape, math, a heading or a reference.
_ENTITIES = {c: f"&#{ord(c)};" for c in "&<>\"'|`\\*_[]~!$#"}
_BREAKS = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\x85",
           "\x0b": "\\x0b", "\x0c": "\\x0c"}
_TABLE = str.maketrans({**{k: v.replace("\\", "&#92;") for k, v in _BREAKS.items()}, **_ENTITIES})
_MENTION = re.compile(r"@(?=\w)")
# GitHub's extended autolinks (GFM spec 6.9): ``www.`` and a scheme followed by ``://`` (and
# ``mailto:``/``xmpp:`` before an address) become links in text, inside ``<code>`` too, since the
# tag is raw HTML and the text after it is still parsed. A word joiner (U+2060) after ``www`` or the
# scheme breaks the match and shows nothing; case-insensitive, as linkifiers differ there.
_AUTOLINK = re.compile(r"(?i)(www)(?=\.)|(https?|ftp|mailto|xmpp)(?=:)")


def _no_autolink(text: str) -> str:
    return _AUTOLINK.sub(lambda m: (m.group(1) or m.group(2)) + "\u2060", text)


def esc(value: Any) -> str:
    """A value from the tree as inert inline markdown (in a table cell, a list item, a heading,
    or inside an HTML block such as ``<summary>``)."""
    text = value if isinstance(value, str) else str(value)
    return _no_autolink(_MENTION.sub("@\u2060", text.translate(_TABLE)))  # a word joiner: no @mention


def code(value: Any) -> str:
    """A path or a command: inert, in ``<code>``."""
    return f"<code>{_no_autolink((value if isinstance(value, str) else str(value)).translate(_TABLE))}</code>"


def _fenced(text: str, info: str) -> list[str]:
    """A fenced code block that no backtick run in ``text`` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text.replace("\r", "\\r").rstrip("\n")
    return [fence + info, *body.split("\n"), fence]


def _n(count: int, noun: str) -> str:
    return f"{count:,} {plural(count, noun)}"


_ADDED = re.compile(r"^\+(?!\+\+ )", re.M)
_REMOVED = re.compile(r"^-(?!-- )", re.M)


def _diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed (the ``+++``/``---`` file headers are not lines)."""
    return len(_ADDED.findall(diff)), len(_REMOVED.findall(diff))


def _detail(d: DriftOut, counts: tuple[int, int] | None) -> str:
    e, a = d.expected, d.actual
    kind = d.kind.value
    if kind == "modified":
        if d.diff and d.diff.startswith(DIFF_TOO_LARGE):
            return esc(d.diff.split(" (", 1)[0])
        if counts is not None:
            return f"+{counts[0]} −{counts[1]} lines"
        if d.json_changes:
            return _n(len(d.json_changes), "JSON change")
        if d.byte_ranges:
            return f"binary: {_n(len(d.byte_ranges), 'changed byte range')}"
        if isinstance(e.get("size"), int) and isinstance(a.get("size"), int) and e["size"] != a["size"]:
            return f"size {size_change(e['size'], a['size'])}"
        return "content differs"
    if kind == "type-changed":
        return f"was a {esc(e.get('type', 'file'))}, now a {esc(a.get('type', '?'))}"
    if kind in ("added", "orphaned-bytecode", "startup-code") and isinstance(a.get("size"), int):
        return readable(a["size"])
    if kind == "stale-bytecode":
        return esc(stale_detail(e.get("source")))
    if kind == "debug-artifacts":
        count, size = a.get("count", len(d.artifacts)), a.get("bytes", 0)
        if isinstance(count, int) and isinstance(size, (int, float)):
            return f"{_n(count, 'file')}, {readable(size)}"
    if kind == "possible-debug-artifacts":
        count, size = a.get("count", 0), a.get("bytes", 0)
        if isinstance(count, int) and isinstance(size, (int, float)):
            return f"{_n(count, 'file')}, {readable(size)}, older than the code that writes them"
    if kind == "upstream-record-mismatch":
        return "as its wheel ships it; the wheel's own RECORD row is wrong"
    if kind == "cache-modified":
        edited = [str(x.get("path")) for x in a.get("edited", []) if isinstance(x, dict)]
        return f"{len(edited)} edited: " + ", ".join(esc(p) for p in edited[:5]) + (", …" if len(edited) > 5 else "")
    if kind == "head-moved":
        return f"{esc(str(e.get('commit'))[:12])} → {esc(str(a.get('commit'))[:12])}"
    return ""


def _root(d: DriftOut) -> str:
    """The directory relpath is relative to (for source and data groups)."""
    if d.scope.value in ("source", "data") and d.path.endswith(d.relpath) and d.relpath != ".":
        return d.path[: -len(d.relpath)].rstrip("/")
    return d.path if d.relpath == "." else ""


def _heading(d: DriftOut) -> str:
    dist, scope = d.distribution, d.scope.value
    if scope == "source":
        return (f"{esc(dist.name) if dist else '?'} — editable source tree {code(_root(d))} "
                "(a reinstall re-links it)")
    if scope == "data":
        return f"Model directory {code(_root(d))} (no reinstall touches it)"
    if scope == "external" and d.kind.value == "cache-modified":
        return (f"uv's cache: the archive of {esc(dist.name) if dist else '?'} {esc(dist.version) if dist else ''} "
                "differs from its own RECORD (a new venv installed from it gets the edit)")
    if scope == "external":
        return "Files left behind by debug code (no reinstall touches them)"
    if dist:
        return f"{esc(dist.name)} {esc(dist.version)} ({esc(dist.installer or 'no INSTALLER')})"
    return "Not owned by any distribution"


@dataclass
class _Unit:
    """One drift (or one collapsed group, one error): the row, and what goes below the table."""

    row: str
    findings: list[str] = field(default_factory=list)
    upstream: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # a <details> block: the first to go


@dataclass
class _Section:
    heading: str
    intro: list[str]
    header: list[str] | None  # a table's header rows; None: the units are list items
    units: list[_Unit]


TABLE_HEADER = ["| kind | path | prediction | remedy |", "| --- | --- | --- | --- |"]


def _finding_line(d: DriftOut, f: Any) -> str:
    origin = f", {f.origin.value}" if f.origin else ""
    return (f"- {code(f'{d.relpath}:{f.line}')} **{esc(f.code)}** {esc(f.message)} "
            f"({esc(f.severity.value)}{origin})")


def _diff_block(d: DriftOut, counts: tuple[int, int] | None) -> list[str]:
    if d.diff and counts is not None:
        added, removed = counts
        summary = f"Diff of {code(d.relpath)} (+{added} −{removed})"
        return [f"<details><summary>{summary}</summary>", "", *_fenced(d.diff, "diff"), "", "</details>", ""]
    if d.json_changes:
        rows = ["| op | pointer | old | new |", "| --- | --- | --- | --- |"]
        for c in d.json_changes:
            op = c.get("op")
            rows.append(f"| {esc(op)} | {code(c.get('pointer') or '/')} | "
                        f"{_json_cell(c, 'old') if op != 'added' else ''} | "
                        f"{_json_cell(c, 'new') if op != 'removed' else ''} |")
        summary = f"JSON changes in {code(d.relpath)} ({len(d.json_changes):,})"
        return [f"<details><summary>{summary}</summary>", "", *rows, "", "</details>", ""]
    if d.content_preview and d.kind.value == "startup-code":  # what it runs at every start, always shown
        summary = f"What {code(d.relpath)} holds"
        return [f"<details><summary>{summary}</summary>", "", *_fenced(d.content_preview, "text"), "", "</details>", ""]
    return []


def _json_cell(change: Mapping[str, Any], key: str) -> str:
    if key not in change:
        return ""
    text = json.dumps(change[key], ensure_ascii=False, sort_keys=True)
    if len(text) > VALUE_CAP:
        text = text[:VALUE_CAP] + "…"
    return code(text)


def _unit(d: DriftOut) -> _Unit:
    counts = _diff_counts(d.diff) if d.diff and not d.diff.startswith(DIFF_TOO_LARGE) else None
    detail = _detail(d, counts)
    if d.kind.value in ("debug-artifacts", "possible-debug-artifacts"):
        path = f"{code(d.path)}" + (f" ({detail})" if detail else "")
    else:
        path = code(d.relpath) + (f" ({detail})" if detail else "")
    prediction = "**PRISTINE**" if d.kind.value == "restored" else f"**{_MARK[d.prediction.value]}**"
    if d.evidence and (d.kind.value == "startup-code" or d.prediction.value != "wiped" and d.distribution
                       and d.scope.value == "package"):
        prediction += f"<br>{esc(d.evidence)}"
    accepted = accepted_reason(d)
    if accepted is not None:
        prediction += f"<br>accepted: {esc(accepted)}"
    unit = _Unit(row=f"| {esc(d.kind.value)} | {path} | {prediction} | {code(d.remedy) if d.remedy else ''} |")
    _add_findings(unit, d)
    unit.details = _diff_block(d, counts)
    return unit


def _add_findings(unit: _Unit, d: DriftOut) -> None:
    for f in d.findings:
        (unit.upstream if f.origin is Origin.UPSTREAM else unit.findings).append(_finding_line(d, f))


def _collapsed_units(items: list[DriftOut]) -> tuple[list[_Unit], set[int]]:
    """Added files grouped by their top-level directory, where a group is too long to list."""
    groups: dict[str, list[DriftOut]] = {}
    for d in items:
        if d.kind.value == "added" and "/" in d.relpath:
            groups.setdefault(d.relpath.split("/", 1)[0], []).append(d)
    units, hidden = [], set()
    for directory, members in sorted(groups.items()):
        if len(members) <= COLLAPSE_OVER:
            continue
        size = sum(m.actual.get("size", 0) for m in members if isinstance(m.actual.get("size"), int))
        codes = Counter(f.code for m in members for f in m.findings if f.origin is not Origin.UPSTREAM)
        found = "; findings: " + ", ".join(f"{esc(c)} ×{n}" for c, n in sorted(codes.items())) if codes else ""
        unit = _Unit(row=f"| added | {code(directory + '/')} ({_n(len(members), 'file')}, "
                         f"{readable(size)}{found}) | **{_MARK[members[0].prediction.value]}** | "
                         "listed one by one in <code>--format json</code> |")
        for m in members:  # the row stands for the files; their findings are each listed still
            _add_findings(unit, m)
        units.append(unit)
        hidden |= {id(m) for m in members}
    return units, hidden


def _pristine_line(r: Report, name: str) -> str | None:
    p = pristine_of(r, name)
    if p is None:
        return None
    if p.source:
        return f"Original compared with: {esc(p.source)} {code(p.path or '')}" + (f" ({esc(p.reason)})" if p.reason else "")
    return f"Original: none found ({esc(p.reason)})" if p.reason else None


def _processes(p: ProcsReport) -> _Section:
    """``audit --processes``: each stale process, its evidence and what to restart; the others counted."""
    stale = p.stale
    units = [_Unit(f"- PID {p.pid} {code(shown_command(tuple(p.argv)))}: {esc(evidence_summary(p))}; "
                   f"restart: {code(p.remedy or '')}") for p in stale]
    others = p.summary.running - len(stale)
    if others:
        units.append(_Unit(f"- {_n(others, 'other process')} {'runs' if others == 1 else 'run'} what is on disk"))
    if p.hidden:
        units.append(_Unit(f"- {_n(len(p.hidden), 'Python process')} not visible to this user"))
    units += [_Unit(f"- error: {esc(e)}") for e in p.errors]
    return _Section(f"Processes ({p.summary.running:,} run the environment, {len(stale):,} with evidence of old code)",
                    [], None, units)


def _sections(r: Report) -> list[_Section]:
    sections = []
    key = lambda d: (d.scope, d.distribution.name.lower() if d.distribution else "", _root(d))  # noqa: E731
    for _, group in groupby(r.drifts, key=key):
        items = list(group)
        first = items[0]
        intro = []
        if first.distribution and first.scope.value == "package" and any(d.kind.value == "modified" for d in items):
            line = _pristine_line(r, first.distribution.name)
            if line:
                intro.append(line)
        units, hidden = _collapsed_units(items)
        units += [_unit(d) for d in items if id(d) not in hidden]
        sections.append(_Section(_heading(first), intro, TABLE_HEADER, units))
    if r.unverifiable:
        sections.append(_Section(f"Unverifiable ({len(r.unverifiable):,}): neither clean nor drifted", [], None,
                                 [_Unit(f"- {esc(u.distribution)}: {esc(u.reason)}") for u in r.unverifiable]))
    if r.skipped:
        sections.append(_Section(f"Skipped ({len(r.skipped):,})", [], None,
                                 [_Unit(f"- {code(e.path)}: {esc(e.message)}") for e in r.skipped]))
    if r.notes:
        sections.append(_Section(f"Notes ({len(r.notes):,})", [], None,
                                 [_Unit(f"- {code(e.path)}: {esc(e.message)}") for e in r.notes]))
    stale = getattr(r, "stale_accepted", [])
    if stale:
        sections.append(_Section(f"Stale accept entries ({len(stale):,}): their drift counts again", [], None,
                                 [_Unit(f"- entry {e.entry} {code(e.path)}: {esc(e.why)} (reason given: "
                                        f"{esc(e.reason)})") for e in stale]))
    unused = getattr(r, "unused_accepted", [])
    if unused:
        sections.append(_Section(f"Unused accept entries ({len(unused):,}): they match no drift", [], None,
                                 [_Unit(f"- entry {e.entry} {code(e.path)} (reason given: {esc(e.reason)})")
                                  for e in unused]))
    if r.processes is not None:
        sections.append(_processes(r.processes))
    if r.errors:
        sections.append(_Section(f"Could not check ({len(r.errors):,})", [], None,
                                 [_Unit(f"- {code(e.path)}: {esc(e.message)}") for e in r.errors]))
    return sections


def _target_line(r: Report) -> str:
    t = r.target
    parts = []
    if t.venv:
        parts.append(f"venv {code(t.venv)}" + (f" (Python {esc(t.python_version)})" if t.python_version else ""))
    elif t.site_packages:
        parts.append("site-packages " + ", ".join(code(s) for s in t.site_packages))
    if t.model_dirs:
        parts.append(("model directory " if len(t.model_dirs) == 1 else "model directories ")
                     + ", ".join(code(m) for m in t.model_dirs))
    because = getattr(t, "chosen_because", None)
    if because:
        parts.append(f"default target: {esc(because)}")
    return " · ".join(parts + [f"driftscan {esc(r.tool.version)}"])


def _counts(r: Report) -> list[str]:
    if not r.drifts:
        return []
    kinds = list(dict.fromkeys(d.kind.value for d in sorted(r.drifts, key=lambda d: d.kind.value)))
    by = Counter((d.scope, d.kind.value) for d in r.drifts)
    lines = ["| scope | " + " | ".join(kinds) + " | total |", "| --- |" + " ---: |" * (len(kinds) + 1)]
    for scope in SCOPE_ORDER:
        row = [by.get((scope, k), 0) for k in kinds]
        if any(row):
            lines.append(f"| {scope.value} | " + " | ".join(f"{n:,}" if n else "" for n in row)
                         + f" | {sum(row):,} |")
    totals = Counter(d.kind.value for d in r.drifts)
    lines.append("| **total** | " + " | ".join(f"{totals[k]:,}" for k in kinds) + f" | **{len(r.drifts):,}** |")
    return lines + [""]


def _head(r: Report) -> list[str]:
    title = "no drift" if not r.drifts else _n(len(r.drifts), "drift")
    return [f"## driftscan: {title}", "", _target_line(r), "", esc(summary_line(r)), "", *_counts(r)]


@dataclass
class _Budget:
    rows: int  # units shown
    diffs: int  # units (of those shown) whose <details> diff is shown


def _body(sections: list[_Section], budget: _Budget) -> list[str]:
    lines: list[str] = []
    shown = diffs = 0
    for s in sections:
        take = s.units[: max(0, budget.rows - shown)]
        shown += len(take)
        if not take:
            continue
        lines += [f"### {s.heading}", ""]
        if s.intro:
            lines += [*s.intro, ""]
        if s.header is not None:
            lines += [*s.header, *(u.row for u in take), ""]
        else:
            lines += [*(u.row for u in take), ""]
        findings = [f for u in take for f in u.findings]
        if findings:
            lines += ["Debug code found:", "", *findings, ""]
        upstream = [f for u in take for f in u.upstream]
        if upstream:
            what = _n(len(upstream), "finding")
            lines += [f"<details><summary>{what} also in the original file (not what drifted)</summary>", "",
                      *upstream, "", "</details>", ""]
        for u in take:
            if u.details:
                if diffs < budget.diffs:
                    lines += u.details
                diffs += 1
    return lines


def _notice(budget: _Budget, units: int, with_details: int, max_bytes: int) -> list[str]:
    dropped_diffs = with_details - min(budget.diffs, with_details)
    parts = []
    if dropped_diffs:
        parts.append(f"{dropped_diffs:,} of {with_details:,} diffs and JSON change lists are left out")
    if budget.rows < units:
        parts.append(f"only the first {budget.rows:,} of {units:,} rows are shown")
    return [f"> **Truncated** to stay under {max_bytes:,} bytes (GitHub's step summary limit is 1 MiB): "
            + "; ".join(parts) + ". The full report: <code>--format json</code>.", ""]


def _size(lines: list[str]) -> int:
    return len("\n".join(lines).encode("utf-8")) + 1


def render_markdown(report: Report, *, max_bytes: int = MAX_BYTES) -> str:
    """``max_bytes``: the most the output may take (UTF-8). Findings the original file has too
    (``origin: upstream``: not what drifted) are listed only in a collapsed block."""
    head = _head(report)
    sections = _sections(report)
    units = sum(len(s.units) for s in sections)
    with_details = sum(1 for s in sections for u in s.units if u.details)

    def build(budget: _Budget) -> list[str]:
        notice = _notice(budget, units, with_details, max_bytes) if (budget.rows < units or
                                                                     budget.diffs < with_details) else []
        return head + notice + _body(sections, budget)

    lines = build(_Budget(units, with_details))
    if _size(lines) > max_bytes:
        lines = _fit(head, build, units, with_details, max_bytes)
    text = "\n".join(lines) + "\n"
    encoded = text.encode("utf-8")
    if len(encoded) > max_bytes:  # a cap smaller than the notice itself
        text = encoded[:max_bytes].decode("utf-8", "ignore")
    return text


def _largest(hi: int, fits: Callable[[int], bool]) -> int:
    """The largest n in [0, hi] with fits(n), for a monotone fits with fits(0) true."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _fit(head: list[str], build: Callable[[_Budget], list[str]], units: int, with_details: int,
         max_bytes: int) -> list[str]:
    """Diffs out first (the last ones first), then rows (the last ones first)."""
    def diffs_fit(n: int) -> bool:
        return _size(build(_Budget(units, n))) <= max_bytes

    def rows_fit(n: int) -> bool:
        return _size(build(_Budget(n, 0))) <= max_bytes

    if diffs_fit(0):
        return build(_Budget(units, _largest(with_details, diffs_fit)))
    if rows_fit(0):
        return build(_Budget(_largest(units, rows_fit), 0))
    # even the counts do not fit: the title, the notice, then whole lines of the head while they fit
    kept = head[:2] + _notice(_Budget(0, 0), units, with_details, max_bytes)
    for line in head[2:]:
        if _size(kept + [line]) > max_bytes:
            break
        kept.append(line)
    return kept

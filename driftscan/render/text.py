"""Readable text: drifts grouped by distribution, one line each, a summary line last."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from itertools import groupby
from typing import Any

from ..core.values import Origin
from ..report.contract import DriftOut, Report, pristine_of
from ..core.units import plural, size, size_change
from .procsview import audit_section

DIFF_TOO_LARGE = "diff too large: "  # how a diff past its budget begins (formats/linediff.py)


def _diff_counts(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def stale_detail(source: object) -> str:
    """A stale-bytecode drift's detail: which source Python no longer reads."""
    name = source.rsplit("/", 1)[-1] if isinstance(source, str) else "its source"
    return f"Python runs it instead of {name}: compiled from other content"


def _detail(d: DriftOut) -> str:
    e, a = d.expected, d.actual
    if d.kind.value == "modified":
        if d.diff and d.diff.startswith(DIFF_TOO_LARGE):  # no diff: what formats/linediff.py said instead
            return d.diff.split(" (", 1)[0]
        if d.diff:
            added, removed = _diff_counts(d.diff)
            capped = " shown of more" if "more diff lines not shown" in d.diff else ""
            return f"+{added} −{removed} lines{capped}"
        if d.json_changes:
            return f"{len(d.json_changes)} JSON change{'s' if len(d.json_changes) != 1 else ''}"
        if d.byte_ranges:
            return f"binary: {len(d.byte_ranges)} changed byte range{'s' if len(d.byte_ranges) != 1 else ''}"
        if "size" in e and "size" in a and e["size"] != a["size"]:
            return f"size {size_change(e['size'], a['size'])}"
        return "content differs" + (f" (hard links: {a['nlink']})" if a.get("nlink") else "")
    if d.kind.value == "type-changed":
        target = f" → {a['target']}" if a.get("target") else ""
        return f"was a {e.get('type', 'file')}, now a {a.get('type', '?')}{target}"
    if d.kind.value in ("added", "orphaned-bytecode", "startup-code") and "size" in a:
        return size(a["size"]) if a.get("type") == "file" else a.get("type", "")
    if d.kind.value == "debug-artifacts":
        return f"{_n(a.get('count', 0), 'file')}, {size(a.get('bytes', 0))}"
    if d.kind.value == "stale-bytecode":
        return stale_detail(e.get("source"))
    if d.kind.value == "upstream-record-mismatch":
        return "as its wheel ships it; the wheel's own RECORD row is wrong"
    if d.kind.value == "cache-modified":
        edited = [e.get("path") for e in a.get("edited", []) if isinstance(e, dict)]
        return f"{len(edited)} edited: " + ", ".join(map(str, edited[:5])) + (", …" if len(edited) > 5 else "")
    if d.kind.value == "possible-debug-artifacts":
        return f"{_n(a.get('count', 0), 'file')}, {size(a.get('bytes', 0))}, older than the code that writes them"
    if d.kind.value == "missing-directory":
        return f"gone with {_n(e.get('files', 0), 'file')} its RECORD lists"
    if d.kind.value == "missing-files":
        return f"{_n(e.get('files', 0), 'file')} its RECORD lists here are missing"
    if d.kind.value == "head-moved":
        return f"{str(e.get('commit'))[:12]} → {str(a.get('commit'))[:12]}"
    if d.kind.value == "orphaned-metadata":
        return "contains: " + (", ".join(a.get("files", [])) or "nothing")
    return d.evidence if d.kind.value == "clobbered" else ""


# What reinstalling the owning distribution does, in a fixed-width column.
_MARK = {"wiped": "WIPED      ", "survives": "SURVIVES   ", "may-survive": "MAY SURVIVE",
         "restored": "PRISTINE   "}  # (a diff's restored file: back to what RECORD lists, nothing to undo)


COLLAPSE_OVER = 10  # added files under one top-level directory shown as one line beyond this


def _collapsible(items: list[DriftOut]) -> dict[str, list[DriftOut]]:
    """Added files grouped by their top-level directory, where a group is too long to list."""
    groups: dict[str, list[DriftOut]] = {}
    for d in items:
        if d.kind.value == "added" and "/" in d.relpath:
            groups.setdefault(d.relpath.split("/", 1)[0], []).append(d)
    return {k: v for k, v in sorted(groups.items()) if len(v) > COLLAPSE_OVER}


def _root(d: DriftOut) -> str:
    """The directory relpath is relative to (for source and data groups)."""
    if d.scope.value in ("source", "data") and d.path.endswith(d.relpath) and d.relpath != ".":
        return d.path[: -len(d.relpath)].rstrip("/")
    return d.path if d.relpath == "." else ""


def _group_heading(d: DriftOut) -> str:
    dist = d.distribution
    scope = d.scope.value
    if scope == "source":
        return f"{dist.name if dist else '?'} — editable source tree {_root(d)} (a reinstall re-links it)"
    if scope == "data":
        return f"model directory {_root(d)} (no reinstall touches it)"
    if scope == "external" and d.kind.value == "cache-modified":
        return (f"uv's cache: the archive of {dist.name if dist else '?'} {dist.version if dist else ''} differs from "
                "its own RECORD (a new venv installed from it gets the edit)")
    if scope == "external":
        return "files left behind by debug code (no reinstall touches them)"
    if dist:
        return f"{dist.name} {dist.version} ({dist.installer or 'no INSTALLER'})"
    return "not owned by any distribution"


def _section(d: DriftOut) -> tuple[int, str]:
    """Where a drift is listed: (rank, scope); a distribution's own drifts rank with package ones."""
    scope = d.scope.value
    if scope == "environment" and d.distribution is not None:
        scope = "package"
    return _SECTIONS.index(scope) if scope in _SECTIONS else len(_SECTIONS), scope


_SECTIONS = ["package", "environment", "source", "data", "external"]


def _header(r: Report) -> str:
    t = r.target
    parts = []
    if t.venv:
        parts.append(f"venv {t.venv}" + (f" (Python {t.python_version})" if t.python_version else ""))
    elif t.site_packages:
        parts.append("site-packages " + ", ".join(t.site_packages))
    for link, real in t.site_packages_links.items():
        parts.append(f"named as {link} (through a symlink)")
    if t.model_dirs:
        parts.append(("model directory " if len(t.model_dirs) == 1 else "model directories ") + ", ".join(t.model_dirs))
    chosen = f" (default target: {t.chosen_because})" if t.chosen_because else ""
    return f"driftscan {r.tool.version} · " + (" · ".join(parts) or "nothing audited") + chosen


def _pristine_line(r: Report, name: str) -> str | None:
    p = pristine_of(r, name)
    if p is None:
        return None
    if p.source:
        return f"  original: {p.source} {p.path}" + (f" ({p.reason})" if p.reason else "")
    return f"  original: none found ({p.reason})" if p.reason else None


def _indented(block: str, prefix: str = "      ") -> list[str]:
    return [prefix + line for line in block.rstrip("\n").split("\n")]


def render_text(r: Report, *, diffs: bool = False, show_upstream: bool = False, verbose: bool = False,
                color: bool = False) -> str:
    """``diffs``: each modified file's diff (or JSON changes) under it, and the start of each
    small added text file or startup file (``content_preview``); ``verbose``: the evidence too; ``show_upstream``: also the findings the original file has too (hidden by default: they
    are not what drifted). ``color`` is applied by ``colorize`` after the text is made inert."""
    diffs = diffs or verbose
    lines = [_header(r), ""]
    width = max((len(d.kind.value) for d in r.drifts), default=8)
    # One heading per distribution: its environment drifts (junk in its __pycache__) go with its
    # package drifts rather than under a second heading of the same name.
    key = lambda d: (_section(d), d.distribution.name.lower() if d.distribution else "", _root(d))  # noqa: E731
    shown = sorted(r.drifts, key=lambda d: (_section(d)[0], d.distribution.name.lower() if d.distribution else ""))
    for _, group in groupby(shown, key=key):
        items = list(group)
        lines.append(_group_heading(items[0]))
        collapsed = _collapsible(items)
        for directory, members in collapsed.items():
            total = sum(m.actual.get("size", 0) for m in members if isinstance(m.actual.get("size"), int))
            codes = Counter(f.code for m in members for f in m.findings if f.origin is not Origin.UPSTREAM)
            found = "; findings: " + ", ".join(f"{c} ×{n}" for c, n in sorted(codes.items())) if codes else ""
            lines.append(f"  {'added':<{width}}  {_MARK[members[0].prediction.value]}  {directory}/  "
                         f"({_n(len(members), 'file')}, {size(total)}{found}; listed one by one in --format json)")
            hidden_upstream = 0
            for m in members:  # the line stands for the files; their findings are each listed still
                listed, hidden_by = _findings(m, show_upstream, where=f"{m.relpath} ")
                lines += listed
                hidden_upstream += hidden_by
            lines += _hidden_upstream(hidden_upstream)
        hidden = {id(m) for members in collapsed.values() for m in members}
        for d in items:
            if id(d) in hidden:
                continue
            detail = _detail(d)
            mark = _MARK["restored"] if d.kind.value == "restored" else _MARK[d.prediction.value]
            lines.append(f"  {d.kind.value:<{width}}  {mark}  {_shown_path(d)}"
                         + (f"  ({detail})" if detail else ""))
            if d.accepted:
                lines.append(f"      ACCEPTED  {d.accepted.get('reason', '')} (accept entry {d.accepted.get('entry')})")
            if d.evidence and (verbose or (d.prediction.value != "wiped" and d.distribution
                                           and d.scope.value == "package")
                               or d.kind.value in ("possible-debug-artifacts", "cache-modified", "startup-code")):
                lines.append(f"      {d.evidence}")
            listed, hidden_upstream = _findings(d, show_upstream)
            lines += listed + _hidden_upstream(hidden_upstream)
            if diffs and d.diff:
                lines += _indented(d.diff)
            elif diffs and d.json_changes:
                lines += [f"      {c.get('op')} {c.get('pointer') or '/'}: {_brief(c)}" for c in d.json_changes]
            elif diffs and d.content_preview:  # startup code under -v, a small added text file's content too
                lines += _indented(d.content_preview, "      | ")
            if d.remedy and _own_remedy(d, verbose):
                lines.append(f"      remedy: {d.remedy}")
        first = items[0]
        if first.distribution and first.scope.value == "package" and any(d.kind.value == "modified" for d in items):
            source = _pristine_line(r, first.distribution.name)
            if source:
                lines.append(source)
        lines += [f"  remedy: {remedy}" for remedy in _group_remedies(items)]
        lines.append("")
    if r.stale_accepted:
        lines.append(f"stale accepted entries ({len(r.stale_accepted)}) — their drift counts again")
        lines += [f"  accept[{e.entry}] {e.path}" + (f" ({e.file})" if e.file and any(c in e.path for c in "*?[") else "")
                  + f": {e.why} — reason was: {e.reason}" for e in r.stale_accepted]
        lines.append("")
    if r.unused_accepted:
        lines.append(f"unused accepted entries ({len(r.unused_accepted)}) — they match no drift")
        lines += [f"  accept[{e.entry}] {e.path}: {e.reason}" for e in r.unused_accepted]
        lines.append("")
    if r.unverifiable:
        lines.append(f"unverifiable ({len(r.unverifiable)}) — neither clean nor drifted")
        lines += [f"  {u.distribution}: {u.reason}" for u in r.unverifiable]
        lines.append("")
    if r.skipped:
        lines.append(f"skipped ({len(r.skipped)})")
        lines += [f"  {e.path}: {e.message}" for e in r.skipped]
        lines.append("")
    if r.notes:
        lines.append(f"notes ({len(r.notes)})")
        lines += [f"  {e.path}: {e.message}" for e in r.notes]
        lines.append("")
    lines += audit_section(r.processes)
    if r.errors:
        lines.append(f"could not check ({len(r.errors)})")
        lines += [f"  {e.path}: {e.message}" for e in r.errors]
        lines.append("")
    lines.append(summary_line(r))
    return "\n".join(lines) + "\n"


_DUMPS = ("debug-artifacts", "possible-debug-artifacts")


def _shown_path(d: DriftOut) -> str:
    """A dump drift's whole pattern (``/tmp/dumps/gguf_*.pt``: its relpath alone does not say where);
    any other drift's path under its group's heading."""
    return d.path if d.kind.value in _DUMPS else d.relpath


def _own_remedy(d: DriftOut, verbose: bool) -> bool:
    """Whether a drift's remedy goes under its own line: a model-directory file's and a dump's
    always (each has its own way back), every other drift's that its group does not list already
    under ``-v``."""
    if d.scope.value == "data" or d.kind.value in _DUMPS:
        return True
    return verbose and not _in_group_remedies(d)


def _in_group_remedies(d: DriftOut) -> bool:
    return d.kind.value == "cache-modified" or (d.scope.value == "package" and d.kind.value != "restored")


_CACHE_CLEAN = re.compile(r"uv cache clean [^&]*&& ")


def _group_remedies(items: list[DriftOut]) -> list[str]:
    """A distribution's remedies, each once, those that work only, in order: where a file is edited
    in uv's cache too, ``uv cache clean NAME && <reinstall>`` comes first and the plain
    ``<reinstall>`` is left out (it would link the edited copy back)."""
    remedies = list(dict.fromkeys(d.remedy for d in items if d.remedy and _in_group_remedies(d)))
    cleaning = [r for r in remedies if _CACHE_CLEAN.search(r)]
    superseded = {_CACHE_CLEAN.sub("", r) for r in cleaning}
    return cleaning + [r for r in remedies if r not in cleaning and r not in superseded]


def _findings(d: DriftOut, show_upstream: bool, where: str = "") -> tuple[list[str], int]:
    """A drift's finding lines (``where``: the file, when the line does not follow the file's own
    line) and how many were left out as also in the original file."""
    lines, hidden = [], 0
    for f in d.findings:
        if f.origin is Origin.UPSTREAM and not show_upstream:
            hidden += 1
            continue
        origin = f" [{f.origin.value}]" if f.origin else ""
        lines.append(f"      {f.code} {f.severity.value:<6} {where}line {f.line}:{f.column} {f.name}: {f.message}{origin}")
    return lines, hidden


def _hidden_upstream(count: int) -> list[str]:
    if not count:
        return []
    return [f"      ({count} finding{'s' if count != 1 else ''} also in the original file not shown: --show-upstream)"]


_ANSI = {"WIPED": "32", "SURVIVES": "33", "MAY SURVIVE": "35", "ACCEPTED": "36", "high": "31", "medium": "33",
         "low": "2", "[injected]": "31", "[upstream]": "2"}
_MARKS = re.compile(r"(?<=  )(WIPED|SURVIVES|MAY SURVIVE|ACCEPTED)(?=\s)|(?<= DBG\d{3} )(high|medium|low)(?= )"
                    r"|(\[injected\]|\[upstream\])$", re.M)


def colorize(text: str) -> str:
    """ANSI colour for the report's own marks (predictions, severities, origins), on text that was
    already made inert: colour codes are added here, never taken from the tree."""
    return _MARKS.sub(lambda m: f"\x1b[{_ANSI[m.group(0)]}m{m.group(0)}\x1b[0m", text)


def _brief(change: Mapping[str, Any]) -> str:
    op = change.get("op")
    if op == "changed":
        return f"{change.get('old')!r} → {change.get('new')!r}"
    return repr(change.get("new" if op == "added" else "old"))


def summary_line(r: Report) -> str:
    s = r.summary
    took = f" in {r.duration_seconds:.2f} s" if r.duration_seconds is not None else ""
    where = f" in {_n(s.distributions, 'distribution')}" if r.target.venv or r.target.site_packages else ""
    checked = f"{_n(s.files_checked, 'file')} checked{where}{took}"
    if s.not_hashed:
        checked += f" ({s.not_hashed} not hashed: size and mtime only; --deep to hash)"
    if not s.drifts and s.files_checked == 0:
        head = "nothing could be verified"
    elif not s.drifts:
        head = "no drift"
    else:
        kinds = ", ".join(f"{n} {k}" for k, n in Counter(d.kind.value for d in r.drifts).most_common())
        head = f"{_n(s.drifts, 'drift')} ({kinds})" + (f", {s.accepted} accepted" if s.accepted else "")
    return f"{head}; {checked}; {s.unverifiable} unverifiable; {_n(s.errors, 'error')}"


def _n(count: int, noun: str) -> str:
    return f"{count} {plural(count, noun)}"

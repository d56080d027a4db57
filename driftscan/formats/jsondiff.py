"""What changed between two versions of a small file: JSON pointer changes, or a unified diff.

A drift report that says "config.json modified" sends the user to diff it by hand; one that says
``removed /quantization_config/kv_cache_scheme`` answers the question. Pointers follow RFC 6901
(``~`` → ``~0``, ``/`` → ``~1``, arrays by index).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .linediff import DiffTooLarge, unified_diff_lines

MAX_CHANGES = 200  # a rewritten tokenizer vocabulary is not worth 150k entries in a report
MAX_DIFF_LINES = 300
MAX_DIFF_LINE_CHARS = 2000  # a minified one-line file would otherwise be a whole-file diff line
MAX_DEPTH = 64  # real configs nest a few levels; a document nested deeper is shown as text only
JSON_SUFFIXES = (".json",)


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _same(a: Any, b: Any) -> bool:
    # JSON's 1, 1.0 and true differ for a config reader (Python says 1 == 1.0 == True).
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def iter_changes(old: Any, new: Any, pointer: str = "") -> Iterator[dict[str, Any]]:
    """Yield ``{"pointer", "op", "old"/"new"}`` for every leaf-most difference, in document order."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            child = f"{pointer}/{escape(key)}"
            if key not in new:
                yield {"pointer": child, "op": "removed", "old": old[key]}
            else:
                yield from iter_changes(old[key], new[key], child)
        for key in new:
            if key not in old:
                yield {"pointer": f"{pointer}/{escape(key)}", "op": "added", "new": new[key]}
    elif isinstance(old, list) and isinstance(new, list):
        common = min(len(old), len(new))
        for i in range(common):
            yield from iter_changes(old[i], new[i], f"{pointer}/{i}")
        for i in range(common, len(old)):
            yield {"pointer": f"{pointer}/{i}", "op": "removed", "old": old[i]}
        for i in range(common, len(new)):
            yield {"pointer": f"{pointer}/{i}", "op": "added", "new": new[i]}
    elif not _same(old, new):
        yield {"pointer": pointer, "op": "changed", "old": old, "new": new}


def json_changes(old: Any, new: Any, limit: int = MAX_CHANGES) -> tuple[tuple[dict[str, Any], ...], int]:
    """The first ``limit`` changes and how many there are in all."""
    kept: list[dict[str, Any]] = []
    total = 0
    for change in iter_changes(old, new):
        total += 1
        if len(kept) < limit:
            kept.append(change)
    return tuple(kept), total


def nests_within(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests at most ``limit`` levels. Iterative: the value may be thousands
    deep, and the report's serialisers recurse, so such a value must not reach them."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
    return True


def _cut(line: str) -> str:
    if len(line) <= MAX_DIFF_LINE_CHARS:
        return line
    return f"{line[:MAX_DIFF_LINE_CHARS]} ... ({len(line) - MAX_DIFF_LINE_CHARS} more characters)\n"


def unified_diff(old: str, new: str, name: str, max_lines: int = MAX_DIFF_LINES) -> str:
    """A unified diff, capped at ``max_lines``; past the matching's budget, one line saying "diff
    too large" with bounds on the lines changed, instead of the diff."""
    try:
        lines = unified_diff_lines(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                   f"a/{name}", f"b/{name}")
    except DiffTooLarge as exc:
        return f"{exc}: not shown\n"
    lines = [_cut(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n") for line in lines]
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... {len(lines) - max_lines} more diff lines not shown "
                                     f"(the cap is {max_lines} lines per file)\n"]
    return "".join(lines)


@dataclass(frozen=True)
class Change:
    json_changes: tuple[dict[str, Any], ...] = ()
    total: int = 0  # every JSON change, including those beyond the cap
    diff: str | None = None


def as_text(data: bytes) -> str | None:
    """UTF-8 text, or None for binary content (a NUL byte) and undecodable bytes."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def describe(old: bytes, new: bytes, name: str) -> Change:
    """JSON changes for ``*.json`` that both parse; otherwise a unified diff of text; nothing for binary."""
    old_text, new_text = as_text(old), as_text(new)
    if old_text is None or new_text is None:
        return Change()
    if name.lower().endswith(JSON_SUFFIXES):
        try:
            old_doc, new_doc = json.loads(old_text), json.loads(new_text)
            deep = not (nests_within(old_doc) and nests_within(new_doc))
            changes, total = ((), 0) if deep else json_changes(old_doc, new_doc)
        except (ValueError, RecursionError):  # unparsable (or absurdly deep): fall back to the text diff
            pass
        else:
            if total:
                return Change(changes, total)
            # Same document, different bytes (whitespace, key order): only a diff shows it.
    return Change(diff=unified_diff(old_text, new_text, name) or None)


def summary(change: Change) -> str:
    """A short phrase for evidence: "2 JSON changes (removed /a/b, ...)"."""
    if not change.total:
        return ""
    shown = ", ".join(f"{c['op']} {c['pointer'] or '/'}" for c in change.json_changes[:3])
    more = f", {change.total - 3} more" if change.total > 3 else ""
    noun = "change" if change.total == 1 else "changes"
    return f"{change.total} JSON {noun}: {shown}{more}"

"""Text patches for in-place edits: make them, read them back, apply them, merge them onto a newer file.

``driftscan checkpoint`` saves a user's edits to installed files as unified diffs before a reinstall
wipes them; ``driftscan reapply`` puts them back afterwards, possibly onto a newer version of the file
(a three-way merge), optionally leaving out the hunks that carry debug code. This module is the pure
text machinery behind both: no I/O, ``str`` in and ``str`` out.

Conventions kept throughout:

* A line is everything up to and including ``"\\n"``; the last line may lack it. Only ``"\\n"`` ends a
  line (``"\\r\\n"`` files keep their ``"\\r"`` as part of each line), which is what ``git apply`` and
  GNU ``patch`` do. ``str.splitlines`` is *not* used: it also splits at ``"\\r"``, ``"\\f"``,
  ``"\\x1c"``-``"\\x1e"``, ``"\\x85"``, U+2028 and U+2029, which those tools treat as ordinary
  characters, so a patch built from its lines would not apply.
* Patches are ``-p0`` unified diffs (``--- path`` / ``+++ path``, no ``a/``/``b/`` prefixes) that real
  ``git apply -p0`` and GNU ``patch -p0`` accept, with ``\\ No newline at end of file`` markers.
* Application is exact: the context must match line for line (an offset search is allowed, fuzz is
  not).
"""

from __future__ import annotations

import bisect
import enum
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field

from driftscan.core.errors import DriftscanError
from driftscan.formats.linediff import Budget, BudgetedMatcher, DiffTooLarge

__all__ = [
    "NO_NEWLINE_MARKER",
    "Conflict",
    "FilePatch",
    "Hunk",
    "MarkedMerge",
    "MergeResult",
    "PatchError",
    "PatchTooLarge",
    "added_line_numbers",
    "apply_hunks",
    "diff_hunks",
    "format_hunks",
    "make_patch",
    "marker_line",
    "merge3",
    "merge3_marked",
    "parse_patch",
    "quote_path",
    "reverse_hunks",
    "split_lines",
    "unquote_path",
    "without_hunks",
]

NO_NEWLINE_MARKER = "\\ No newline at end of file\n"
DEV_NULL = "/dev/null"


class PatchError(DriftscanError):
    """A patch that cannot be made, read or applied exactly as stated."""


class PatchTooLarge(PatchError, DiffTooLarge):
    """Two texts whose diff would take more work than a diff's budget (``formats/linediff.py``):
    "diff too large", with a lower bound of the lines changed."""


def split_lines(text: str) -> list[str]:
    """``text`` as lines that keep their ``"\\n"`` (the last one may lack it); only ``"\\n"`` splits."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# --------------------------------------------------------------------------------------------- hunks


def _sides(lines: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The old and new file lines a hunk body stands for; PatchError when the body is not well formed."""
    old: list[str] = []
    new: list[str] = []
    old_closed = new_closed = False  # a side ended with a line without newline: nothing may follow
    previous = ""  # tag of the previous body line ("" at the start, "\\" after a marker)
    for number, line in enumerate(lines, 1):
        if not isinstance(line, str) or not line:
            raise PatchError(f"body line {number} is empty (a context line needs its leading space)")
        tag = line[0]
        if tag == "\\":
            if previous in ("", "\\"):
                raise PatchError(f"body line {number}: a 'No newline' marker must follow a ' ', '-' or '+' line")
            if previous in " -":
                old_closed = True
                old[-1] = old[-1][:-1]
                if not old[-1]:
                    raise PatchError(f"body line {number}: an empty last line cannot lack its newline")
            if previous in " +":
                new_closed = True
                new[-1] = new[-1][:-1]
                if not new[-1]:
                    raise PatchError(f"body line {number}: an empty last line cannot lack its newline")
            previous = tag
            continue
        if tag not in " -+":
            raise PatchError(f"body line {number} starts with {tag!r}, not ' ', '-', '+' or '\\'")
        if not line.endswith("\n"):
            raise PatchError(f"body line {number} does not end with a newline")
        content = line[1:]
        if tag in " -":
            if old_closed:
                raise PatchError(f"body line {number} follows the old side's last line (the one without newline)")
            old.append(content)
        if tag in " +":
            if new_closed:
                raise PatchError(f"body line {number} follows the new side's last line (the one without newline)")
            new.append(content)
        previous = tag
    return tuple(old), tuple(new)


def _span(start: int, length: int) -> int:
    """0-based index of the first line a hunk side covers (a zero-length side's start names the line before)."""
    return start - 1 if length else start


@dataclass(frozen=True)
class Hunk:
    """One ``@@ -old_start,old_len +new_start,new_len @@`` hunk. Validated on construction."""

    old_start: int  # 1-based first line in the old text; for old_len == 0 the line *after which* it inserts
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[str, ...]  # " ctx\n", "-old\n", "+new\n" and NO_NEWLINE_MARKER lines, as in the patch
    _old: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _new: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "lines", tuple(self.lines))
        for name in ("old_start", "old_len", "new_start", "new_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise PatchError(f"{name} must be a non-negative integer, not {value!r}")
        if self.old_len and not self.old_start:
            raise PatchError("a hunk with old lines cannot start at line 0")
        if self.new_len and not self.new_start:
            raise PatchError("a hunk with new lines cannot start at line 0")
        old, new = _sides(self.lines)
        if len(old) != self.old_len or len(new) != self.new_len:
            raise PatchError(
                f"the header says {self.old_len} old and {self.new_len} new lines, "
                f"the body has {len(old)} and {len(new)}"
            )
        if not any(line[:1] in "-+" for line in self.lines):
            raise PatchError("the hunk changes nothing (no '-' or '+' line)")
        object.__setattr__(self, "_old", old)
        object.__setattr__(self, "_new", new)

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@"

    def old_lines(self) -> list[str]:
        """The old text's lines (context and removed), with their line endings as in the file."""
        return list(self._old)

    def new_lines(self) -> list[str]:
        """The new text's lines (context and added), with their line endings as in the file."""
        return list(self._new)

    def added_lines(self) -> list[str]:
        """The lines this hunk adds (the ``+`` lines), as in the new file."""
        added: list[str] = []
        for index, line in enumerate(self.lines):
            if line[0] == "+":
                ends_file = index + 1 < len(self.lines) and self.lines[index + 1][0] == "\\"
                added.append(line[1:-1] if ends_file else line[1:])
        return added

    def added_range(self) -> range:
        """1-based line numbers, in the new text, from the first to the last line this hunk adds or
        changes; an empty range for a pure deletion."""
        number = self.new_start if self.new_len else self.new_start + 1
        first = last = 0
        for line in self.lines:
            tag = line[0]
            if tag == "+":
                if not first:
                    first = number
                last = number
            if tag in " +":
                number += 1
        if not first:
            return range(self.new_start, self.new_start)
        return range(first, last + 1)

    def text(self) -> str:
        """The hunk as it appears in a patch: header line and body."""
        return self.header + "\n" + "".join(self.lines)


@dataclass(frozen=True)
class FilePatch:
    path: str
    hunks: tuple[Hunk, ...]
    created: bool = False  # the patch's old side was /dev/null
    deleted: bool = False  # the patch's new side was /dev/null


def _body_lines(tag: str, lines: Sequence[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(tag + line)
        else:  # only ever a file's last line
            out.append(tag + line + "\n")
            out.append(NO_NEWLINE_MARKER)
    return out


# -------------------------------------------------------------------------------------------- diffing

# (old_lo, old_hi, new_lo, new_hi): old[old_lo:old_hi] became new[new_lo:new_hi]; never both empty.
_Change = tuple[int, int, int, int]


# A segment pair larger than this (lines x lines) is matched with SequenceMatcher's "popular line"
# heuristic on: without it, a long stretch of repeated lines costs quadratic time.
_EXACT_MATCH_LIMIT = 250_000


def _longest_increasing(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by first item) whose second items increase."""
    tails: list[int] = []  # tails[k]: index into pairs of the smallest end of an increasing run of length k+1
    tail_values: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        lo, hi = 0, len(tail_values)
        while lo < hi:
            mid = (lo + hi) // 2
            if tail_values[mid] < j:
                lo = mid + 1
            else:
                hi = mid
        back[index] = tails[lo - 1] if lo else -1
        if lo == len(tails):
            tails.append(index)
            tail_values.append(j)
        else:
            tails[lo] = index
            tail_values[lo] = j
    run: list[tuple[int, int]] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        run.append(pairs[index])
        index = back[index]
    run.reverse()
    return run


def _matched_pairs(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Pairs (i, j) with a[i] == b[j], increasing in both, for an alignment of ``a`` and ``b``.

    Patience-style: common leading and trailing lines match; then lines that occur exactly once on
    each side anchor the alignment (the longest chain of them in order), and the stretches between
    anchors are aligned the same way; a stretch without such lines goes to difflib.SequenceMatcher.
    Edits to source files are local, so this is close to linear in practice and gives the diffs one
    reads best for code (a blank line or a lone ``)`` does not tie unrelated places together).
    All of it runs within one ``Budget``: DiffTooLarge past it."""
    pairs: list[tuple[int, int]] = []
    budget = Budget(a, b)
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        budget.spend(ahi - alo + bhi - blo)  # nested stretches could otherwise rescan a file many times
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo += 1
            blo += 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        seen_a: dict[str, int] = {}
        for i in range(alo, ahi):
            seen_a[a[i]] = -1 if a[i] in seen_a else i
        seen_b: dict[str, int] = {}
        for j in range(blo, bhi):
            line = b[j]
            if line in seen_a and seen_a[line] >= 0:
                seen_b[line] = -1 if line in seen_b else j
        unique = sorted((seen_a[line], j) for line, j in seen_b.items() if j >= 0)
        anchors = _longest_increasing(unique)
        if anchors:
            previous_i, previous_j = alo - 1, blo - 1
            for i, j in anchors:
                pairs.append((i, j))
                stack.append((previous_i + 1, i, previous_j + 1, j))
                previous_i, previous_j = i, j
            stack.append((previous_i + 1, ahi, previous_j + 1, bhi))
            continue
        exact = (ahi - alo) * (bhi - blo) <= _EXACT_MATCH_LIMIT
        matcher = BudgetedMatcher(a[alo:ahi], b[blo:bhi], autojunk=not exact, budget=budget)
        for i, j, size in matcher.get_matching_blocks():
            pairs.extend((alo + i + k, blo + j + k) for k in range(size))
    pairs.sort()
    return pairs


def _changes(a: Sequence[str], b: Sequence[str]) -> list[_Change]:
    """The change regions from ``a`` to ``b``, in order, each separated by at least one equal line."""
    changes: list[_Change] = []
    previous_i = previous_j = -1
    try:
        matched = _matched_pairs(a, b)
    except DiffTooLarge as exc:
        raise PatchTooLarge(exc.changed, exc.budget) from None
    for i, j in [*matched, (len(a), len(b))]:
        if i > previous_i + 1 or j > previous_j + 1:
            changes.append((previous_i + 1, i, previous_j + 1, j))
        previous_i, previous_j = i, j
    return changes


def _group(changes: Sequence[_Change], context: int) -> list[list[int]]:
    """Indices of ``changes`` gathered into hunks: changes at most ``2 * context`` equal lines apart
    share one (their contexts would touch or overlap)."""
    groups: list[list[int]] = []
    for index, change in enumerate(changes):
        if groups and change[0] - changes[groups[-1][-1]][1] <= 2 * context:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _build_hunk(a: Sequence[str], b: Sequence[str], changes: Sequence[_Change], context: int) -> Hunk:
    first, last = changes[0], changes[-1]
    old_lo = max(0, first[0] - context)
    old_hi = min(len(a), last[1] + context)
    new_lo = first[2] - (first[0] - old_lo)
    new_hi = last[3] + (old_hi - last[1])
    body: list[str] = _body_lines(" ", a[old_lo : first[0]])
    for index, (i1, i2, j1, j2) in enumerate(changes):
        if index:
            body += _body_lines(" ", a[changes[index - 1][1] : i1])
        body += _body_lines("-", a[i1:i2])
        body += _body_lines("+", b[j1:j2])
    body += _body_lines(" ", a[last[1] : old_hi])
    old_len, new_len = old_hi - old_lo, new_hi - new_lo
    return Hunk(
        old_start=old_lo + 1 if old_len else old_lo,
        old_len=old_len,
        new_start=new_lo + 1 if new_len else new_lo,
        new_len=new_len,
        lines=tuple(body),
    )


def _check_context(context: int) -> None:
    if not isinstance(context, int) or isinstance(context, bool) or context < 0:
        raise PatchError(f"context must be a non-negative integer, not {context!r}")


def diff_hunks(old: str, new: str, context: int = 3) -> list[Hunk]:
    """The hunks that turn ``old`` into ``new``, with ``context`` lines of context; [] when equal."""
    _check_context(context)
    a, b = split_lines(old), split_lines(new)
    changes = _changes(a, b)
    return [_build_hunk(a, b, [changes[i] for i in group], context) for group in _group(changes, context)]


def added_line_numbers(old: str, new: str) -> set[int]:
    """The 1-based numbers of the lines of ``new`` that the change ``old`` → ``new`` added (or
    changed): every line of ``new`` that the alignment with ``old`` does not match."""
    a, b = split_lines(old), split_lines(new)
    return {j + 1 for _, _, j1, j2 in _changes(a, b) for j in range(j1, j2)}


# ------------------------------------------------------------------------------------ patch text

_C_ESCAPES = {"\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r", '"': '"', "\\": "\\"}
_C_UNESCAPES = {value: key for key, value in _C_ESCAPES.items()}


def quote_path(path: str) -> str:
    """``path`` as it goes after ``--- `` / ``+++ ``, following git's rules: C-quoted (``"..."`` with
    ``\\t``, ``\\"``, ``\\\\`` and octal escapes of the UTF-8 bytes) when it holds a control character,
    a double quote, a backslash or a non-ASCII character, and also when it starts or ends with a space
    (GNU patch would lose those); a path with inner spaces stays unquoted and is followed by a tab, as
    git writes it, so that both tools read the whole name."""
    if not isinstance(path, str) or not path:
        raise PatchError("a patch needs a non-empty path")
    if "\0" in path:
        raise PatchError(f"a path cannot contain a NUL character: {path!r}")
    needs_quotes = path != path.strip(" ") or any(
        ch in _C_ESCAPES or ord(ch) < 0x20 or ord(ch) >= 0x7F for ch in path
    )
    if not needs_quotes:
        return path + "\t" if " " in path else path
    out = ['"']
    for byte in path.encode("utf-8", "surrogateescape"):
        ch = chr(byte)
        if ch in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[ch])
        elif byte < 0x20 or byte >= 0x7F:
            out.append(f"\\{byte:03o}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _unquote(text: str, lineno: int) -> tuple[str, str]:
    """Parse a C-quoted name at the start of ``text``; return it and what follows the closing quote."""
    raw = bytearray()
    index = 1
    while index < len(text):
        ch = text[index]
        if ch == '"':
            try:
                return raw.decode("utf-8", "surrogateescape"), text[index + 1 :]
            except UnicodeDecodeError:  # pragma: no cover - surrogateescape decodes any bytes
                break
        if ch == "\\":
            index += 1
            if index >= len(text):
                break
            ch = text[index]
            if ch in _C_UNESCAPES:
                raw += _C_UNESCAPES[ch].encode()
            elif ch in "0123" and re.fullmatch(r"[0-7]{3}", text[index : index + 3]):
                raw.append(int(text[index : index + 3], 8))
                index += 2
            else:
                raise PatchError(f"line {lineno}: unknown escape \\{ch} in a quoted path")
        else:
            raw += ch.encode("utf-8", "surrogateescape")
        index += 1
    raise PatchError(f"line {lineno}: a quoted path without its closing quote")


def _parse_path(line: str, lineno: int) -> str:
    rest = line[4:]
    if rest.endswith("\n"):
        rest = rest[:-1]
    if rest.endswith("\r"):  # a patch whose own line endings were turned into CRLF
        rest = rest[:-1]
    if rest.startswith('"'):
        name, after = _unquote(rest, lineno)
        if after and not after.startswith("\t"):
            raise PatchError(f"line {lineno}: unexpected text after the quoted path: {after!r}")
    else:
        name = rest.split("\t", 1)[0]  # a tab ends the name (a timestamp may follow)
    if not name:
        raise PatchError(f"line {lineno}: the header names no file")
    return name


def unquote_path(name: str) -> str:
    """A path as ``quote_path`` wrote it, read back (a tab and what follows it dropped)."""
    return _parse_path("--- " + name, 1)


def format_hunks(path: str, hunks: Sequence[Hunk]) -> str:
    """A ``-p0`` unified diff of ``hunks`` for ``path``; "" for no hunks."""
    if not hunks:
        return ""
    name = quote_path(path)
    return f"--- {name}\n+++ {name}\n" + "".join(hunk.text() for hunk in hunks)


def make_patch(old: str, new: str, path: str, context: int = 3) -> str:
    """A ``-p0`` unified diff turning ``old`` into ``new`` at ``path`` ("" when they are equal), which
    ``git apply -p0`` and GNU ``patch -p0`` apply byte for byte from the directory ``path`` is
    relative to. An empty ``old`` gives ``@@ -0,0 +1,N @@`` (the tools create the file if missing)."""
    quote_path(path)  # refuse a bad path even when there is nothing to diff
    return format_hunks(path, diff_hunks(old, new, context))


_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?:[ \t].*)?\r?\n?")


def _show(line: str) -> str:
    shown = repr(line.rstrip("\n"))
    return shown if len(shown) <= 60 else shown[:57] + "..."


def parse_patch(text: str) -> list[FilePatch]:
    """Read a unified diff of one or more files (``--- path`` / ``+++ path`` then ``@@`` hunks), strictly:
    anything else, counts that disagree with the body, hunks out of order, a truncated patch or a
    rename raise PatchError naming the line. ``/dev/null`` on one side marks a creation or deletion.
    A bare empty line inside a hunk is read as an empty context line (editors strip the space)."""
    if not isinstance(text, str):
        raise PatchError(f"a patch is text, not {type(text).__name__}")
    lines = split_lines(text)
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            raise PatchError(f"line {i + 1}: expected '--- <path>' to start a file, got {_show(lines[i])}")
        old_name = _parse_path(lines[i], i + 1)
        i += 1
        if i >= len(lines) or not lines[i].startswith("+++ "):
            got = _show(lines[i]) if i < len(lines) else "the end of the patch"
            raise PatchError(f"line {i + 1}: expected '+++ <path>' after '---', got {got}")
        new_name = _parse_path(lines[i], i + 1)
        if old_name == DEV_NULL and new_name == DEV_NULL:
            raise PatchError(f"line {i + 1}: both sides are /dev/null")
        if DEV_NULL not in (old_name, new_name) and old_name != new_name:
            raise PatchError(f"line {i + 1}: '---' and '+++' name different files ({old_name!r}, {new_name!r})")
        path = old_name if new_name == DEV_NULL else new_name
        i += 1
        hunks: list[Hunk] = []
        while i < len(lines) and lines[i].startswith("@@"):
            header_no = i + 1
            number = len(hunks) + 1
            match = _HUNK_HEADER.fullmatch(lines[i])
            if not match:
                raise PatchError(f"line {header_no}: malformed hunk header {_show(lines[i])}")
            old_start, old_len = int(match[1]), int(match[2]) if match[2] is not None else 1
            new_start, new_len = int(match[3]), int(match[4]) if match[4] is not None else 1
            i += 1
            body: list[str] = []
            due_old, due_new = old_len, new_len
            while due_old or due_new or (i < len(lines) and lines[i].startswith("\\")):
                if i >= len(lines):
                    raise PatchError(
                        f"line {i + 1}: the patch ends inside hunk {number} of {path!r} "
                        f"({due_old} old and {due_new} new lines missing; truncated?)"
                    )
                line = lines[i]
                tag = line[0]
                if tag == "\\":
                    line = NO_NEWLINE_MARKER
                elif not line.endswith("\n"):
                    raise PatchError(f"line {i + 1}: the patch's last line has no newline (truncated?)")
                elif line in ("\n", "\r\n"):
                    line, tag = " " + line, " "
                if tag == " " and due_old and due_new:
                    due_old -= 1
                    due_new -= 1
                elif tag == "-" and due_old:
                    due_old -= 1
                elif tag == "+" and due_new:
                    due_new -= 1
                elif tag != "\\":
                    what = {" ": "context", "-": "removed", "+": "added"}.get(tag)
                    why = f"more {what} lines than its header counts" if what else f"unexpected line {_show(line)}"
                    raise PatchError(
                        f"line {i + 1}: hunk {number} of {path!r} has {why} "
                        f"({due_old} old and {due_new} new lines were still due)"
                    )
                body.append(line)
                i += 1
            try:
                hunk = Hunk(old_start, old_len, new_start, new_len, tuple(body))
            except PatchError as exc:
                raise PatchError(f"line {header_no}: hunk {number} of {path!r}: {exc}") from None
            if hunks:
                previous = hunks[-1]
                if _span(old_start, old_len) < _span(previous.old_start, previous.old_len) + previous.old_len:
                    raise PatchError(f"line {header_no}: hunk {number} of {path!r} overlaps or precedes hunk {number - 1}")
            if old_name == DEV_NULL and old_len:
                raise PatchError(f"line {header_no}: a file created from /dev/null cannot have old lines")
            if new_name == DEV_NULL and new_len:
                raise PatchError(f"line {header_no}: a file deleted to /dev/null cannot have new lines")
            hunks.append(hunk)
        if not hunks:
            got = _show(lines[i]) if i < len(lines) else "the end of the patch"
            raise PatchError(f"line {i + 1}: expected an '@@' hunk for {path!r}, got {got}")
        files.append(FilePatch(path, tuple(hunks), created=old_name == DEV_NULL, deleted=new_name == DEV_NULL))
    return files


# ------------------------------------------------------------------------------------ applying


# Work (lines compared) one apply_hunks call may spend searching for where its hunks apply, beyond
# PER_LINE_SEARCH per line of the file: a search past it is a PatchError, never a hang.
SEARCH_BUDGET = 5_000_000
PER_LINE_SEARCH = 20


class _Search:
    """Where each line of a file is, so that a hunk's offset search visits only the positions where
    its rarest line is (not every line of the file), and the work those visits may take."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.positions: dict[str, list[int]] = {}
        for index, line in enumerate(lines):
            self.positions.setdefault(line, []).append(index)
        self.left = SEARCH_BUDGET + PER_LINE_SEARCH * len(lines)

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise PatchError(f"the search for where the hunks apply went past its budget ({SEARCH_BUDGET} lines "
                             f"compared, plus {PER_LINE_SEARCH} per line of the file): the patch does not fit "
                             "this file")


def _find(search: _Search, wanted: Sequence[str], expected: int, lowest: int) -> int | None:
    """The position nearest ``expected`` (not before ``lowest``) where ``wanted`` occurs exactly;
    between two as near, the later one."""
    lines = search.lines
    highest = len(lines) - len(wanted)
    if highest < lowest:
        return None
    if not wanted:
        return expected if lowest <= expected <= highest else None
    expected = min(max(expected, lowest), highest)
    size = len(wanted)
    search.spend(size)
    if lines[expected : expected + size] == wanted:
        return expected
    # Only the places holding the hunk's rarest line can hold the hunk.
    rarest = min(range(size), key=lambda k: len(search.positions.get(wanted[k], ())))
    places = search.positions.get(wanted[rarest], [])
    search.spend(size)
    up = bisect.bisect_left(places, expected + rarest)
    down = up - 1
    while True:
        at_up = places[up] - rarest if up < len(places) else highest + 1
        at_down = places[down] - rarest if down >= 0 else lowest - 1
        if at_up > highest and at_down < lowest:
            return None
        if at_up <= highest and (at_down < lowest or at_up - expected <= expected - at_down):
            at, up = at_up, up + 1
        else:
            at, down = at_down, down - 1
        search.spend(size)
        if lines[at : at + size] == wanted:
            return at


def _mismatch(lines: Sequence[str], wanted: Sequence[str], at: int) -> str:
    for offset, line in enumerate(wanted):
        if at + offset >= len(lines):
            return f"the file ends at line {len(lines)}, the hunk expects {_show(line)} at line {at + offset + 1}"
        if lines[at + offset] != line:
            return f"line {at + offset + 1} is {_show(lines[at + offset])}, the hunk expects {_show(line)}"
    return "its lines are not there"  # pragma: no cover - only called after a failed match


def apply_hunks(base: str, hunks: Sequence[Hunk], allow_offset: bool = True) -> str:
    """``base`` with ``hunks`` (in file order) applied exactly: each hunk's context and removed lines must
    match the file line for line, at the stated position or (``allow_offset``) the nearest other
    position after the previous hunk. PatchError names the hunk (1-based) and why."""
    lines = split_lines(base)
    search = _Search(lines) if allow_offset and hunks else None
    out: list[str] = []
    done = 0  # lines of base consumed
    shift = 0  # where the previous hunk actually applied, relative to where it said
    previous_span = -1
    for number, hunk in enumerate(hunks, 1):
        old, new = hunk.old_lines(), hunk.new_lines()
        stated = _span(hunk.old_start, hunk.old_len)
        if stated < previous_span:
            raise PatchError(f"hunk {number} ({hunk.header}) comes before the end of hunk {number - 1}; hunks must be in file order")
        previous_span = stated + hunk.old_len
        if search is not None:
            at = _find(search, old, stated + shift, done)
        else:
            at = stated if stated >= done and lines[stated : stated + len(old)] == old else None
            if not old and stated > len(lines):
                at = None
        if at is None:
            if not old:
                why = f"it inserts after line {stated}, the file has {len(lines)} lines"
            else:
                where = min(max(stated + shift, done), max(len(lines) - 1, 0))
                why = _mismatch(lines, old, where) + (" (and no offset matches)" if allow_offset else "")
            raise PatchError(f"hunk {number} ({hunk.header}) does not apply: {why}")
        end = at + len(old)
        if new and not new[-1].endswith("\n") and end < len(lines):
            raise PatchError(
                f"hunk {number} ({hunk.header}) does not apply: it ends the file without a newline, "
                f"but {len(lines) - end} more lines follow"
            )
        if new and at == len(lines) and lines and not lines[-1].endswith("\n"):
            raise PatchError(
                f"hunk {number} ({hunk.header}) does not apply: it adds lines after the last line, "
                "which has no newline"
            )
        out.extend(lines[done:at])
        out.extend(new)
        done = end
        shift = at - stated
    out.extend(lines[done:])
    return "".join(out)


def reverse_hunks(hunks: Sequence[Hunk]) -> list[Hunk]:
    """The hunks that undo ``hunks``: sides swapped, removed lines listed before added ones again."""
    flip = {"-": "+", "+": "-", " ": " "}
    reversed_hunks: list[Hunk] = []
    for hunk in hunks:
        units: list[list[str]] = []  # a body line with its marker, if it has one
        for line in hunk.lines:
            if line[0] == "\\":
                units[-1].append(line)
            else:
                units.append([flip[line[0]] + line[1:]])
        body: list[str] = []
        removed: list[str] = []
        added: list[str] = []
        for unit in units:
            tag = unit[0][0]
            if tag == " ":
                body += removed + added + unit
                removed, added = [], []
            elif tag == "-":
                removed += unit
            else:
                added += unit
        body += removed + added
        reversed_hunks.append(Hunk(hunk.new_start, hunk.new_len, hunk.old_start, hunk.old_len, tuple(body)))
    return reversed_hunks


# ------------------------------------------------------------------------------------ merging


@dataclass(frozen=True)
class Conflict:
    hunk: int  # 1-based index of the base→ours hunk (diff_hunks(base, ours, context)) that conflicts
    base_start: int  # that hunk's first line in base
    reason: str  # one line, e.g. "the new version changed lines 120-131 that this hunk also changes"
    ours: tuple[str, ...]  # the conflicting region as this hunk's side has it
    theirs: tuple[str, ...]  # the same region as the new version has it
    base: tuple[str, ...] = ()  # the same region in base
    region_start: int = 0  # 1-based first base line of the region (for an empty region: the line before)


@dataclass(frozen=True)
class MergeResult:
    text: str | None  # the merged text; None when there is any conflict (apply nothing to such a file)
    conflicts: tuple[Conflict, ...]
    applied: int  # hunks carried over (0 when text is None)
    already: int = 0  # hunks whose every change the new version already has
    hunks: int = 0  # hunks base→ours in all


def _version(base: Sequence[str], lo: int, hi: int, changes: Sequence[_Change], side: Sequence[str]) -> list[str]:
    """base[lo:hi] with ``changes`` (all inside it) made as ``side`` made them."""
    out: list[str] = []
    at = lo
    for b0, b1, s0, s1 in changes:
        out.extend(base[at:b0])
        out.extend(side[s0:s1])
        at = b1
    out.extend(base[at:hi])
    return out


def _overlaps(a: _Change, b: _Change) -> bool:
    a0, a1, b0, b1 = a[0], a[1], b[0], b[1]
    if a0 == a1 and b0 == b1:
        return a0 == b0
    if a0 == a1:
        return b0 < a0 < b1
    if b0 == b1:
        return a0 < b0 < a1
    return max(a0, b0) < min(a1, b1)


def _lines_phrase(lo: int, hi: int) -> str:
    return f"line {lo + 1}" if hi - lo == 1 else f"lines {lo + 1}-{hi}"


def _reason(ours: Sequence[_Change], theirs: Sequence[_Change]) -> str:
    lo, hi = min(c[0] for c in theirs), max(c[1] for c in theirs)
    t_lo, t_hi = min(c[2] for c in theirs), max(c[3] for c in theirs)
    overlap = any(_overlaps(o, t) for o in ours for t in theirs)
    if hi == lo:
        where = f"after line {lo}" if lo else "at the start of the file"
        what = f"the new version inserted lines {where}"
        tail = "where this hunk also makes changes" if overlap else "next to lines this hunk changes"
        return f"{what} (now {_lines_phrase(t_lo, t_hi)}), {tail}"
    tail = "that this hunk also changes" if overlap else "right next to lines this hunk changes"
    if t_hi == t_lo:
        return f"the new version removed {_lines_phrase(lo, hi)} {tail}"
    return f"the new version changed {_lines_phrase(lo, hi)} (now {_lines_phrase(t_lo, t_hi)}) {tail}"


_Cluster = tuple[int, int, list[int], list[int]]  # base lo, hi, indices of ours' changes, of theirs'


def _clusters(ours_changes: Sequence[_Change], theirs_changes: Sequence[_Change]) -> list[_Cluster]:
    """Maximal runs of changes (either side) whose base regions overlap or touch, in base order."""
    events = sorted(
        [(c[0], c[1], 0, i) for i, c in enumerate(ours_changes)] + [(c[0], c[1], 1, i) for i, c in enumerate(theirs_changes)]
    )
    clusters: list[_Cluster] = []
    for b0, b1, side, index in events:
        if clusters and b0 <= clusters[-1][1]:
            lo, hi, mine, yours = clusters[-1]
            clusters[-1] = (lo, max(hi, b1), mine, yours)
        else:
            clusters.append((b0, b1, [], []))
        (clusters[-1][2] if side == 0 else clusters[-1][3]).append(index)
    for _, _, mine, yours in clusters:
        mine.sort()
        yours.sort()
    return clusters


class _Side(enum.Enum):
    OURS = "ours"  # only ours changed the region: ours' lines
    THEIRS = "theirs"  # only theirs changed it, or both made the same lines: theirs' lines
    CONFLICT = "conflict"  # both changed it differently


@dataclass(frozen=True)
class _Region:
    before: list[str]  # the unchanged base lines since the previous region (all of them, after the last)
    lo: int
    hi: int
    mine: list[int]  # indices into the ours changes
    yours: list[int]  # indices into the theirs changes
    ours: list[str]  # the region as ours has it
    theirs: list[str]  # the region as theirs has it
    side: _Side


def _regions(b: Sequence[str], o: Sequence[str], t: Sequence[str], ours_changes: Sequence[_Change],
             theirs_changes: Sequence[_Change]) -> Iterator[_Region]:
    """merge3's walk of base: each cluster of changes with what both sides made of it and whose
    lines the merge takes; a last region with no changes carries the base lines after the last
    cluster (``side`` THEIRS, both versions empty)."""
    at = 0
    for lo, hi, mine, yours in _clusters(ours_changes, theirs_changes):
        ours_version = _version(b, lo, hi, [ours_changes[i] for i in mine], o)
        theirs_version = _version(b, lo, hi, [theirs_changes[i] for i in yours], t)
        side = _Side.OURS if not yours else _Side.THEIRS if not mine or ours_version == theirs_version \
            else _Side.CONFLICT
        yield _Region(list(b[at:lo]), lo, hi, mine, yours, ours_version, theirs_version, side)
        at = hi
    yield _Region(list(b[at:]), len(b), len(b), [], [], [], [], _Side.THEIRS)


def _marker_lines(lines: Sequence[str]) -> list[str]:
    """``lines`` inside a conflict block: a last line without newline gets one, so the marker after it
    starts a line of its own."""
    out = list(lines)
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return out


@dataclass(frozen=True)
class MarkedMerge:
    text: str  # the merge, each conflicting region between diff3-style markers
    conflicts: int  # conflict blocks in ``text``


@dataclass(frozen=True)
class Block:
    """One region both sides changed differently: its lines as each side has them."""

    ours: tuple[str, ...]
    base: tuple[str, ...]
    theirs: tuple[str, ...]


MergePart = str | Block  # a merged line, or a region left to choose


def merge3_parts(base: str, ours: str, theirs: str) -> list[MergePart]:
    """``merge3``'s merge as lines, each region it would call a conflict kept as a ``Block``. The
    regions are merge3's clusters (changes of both sides that overlap or touch, unless both made
    the same lines); everything else is merged as merge3 merges it."""
    b, o, t = split_lines(base), split_lines(ours), split_lines(theirs)
    out: list[MergePart] = []
    for region in _regions(b, o, t, _changes(b, o), _changes(b, t)):
        out.extend(region.before)
        if region.side is _Side.CONFLICT:
            out.append(Block(tuple(region.ours), tuple(b[region.lo:region.hi]), tuple(region.theirs)))
        else:
            out.extend(region.ours if region.side is _Side.OURS else region.theirs)
    return out


def blocks(parts: Sequence[MergePart]) -> list[Block]:
    return [part for part in parts if isinstance(part, Block)]


def resolve(parts: Sequence[MergePart], take_ours: Callable[[int], bool]) -> str:
    """The merged text with block ``i`` (0-based) as ours has it when ``take_ours(i)``, else as theirs."""
    out: list[str] = []
    number = 0
    for part in parts:
        if isinstance(part, Block):
            out.extend(part.ours if take_ours(number) else part.theirs)
            number += 1
        else:
            out.append(part)
    return "".join(out)


def merge3_marked(base: str, ours: str, theirs: str, labels: tuple[str, str, str],
                  settled: Collection[int] = ()) -> MarkedMerge:
    """``merge3``'s merge, with every region it would call a conflict written as ``git merge-file
    --diff3`` writes it instead of giving up::

        <<<<<<< labels[0]      (ours: base with the changes carried)
        ||||||| labels[1]      (base)
        =======
        >>>>>>> labels[2]      (theirs: the newer version)

    Blocks (0-based, in order) named in ``settled`` are written as theirs has them, without markers.
    ``conflicts == 0`` gives merge3's text exactly. A region's last line without newline gets one
    inside the block (the markers need lines of their own)."""
    for label in labels:
        if not isinstance(label, str) or "\n" in label or "\r" in label:
            raise PatchError(f"a conflict marker's label must be one line, not {label!r}")
    out: list[str] = []
    number = written = 0
    for part in merge3_parts(base, ours, theirs):
        if not isinstance(part, Block):
            out.append(part)
            continue
        number += 1
        if number - 1 in settled:
            out.extend(part.theirs)
            continue
        written += 1
        if out and not out[-1].endswith("\n"):  # pragma: no cover - only a file's last line lacks one
            out[-1] += "\n"
        out.append(f"<<<<<<< {labels[0]}\n")
        out.extend(_marker_lines(part.ours))
        out.append(f"||||||| {labels[1]}\n")
        out.extend(_marker_lines(part.base))
        out.append("=======\n")
        out.extend(_marker_lines(part.theirs))
        out.append(f">>>>>>> {labels[2]}\n")
    return MarkedMerge("".join(out), written)


CONFLICT_MARKERS = ("<<<<<<< ", "||||||| ", "=======", ">>>>>>> ")


def marker_line(text: str) -> int | None:
    """The 1-based number of the first line of ``text`` that is a conflict marker ``merge3_marked``
    writes (``=======`` alone on its line, the others followed by a space), else None."""
    for number, line in enumerate(split_lines(text), 1):
        bare = line.rstrip("\n").rstrip("\r")
        if bare == "=======" or bare.startswith(("<<<<<<< ", "||||||| ", ">>>>>>> ")):
            return number
    return None


def merge3(base: str, ours: str, theirs: str, context: int = 3) -> MergeResult:
    """Carry the changes base→ours onto theirs (a newer version of base).

    Both sides are diffed against base into exact change regions. A base→ours change whose base
    region overlaps or touches (no unchanged base line between) a base→theirs change conflicts,
    unless both sides turned that stretch of base into the same lines (then the change is already
    there: neither a conflict nor applied twice). Conflicts are reported per hunk of
    ``diff_hunks(base, ours, context)``; with any conflict ``text`` is None. ``theirs == base`` gives
    ``ours`` exactly, ``ours == base`` gives ``theirs``."""
    _check_context(context)
    b, o, t = split_lines(base), split_lines(ours), split_lines(theirs)
    ours_changes = _changes(b, o)
    groups = _group(ours_changes, context)
    hunk_of: dict[int, int] = {}
    for number, group in enumerate(groups, 1):
        for index in group:
            hunk_of[index] = number
    if not ours_changes:
        return MergeResult(theirs, (), 0, 0, 0)
    hunks = [_build_hunk(b, o, [ours_changes[i] for i in group], context) for group in groups]
    if base == theirs:
        return MergeResult(ours, (), len(groups), 0, len(groups))
    theirs_changes = _changes(b, t)

    out: list[str] = []
    applied: set[int] = set()
    present: set[int] = set()
    conflicting: dict[int, list[tuple[int, int, list[int], list[int]]]] = {}
    for region in _regions(b, o, t, ours_changes, theirs_changes):
        out.extend(region.before)
        if region.side is _Side.OURS:
            out.extend(region.ours)
            applied.update(hunk_of[i] for i in region.mine)
        elif region.side is _Side.THEIRS:
            out.extend(region.theirs)
            present.update(hunk_of[i] for i in region.mine)
        else:
            out.extend(region.theirs)
            for number in sorted({hunk_of[i] for i in region.mine}):
                conflicting.setdefault(number, []).append((region.lo, region.hi, region.mine, region.yours))

    conflicts: list[Conflict] = []
    for number, hunk_clusters in sorted(conflicting.items()):
        lo = min(c[0] for c in hunk_clusters)
        hi = max(c[1] for c in hunk_clusters)
        mine_all = sorted(i for c in hunk_clusters for i in c[2])
        yours_all = sorted(i for c in hunk_clusters for i in c[3])
        inside_ours = [c for c in ours_changes if lo <= c[0] and c[1] <= hi]
        inside_theirs = [c for c in theirs_changes if lo <= c[0] and c[1] <= hi]
        conflicts.append(
            Conflict(
                hunk=number,
                base_start=hunks[number - 1].old_start,
                reason=_reason(
                    [ours_changes[i] for i in mine_all if hunk_of[i] == number], [theirs_changes[i] for i in yours_all]
                ),
                ours=tuple(_version(b, lo, hi, inside_ours, o)),
                theirs=tuple(_version(b, lo, hi, inside_theirs, t)),
                base=tuple(b[lo:hi]),
                region_start=lo + 1 if hi > lo else lo,
            )
        )
    if conflicts:
        return MergeResult(None, tuple(conflicts), 0, 0, len(groups))
    if any(not line.endswith("\n") for line in out[:-1]):  # pragma: no cover - guarded by the diff's structure
        raise PatchError("internal error: the merge put a line without newline before the end of the file")
    return MergeResult("".join(out), (), len(applied), len(present - applied), len(groups))


def without_hunks(base: str, ours: str, drop: Callable[[Hunk], bool], context: int = 3) -> str:
    """``ours`` with the base→ours hunks (``diff_hunks(base, ours, context)``) for which ``drop`` is true
    reverted to base and the others kept. Changes less than ``2 * context + 1`` lines apart share a
    hunk; pass ``context=0`` to judge every change region on its own."""
    hunks = diff_hunks(base, ours, context)
    keep = [hunk for hunk in hunks if not drop(hunk)]
    if len(keep) == len(hunks):
        return ours
    return apply_hunks(base, keep, allow_offset=False)

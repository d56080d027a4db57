"""Byte-level prefilter: cheap *necessary* conditions for a rule to report anything.

Parsing with libcst is by far the most expensive step of a scan, and almost every file of a
pristine package contains no debug code at all. Each rule therefore declares a ``TRIGGER``:
a test on the raw bytes that must hold for the rule to be able to report a finding. A file
for which no selected rule's trigger holds is never parsed.

A trigger must be *sound*: if the rule could report something on a file, the trigger has to
match that file. It may match far more (comments, docstrings, unrelated names) — that only
costs time. ``driftscan.inspect.testing`` checks every INVALID example against its rule's
trigger, and a test compares prefiltered and unfiltered scans of a corpus.

A rule whose ``TRIGGER`` is ``None`` must see every file, which turns the prefilter off.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Protocol


class Memo(dict):
    """Per-file cache so triggers shared between rules are evaluated once per file."""


class BaseTrigger(Protocol):
    label: str

    def matches(self, data: bytes, memo: Memo | None = None) -> bool: ...

    def describe(self) -> str: ...


class Trigger:
    """Matches when the bytes contain one of ``needles`` *and* ``pattern`` is found.

    ``needles`` are plain substrings searched with ``bytes.__contains__`` (fast C search);
    they let the slower regular expression run only on the few files that can match it.
    With ``ignore_case`` both are matched against the lowercased bytes, so both must be
    written in lowercase.
    """

    def __init__(
        self, pattern: bytes, needles: tuple[bytes, ...] = (), *, ignore_case: bool = False, label: str = ""
    ):
        self.pattern = pattern
        self.needles = tuple(needles)
        self.ignore_case = ignore_case
        self.label = label
        if ignore_case and (pattern != pattern.lower() or any(n != n.lower() for n in self.needles)):
            raise ValueError("a case-insensitive trigger is written in lowercase")
        self._regex = re.compile(pattern)

    def matches(self, data: bytes, memo: Memo | None = None) -> bool:
        if memo is not None:
            key = id(self)
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = self._matches(data, memo)
            return hit
        return self._matches(data, None)

    def _matches(self, data: bytes, memo: Memo | None) -> bool:
        hay = data
        if self.ignore_case:
            # Lowercasing bytes maps only A-Z, so a lowercase pattern over the lowered bytes
            # is exactly a case-insensitive match, and much faster than re.IGNORECASE.
            lowered = memo.get("lower") if memo is not None else None
            if lowered is None:
                lowered = data.lower()
                if memo is not None:
                    memo["lower"] = lowered
            hay = lowered
        if self.needles and not any(_contains(hay, n, memo, self.ignore_case) for n in self.needles):
            return False
        return self._regex.search(hay) is not None

    def describe(self) -> str:
        return self.label or self.regex_text()

    def regex_text(self) -> str:
        flag = "(?i)" if self.ignore_case else ""
        return flag + self.pattern.decode("ascii", "backslashreplace")


def _contains(hay: bytes, needle: bytes, memo: Memo | None, lowered: bool) -> bool:
    if memo is None:
        return needle in hay
    key = (needle, lowered)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = needle in hay
    return hit


class AnyOf:
    def __init__(self, *triggers: BaseTrigger, label: str = ""):
        self.triggers = triggers
        self.label = label

    def matches(self, data: bytes, memo: Memo | None = None) -> bool:
        return any(t.matches(data, memo) for t in self.triggers)

    def describe(self) -> str:
        return self.label or " or ".join(_wrap(t) for t in self.triggers)


class AllOf:
    def __init__(self, *triggers: BaseTrigger, label: str = ""):
        self.triggers = triggers
        self.label = label

    def matches(self, data: bytes, memo: Memo | None = None) -> bool:
        return all(t.matches(data, memo) for t in self.triggers)

    def describe(self) -> str:
        return self.label or " and ".join(_wrap(t) for t in self.triggers)


def _wrap(trigger: BaseTrigger) -> str:
    text = trigger.describe()
    if getattr(trigger, "label", ""):
        return f"*{text}*"
    return f"({text})" if isinstance(trigger, (AnyOf, AllOf)) else _code(trigger, text)


def _code(trigger: BaseTrigger, text: str) -> str:
    return f"`{text}`" if isinstance(trigger, Trigger) else text


def describe_trigger(trigger: BaseTrigger) -> str:
    """Markdown for a trigger: named triggers in italics, bare regexes in backticks."""
    if isinstance(trigger, (AnyOf, AllOf)) and not trigger.label:
        return trigger.describe()
    return _wrap(trigger)


def named_triggers(trigger: BaseTrigger) -> list[BaseTrigger]:
    """The labelled triggers ``trigger`` is built from (itself included), outermost first."""
    out = [trigger] if getattr(trigger, "label", "") else []
    for child in getattr(trigger, "triggers", ()):
        out += [t for t in named_triggers(child) if t not in out]
    return out


# --- Triggers shared by the built-in rules -------------------------------------------------
# `[\s\\]*` allows whitespace, newlines inside brackets and backslash continuations between
# tokens, which is everything Python allows there. Patterns start with a literal where they
# can: the regex engine then skips ahead with a fast search instead of trying every byte.

_DUMP_NAMES = rb"(?:save|savez|savez_compressed|savetxt|save_file|dump|tofile)"

#: A serialisation call ``<anything>.save(``, ``.dump(``, ``.tofile(``... (the rules ignore a
#: dot followed by whitespace, so ``.save`` is always literally there) or a from-import of
#: such a name (``from torch import save``), the only way to call it bare.
DUMP = AnyOf(
    Trigger(rb"\." + _DUMP_NAMES + rb"[\s\\]*\(", (b".save", b".dump", b".tofile")),
    Trigger(
        rb"import[ \t]*\([^)]*?\b" + _DUMP_NAMES + rb"\b|import[ \t](?:[^\n\\]|\\\n)*?\b" + _DUMP_NAMES + rb"\b",
        (b"save", b"dump", b"tofile"),
    ),
    label="serialisation call",
)

#: A path literal in a temporary directory (the raw text of a string token).
TMP = Trigger(rb"/(?:tmp|var/tmp|dev/shm)", (b"/tmp", b"/dev/shm"), label="temporary path")

#: Debugger entry points and modules.
DEBUGGER = Trigger(
    rb"(?:breakpoint|set_trace|post_mortem|pdb|pudb|debugpy|pydevd|IPython|interact)\b",
    (b"breakpoint", b"set_trace", b"post_mortem", b"pdb", b"pudb", b"debugpy", b"pydevd",
     b"IPython", b"interact"),
    label="debugger name",
)

#: Debugger modules (for imports only).
DEBUGGER_MODULES = Trigger(
    rb"(?:pdb|pudb|debugpy|pydevd\w*|wdb)\b", (b"pdb", b"pudb", b"debugpy", b"pydevd", b"wdb"), label="debugger module"
)

#: A ``print(...)`` statement: at the start of a line or after ``:``/``;`` (the print rules
#: only look at calls that are statements, so ``>>> print(x)`` in a docstring does not count).
#: The start of the file is a separate, anchored pattern: ``(?m)^`` would be tried at every
#: byte, a leading newline character lets the regex engine skip ahead.
PRINT = AnyOf(
    Trigger(rb"[\n\r:;][ \t\f]*print[\s\\]*\(", (b"print",)),
    Trigger(rb"\A(?:\xef\xbb\xbf)?[ \t\f]*print[\s\\]*\(", (b"print",)),
    label="print statement",
)

#: A condition on a tensor shape.
SHAPE = Trigger(rb"\.[\s\\]*(?:shape|ndim)\b|\.[\s\\]*(?:size|numel|dim)[\s\\]*\(",
                (b"shape", b"ndim", b"size", b"numel", b"dim"), label="shape access")

#: An increment of a name that marks debugging (see analysis.MARKER_WORDS): ``+=``, or
#: ``=`` followed by a ``+`` on the same logical line or inside a parenthesised right-hand
#: side (the rule's ``x = (x + 1)`` has no other parentheses; the lazy getattr form is
#: covered by LAZY_COUNTER).
MARKER_ASSIGN = Trigger(
    rb"(?:debug|dbg|dump)\w*\)?[\s\\]*(?:\+=|=(?!=)(?:[^\n]|\\\n)*\+|=[\s\\]*\([^()]*\+)",
    (b"debug", b"dbg", b"dump"),
    ignore_case=True,
    label="debug-named increment",
)

#: ``+= <int>``, ``+ <int>`` or ``<int> +``: an increment by a constant.
INCREMENT = AnyOf(
    # An integer literal starts with a digit and ends with a word character (``0xff``).
    Trigger(rb"\+(?:=|[\s\\]*\d)", (b"+",)), Trigger(rb"\w[\s\\]*\+", (b"+",)), label="increment"
)

#: A marker-named flag set to True: ``X._dumped = True`` or ``setattr(x, "_dumped", True)``.
MARKER_TRUE = Trigger(rb"(?:debug|dbg|dump)\w*(?:\)?[\s\\]*=|['\"][\s\\]*,)[\s\\]*true\b",
                      (b"debug", b"dbg", b"dump"), ignore_case=True, label="debug-named flag set")

#: ``getattr(obj, "name", 0) + 1`` (or ``1 + getattr(...)``): a counter created lazily.
LAZY_COUNTER = AnyOf(
    Trigger(rb"getattr[\s\\]*\([^()]*\)(?:[\s\\]|#[^\n]*)*\+", (b"getattr",)),
    Trigger(rb"\w[\s\\]*\+[\s\\]*getattr[\s\\]*\(", (b"getattr",)),  # 1 + getattr(...)
    label="lazy getattr counter",
)

#: Anything a debug action can be: what guards and counters feed.
DEBUG_ACTION = AnyOf(DUMP, TMP, DEBUGGER, label="debug action")

#: Statements only Python 2 has: ``print "x"``, ``print >>f``, ``exec "code"``,
#: ``except E, e:``, ``raise E, "msg"`` (at the start of a line).
_PY2 = (
    rb"[ \t]*(?:print[ \t]+[\"'\w]|print[ \t]*>>|exec[ \t]+[\"']"
    rb"|except[ \t]+[\w.]+[ \t]*,[ \t]*\w+[ \t]*:|raise[ \t]+[\w.]+[ \t]*,)"
)
PYTHON2 = AnyOf(
    Trigger(rb"\n" + _PY2),  # a literal first byte: the regex engine skips ahead with memchr
    Trigger(rb"\r" + _PY2, (b"\r",)),  # old Mac line ends
    Trigger(rb"\A(?:\xef\xbb\xbf)?" + _PY2),
    label="Python 2 statement",
)

#: A NUL byte: a binary file, or one damaged on disk.
NUL = Trigger(rb"\x00", (b"\x00",), label="NUL byte")


class Undecodable:
    """Matches bytes that are not valid in their declared encoding (PEP 263, UTF-8 default)."""

    label = "undecodable bytes"

    def matches(self, data: bytes, memo: Memo | None = None) -> bool:
        if memo is not None and "undecodable" in memo:
            return memo["undecodable"]
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            data.decode(encoding)
            bad = False
        except (SyntaxError, LookupError, UnicodeDecodeError):
            bad = True
        if memo is not None:
            memo["undecodable"] = bad
        return bad

    def describe(self) -> str:
        return self.label

"""Byte-level prefilter: cheap *necessary* conditions for a rule to report anything.

Parsing with libcst is by far the most expensive step of a scan, and almost every file of a
pristine package contains no debug code at all. Each rule therefore declares a ``TRIGGER``:
a test on the raw bytes that must hold for the rule to be able to report a finding. A file
for which no selected rule's trigger holds is never parsed.

A trigger must be *sound*: if the rule could report something on a file, the trigger has to
match that file. It may match far more (comments, docstrings, unrelated names) — that only
costs time. ``driftscan.lint.testing`` checks every INVALID example against its rule's
trigger, and a test compares prefiltered and unfiltered scans of a corpus.

A rule whose ``TRIGGER`` is ``None`` must see every file, which turns the prefilter off.
"""

from __future__ import annotations

import gc
import io
import ast
import re
import tokenize
import warnings
from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

from .complexity import measure


class Memo(dict[str | int | tuple[bytes, bool], Any]):
    """Per-file cache so triggers shared between rules are evaluated once per file: by name, by a
    trigger's id, or by (word, lowered) for a word searched for; values of as many kinds as names."""


#: Memo key: while set, a trigger that needs CPython's syntax tree answers yes without building
#: it (the engine asks only whether a file is to be deferred, and defers it if so).
OPTIMISTIC = "optimistic"


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
        self, pattern: bytes, needles: tuple[bytes, ...] = (), *, ignore_case: bool = False, label: str = "",
        search: Callable[[bytes, Memo | None], bool] | None = None,
    ):
        self.pattern = pattern
        # The same answer as ``pattern`` by a faster way (``words_then``, ``preceded``): a regex
        # that starts with an alternation or a character class is tried at every byte.
        self.search = search
        self.needles = tuple(needles)
        self.ignore_case = ignore_case
        self.label = label
        if ignore_case and (pattern != pattern.lower() or any(n != n.lower() for n in self.needles)):
            raise ValueError("a case-insensitive trigger is written in lowercase")
        self._regex = re.compile(pattern)

    def matches(self, data: bytes, memo: Memo | None = None) -> bool:
        if memo is not None:
            key = id(self)
            hit: bool | None = memo.get(key)
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
        if self.search is not None:
            return self.search(hay, memo)
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
        # Not in the lowercased bytes: not in the bytes either (no search needed).
        hit = memo[key] = False if not lowered and memo.get((needle.lower(), True)) is False else needle in hay
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


def words_then(words: tuple[bytes, ...], rest: bytes, *, lowered: bool = False) -> Callable[[bytes, Memo | None], bool]:
    """A search equal to ``(?:w1|w2|...)rest``: ``w + rest`` for each word the bytes contain,
    each one starting with a literal (found by a fast search, not tried at every byte)."""
    regexes = [(w, re.compile(re.escape(w) + rest)) for w in words]

    def search(hay: bytes, memo: Memo | None) -> bool:
        return any(_contains(hay, w, memo, lowered) and regex.search(hay) is not None for w, regex in regexes)

    return search


def preceded(before: bytes, skip: bytes, *after: bytes) -> Callable[[bytes, Memo | None], bool]:
    """A search equal to ``[before][skip]*(?:after1|after2...)`` where ``before`` and ``skip``
    are disjoint byte classes: each match of an ``after`` (each starts with a literal, found by
    a fast search) is checked backwards — past the ``skip`` bytes, the nearest other byte must
    be one of ``before``. Overlapping matches are all tried."""
    regexes = [(re.compile(a), re.split(rb"\W", a, maxsplit=1)[0]) for a in after]  # its leading word
    before_set = frozenset(b for b in range(256) if re.fullmatch(before, bytes([b])))
    skip_set = frozenset(b for b in range(256) if re.fullmatch(skip, bytes([b])))
    assert not before_set & skip_set

    def search(hay: bytes, memo: Memo | None) -> bool:
        for regex, literal in regexes:
            if literal and memo is not None and memo.get((literal, False)) is False:
                continue  # its leading word is known not to be there (another trigger looked)
            match = regex.search(hay)
            while match is not None:
                i = match.start() - 1
                while i >= 0 and hay[i] in skip_set:
                    i -= 1
                if i >= 0 and hay[i] in before_set:
                    return True
                match = regex.search(hay, match.start() + 1)
        return False

    return search


# --- Triggers shared by the built-in rules -------------------------------------------------
# `[\s\\]*` allows whitespace, newlines inside brackets and backslash continuations between
# tokens, which is everything Python allows there. Patterns start with a literal where they
# can: the regex engine then skips ahead with a fast search instead of trying every byte.

_DUMP_NAMES = rb"(?:save|savez|savez_compressed|savetxt|save_file|dump|tofile)"

#: A serialisation call ``<anything>.save(``, ``.dump(``, ``.tofile(``... (the rules ignore a
#: dot followed by whitespace, so ``.save`` is always literally there) or a from-import of
#: such a name (``from torch import save``), the only way to call it bare.
DUMP = AnyOf(
    # (the needles of both: one search each, the regex only where one of them is)
    Trigger(rb"\." + _DUMP_NAMES + rb"[\s\\]*\(", (b"save", b"dump", b"tofile")),
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
    search=words_then((b"breakpoint", b"set_trace", b"post_mortem", b"pdb", b"pudb", b"debugpy", b"pydevd",
                       b"IPython", b"interact"), rb"\b"),
)

#: Debugger modules (for imports only).
_module_words = words_then((b"pdb", b"pudb", b"debugpy", b"wdb"), rb"\b")  # and pydevd\w*\b: any "pydevd"
DEBUGGER_MODULES = Trigger(
    rb"(?:pdb|pudb|debugpy|pydevd\w*|wdb)\b", (b"pdb", b"pudb", b"debugpy", b"pydevd", b"wdb"), label="debugger module",
    search=lambda hay, memo: _contains(hay, b"pydevd", memo, False) or _module_words(hay, memo),
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
    search=words_then((b"debug", b"dbg", b"dump"), rb"\w*\)?[\s\\]*(?:\+=|=(?!=)(?:[^\n]|\\\n)*\+|=[\s\\]*\([^()]*\+)",
                      lowered=True),
)

#: ``+= <int>``, ``+ <int>`` or ``<int> +``: an increment by a constant.
INCREMENT = AnyOf(
    # An integer literal starts with a digit and ends with a word character (``0xff``).
    Trigger(rb"\+(?:=|[\s\\]*\d)", (b"+",)),
    Trigger(rb"\w[\s\\]*\+", (b"+",), search=preceded(rb"\w", rb"[\s\\]", rb"\+")),
    label="increment",
)

#: A marker-named flag set to True: ``X._dumped = True`` or ``setattr(x, "_dumped", True)``.
MARKER_TRUE = Trigger(rb"(?:debug|dbg|dump)\w*(?:\)?[\s\\]*=|['\"][\s\\]*,)[\s\\]*true\b",
                      (b"debug", b"dbg", b"dump"), ignore_case=True, label="debug-named flag set",
                      search=words_then((b"debug", b"dbg", b"dump"), rb"\w*(?:\)?[\s\\]*=|['\"][\s\\]*,)[\s\\]*true\b",
                                        lowered=True))

#: ``getattr(obj, "name", 0) + 1`` (or ``1 + getattr(...)``): a counter created lazily.
LAZY_COUNTER = AnyOf(
    Trigger(rb"getattr[\s\\]*\([^()]*\)(?:[\s\\]|#[^\n]*)*\+", (b"getattr",)),
    Trigger(rb"\w[\s\\]*\+[\s\\]*getattr[\s\\]*\(", (b"getattr",),  # 1 + getattr(...)
            search=preceded(rb"\w", rb"[\s\\]", rb"\+[\s\\]*getattr[\s\\]*\(")),
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
_PY2_STATEMENTS = (rb"print(?:[ \t]+[\"'\w]|[ \t]*>>)", rb"exec[ \t]+[\"']",
                   rb"except[ \t]+[\w.]+[ \t]*,[ \t]*\w+[ \t]*:", rb"raise[ \t]+[\w.]+[ \t]*,")  # _PY2's, split
PYTHON2 = AnyOf(
    Trigger(rb"\n" + _PY2, search=preceded(rb"\n", rb"[ \t]", *_PY2_STATEMENTS)),
    Trigger(rb"\r" + _PY2, (b"\r",)),  # old Mac line ends
    Trigger(rb"\A(?:\xef\xbb\xbf)?" + _PY2),
    label="Python 2 statement",
)

#: A NUL byte: a binary file, or one damaged on disk.
NUL = Trigger(rb"\x00", (b"\x00",), label="NUL byte")


def python_ast(data: bytes, memo: Memo | None = None) -> ast.Module | None:
    """CPython's syntax tree of ``data`` (once per file with a memo), or None when CPython's
    parser rejects it or the byte scan of complexity.py finds it unsafe to parse. CPython's
    parser is native and builds no concrete tree: ten to twenty times libcst's speed."""
    if memo is not None and "ast" in memo:
        remembered: ast.Module | None = memo["ast"]
        return remembered
    tree: ast.Module | None = None
    if memo is not None and "refusal" in memo:
        refused = memo["refusal"]
    else:
        measured = measure(data)
        refused = measured.refused
        if memo is not None:
            memo["complexity"] = measured  # its depth and chain: astdump.py asks them
    if memo is not None:
        memo["refusal"] = refused
    if refused is None:
        # The tree is made of many small objects and holds no cycles: the cyclic collector, run
        # again and again as they are allocated, would take 40 % of the time for nothing.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with warnings.catch_warnings():  # SyntaxWarnings (invalid escapes) are not ours to print
                warnings.simplefilter("ignore")
                tree = cast(ast.Module, compile(data, "<scan>", "exec", ast.PyCF_ONLY_AST,  # "exec": a Module
                                                dont_inherit=True))
        except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
            tree = None
        finally:
            if collecting:
                gc.enable()
    if memo is not None:
        memo["ast"] = tree
    return tree


#: What makes a condition a shape condition (analysis.classify_condition: the same sets).
SHAPE_ATTRS = frozenset({"shape", "ndim"})
SHAPE_METHODS = frozenset({"size", "numel", "dim"})
#: The last part of every name a debug action is called by (analysis.classify_call: dump
#: functions, debugger functions and methods, open and Path writes, print).
ACTION_CALLEES = frozenset({
    "breakpoint", "dump", "embed", "interact", "listen", "open", "pm", "post_mortem", "print", "run", "runcall",
    "save", "save_file", "savetxt", "savez", "savez_compressed", "set_trace", "tofile", "wait_for_client",
    "write_bytes", "write_text"})


class ShapeGuard:
    """Matches an ``if`` on a shape whose body may call a debug action (CPython's syntax tree).

    The ``if`` (or ``elif``) reads a shape in its test: an attribute in ``SHAPE_ATTRS`` or a
    call of a method in ``SHAPE_METHODS``; its body calls a method named in
    ``ACTION_CALLEES``, or a name that is one of them or that an import binds (an alias can be
    any action). CPython's tree has the same statements and expressions as libcst's; a file
    CPython cannot parse (newer syntax than the interpreter's, or none) always matches."""

    label = "shape-guarded call"

    def matches(self, data: bytes, memo: Memo | None = None) -> bool:
        if memo is not None and "shape-guard" in memo:
            remembered: bool = memo["shape-guard"]
            return remembered
        if memo is not None and memo.get(OPTIMISTIC):
            return True  # (not remembered)
        tree = python_ast(data, memo)
        hit = tree is None or _shape_guard(tree)
        if memo is not None:
            memo["shape-guard"] = hit
        return hit

    def describe(self) -> str:
        return self.label


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of ``body`` and the blocks nested in it (expressions hold none)."""
    todo = list(reversed(body))
    while todo:
        node = todo.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list and value:
                for item in reversed(value):
                    if isinstance(item, ast.stmt):
                        todo.append(item)
                    elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                        todo.extend(reversed(item.body))


def _shape_guard(tree: ast.Module) -> bool:
    guards = []
    imported: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.If):
            if any((isinstance(n, ast.Attribute) and n.attr in SHAPE_ATTRS)
                   or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in SHAPE_METHODS)
                   for n in ast.walk(node.test)):
                guards.append(node)
        elif isinstance(node, ast.Import):
            imported.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.update(a.asname or a.name for a in node.names)
    for guard in guards:
        for statement in guard.body:
            for n in ast.walk(statement):
                if isinstance(n, ast.Call):
                    func = n.func
                    if isinstance(func, ast.Attribute) and func.attr in ACTION_CALLEES:
                        return True
                    if isinstance(func, ast.Name) and (func.id in ACTION_CALLEES or func.id in imported):
                        return True
    return False


SHAPE_GUARD = ShapeGuard()


class Undecodable:
    """Matches bytes that are not valid in their declared encoding (PEP 263, UTF-8 default)."""

    label = "undecodable bytes"

    def matches(self, data: bytes, memo: Memo | None = None) -> bool:
        if memo is not None and "undecodable" in memo:
            remembered: bool = memo["undecodable"]
            return remembered
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

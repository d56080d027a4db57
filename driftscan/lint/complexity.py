"""Is a file safe to hand to libcst? A byte scan of bracket depth and expression-chain length.

libcst's native parser recurses once per level of the syntax tree: 100,000 nested parentheses
overflow its stack and kill the process (a segfault, not an exception), and long chains that
nest the tree — ``a + a + …``, ``a.b.b…``, ``f()()…``, ``not not …`` — cost time quadratic in
their length (5,000 ``+`` take 15 s), as does code nested deep (150 levels of ``(a+a+…+`` take
1.5 s for 3 KB). A file past the limits below is not parsed but reported (DBG004). They sit far
above real code — in the 2,130 files (30 MB) of a venv with mypy, pydantic, libcst and pip, the
deepest nesting is 15 levels, the longest chain 947 bytes, the most quadratic cost 3% of the
limit, and nothing is deeper than ``DEEP_FREE`` — and below what hurts libcst: a file at the
limits parses in about 2 s. The scan runs at about 9 MB/s, libcst at about 0.3 MB/s.

The scan is a small tokenizer driven by regular expressions, so it costs a fraction of a
parse: strings and comments are skipped (a ``"((("`` in a string is not nesting), and
f-strings are followed into their replacement fields, which can hold nesting and, since PEP
701, strings with the same quote — by the rules CPython's and libcst's tokenizers follow, so
that the scan and the parser agree about what is code. Two measures:

* *depth*: open brackets and f-strings (and their replacement fields) at any point, and the
  bytes of code deeper than ``DEEP_FREE`` levels, each counted once per level past it;
* *chain*: the cost of the most expensive path down the nesting, in bytes of code (spaces not
  counted). Within one level a *segment* runs from a ``,`` or ``;`` (outside brackets: a line
  end) to the next; a segment costs its own bytes of code plus its most expensive bracket (an
  opening bracket counts 3: calls and subscripts nest the tree more). Bytes bound the tokens,
  and the tokens on a path bound how deep the syntax tree can get there. Long segments are
  also summed (squared), as their cost is: one long chain is fine, thousands are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# CPython's own parser refuses more than 200 nested brackets (its MAXLEVEL): no file Python can
# import is refused for its depth, and libcst parses 200 levels in 15 ms.
MAX_DEPTH = 200  # nesting levels
MAX_CHAIN = 4_000  # bytes of code (blanks not counted) along one nesting path
QUAD_FREE = 200  # segment cost that counts as linear
QUAD_LIMIT = 16_000_000  # the sum over segments of (own bytes - QUAD_FREE) squared: many long chains
# libcst's work grows with the depth at which each byte sits (150 levels of "(a+a+…+" take it
# 1.5 s for 3 KB); real code stays within DEEP_FREE levels, so only bytes deeper count.
DEEP_FREE = 24
DEEP_LIMIT = 300_000  # the sum over bytes of (depth - DEEP_FREE)

# In code: comments, quotes, brackets, separators, line ends (with the next line's indent),
# backslash continuations. In an f-string's replacement field also ":" (a format spec).
_CODE = re.compile(rb"#[^\r\n]*|[\"'()\[\]{},;]|\\\r?\n|(?:\r\n?|\n)[ \t\f]*")
_FIELD = re.compile(rb"#[^\r\n]*|[\"'()\[\]{},;:]|\\\r?\n|(?:\r\n?|\n)[ \t\f]*")
_IDENT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | frozenset(range(128, 256))
# CPython's string prefixes (any case); other letters before a quote are a name.
_PLAIN_PREFIXES = frozenset({b"", b"r", b"u", b"b", b"br", b"rb"})
_FORMAT_PREFIXES = frozenset({b"f", b"fr", b"rf", b"t", b"tr", b"rt"})
_QUOTES = (b'"', b"'", b'"""', b"'''")
# What ends a plain string (a backslash escapes the next character even in a raw string).
_PLAIN_END = {q: re.compile(rb"\\[\s\S]|" + re.escape(q) + (rb"" if len(q) == 3 else rb"|\r|\n")) for q in _QUOTES}


def _literal(quote: bytes, raw: bool) -> re.Pattern[bytes]:
    """What matters in an f-string's text or format spec: braces, the closing quote, a line end
    (ends a one-quote string), escapes (``\\N{...}`` is not a field, ``\\{`` leaves the brace)."""
    escape = rb"\\[^{}]" if raw else rb"\\N\{[^}\r\n]*\}|\\[^{}]"
    end = re.escape(quote) + (rb"" if len(quote) == 3 else rb"|\r\n?|\n")
    return re.compile(escape + rb"|\{\{|\}\}|[{}]|" + end)


_LITERAL = {(q, raw): _literal(q, raw) for q in _QUOTES for raw in (False, True)}


@dataclass(frozen=True)
class Complexity:
    depth: int  # deepest nesting seen (up to where the scan stopped)
    chain: int  # most expensive path seen
    quad: int  # sum of the squared segment costs
    refused: str | None  # why the file must not be parsed, or None


class _Level:
    """One nesting level: "top", a "bracket", an f-string ("f"), its "field" or format "spec"."""

    __slots__ = ("kind", "seg", "inner", "best", "quote", "raw")

    def __init__(self, kind: str, quote: bytes = b"", raw: bool = False):
        self.kind = kind
        self.seg = 0  # bytes of code of the current segment
        self.inner = 0  # most expensive level inside the current segment
        self.best = 0  # most expensive segment so far
        self.quote = quote
        self.raw = raw

    def end_segment(self, scan: _Scan) -> int:
        cost = self.seg + self.inner
        if cost > self.best:
            self.best = cost
        if self.seg > QUAD_FREE:  # its own bytes: the levels inside it are counted on their own
            scan.quad += (self.seg - QUAD_FREE) ** 2
        self.seg = self.inner = 0
        return self.best


class _TooComplex(Exception):
    pass


class _Scan:
    def __init__(self, data: bytes, max_depth: int, max_chain: int):
        self.data = data
        self.max_depth = max_depth
        self.max_chain = max_chain
        self.stack = [_Level("top")]
        self.depth = self.worst_depth = self.worst_chain = self.quad = self.deep = 0

    def deepen(self, nbytes: int) -> None:
        self.deep += nbytes * (self.depth - DEEP_FREE)
        if self.deep > DEEP_LIMIT:
            raise _TooComplex(f"too much code nested more than {DEEP_FREE} levels deep")

    def push(self, level: _Level) -> None:
        self.stack.append(level)
        if level.kind != "spec":
            self.depth += 1
            if self.depth > DEEP_FREE:
                self.deepen(2)  # the opening and the closing token
            if self.depth > self.worst_depth:
                self.worst_depth = self.depth
                if self.depth > self.max_depth:
                    raise _TooComplex(f"nested more than {self.max_depth} levels deep")

    def pop(self) -> None:
        """Close the innermost level, folding its cost into its parent's segment."""
        level = self.stack.pop()
        if level.kind != "spec":
            self.depth -= 1
        parent = self.stack[-1]
        parent.inner = max(parent.inner, level.end_segment(self) + 1)
        self.check(parent.seg + parent.inner)

    def check(self, cost: int) -> None:
        if self.quad > QUAD_LIMIT:
            raise _TooComplex("too many long expression chains")
        if cost > self.worst_chain:
            self.worst_chain = cost
            if cost > self.max_chain:
                raise _TooComplex(f"an expression chain of over {self.max_chain} bytes")

    def run(self) -> None:
        data, stack = self.data, self.stack
        n = len(data)
        pos = 0
        while pos < n:
            level = stack[-1]
            if level.kind in ("f", "spec"):
                m = _LITERAL[(level.quote, level.raw)].search(data, pos)
                if m is None:
                    return  # unterminated: the tokenizer refuses the file before any parsing
                tok = m.group()
                pos = m.end()
                if tok == b"{":
                    self.push(_Level("field"))
                elif tok == b"}":
                    if level.kind == "spec":  # the end of the spec and of its field
                        self.pop()
                        self.pop()
                elif tok == level.quote or tok[:1] in b"\r\n":
                    # The f-string ends (in a spec too: CPython and libcst end it there).
                    while stack[-1].kind != "f":
                        self.pop()
                    self.pop()
                continue

            m = (_FIELD if level.kind == "field" else _CODE).search(data, pos)
            if m is None:
                level.seg += n - pos - data.count(b" ", pos)
                break
            start = m.start()
            if start > pos:
                nbytes = start - pos - data.count(b" ", pos, start)
                level.seg += nbytes
                if self.depth > DEEP_FREE:
                    self.deepen(nbytes)
            tok = m.group()
            pos = m.end()
            c = tok[0]
            if c in b"#\\":
                continue
            if c in b"\r\n":
                if len(stack) == 1:  # a logical line ends
                    self.check(level.end_segment(self))
            elif c in b"([{":
                level.seg += 3  # a trailer (call, subscript) nests the tree like several bytes of "+a"
                self.push(_Level("bracket"))
            elif c in b")]}":
                if level.kind == "bracket":
                    self.pop()
                    stack[-1].seg += 1
                elif level.kind == "field" and c == 0x7D:  # "}" ends the field
                    self.pop()
                # else an unmatched closer: a syntax error the parser reports
            elif c in b",;":
                level.end_segment(self)
            elif c == 0x3A:  # ":" at a field's own level: its format spec
                f = stack[-2]
                self.push(_Level("spec", f.quote, f.raw))
            else:
                pos = self.string(start, pos, level)
        while len(stack) > 1:  # the end of the file closes whatever is open
            self.pop()
        self.check(stack[0].end_segment(self))

    def string(self, start: int, pos: int, level: _Level) -> int:
        """A string starts at the quote at ``start``: skip a plain one, enter an f-string."""
        data = self.data
        quote = data[start : start + 3] if data[start : start + 3] in (b'"""', b"'''") else data[start : start + 1]
        pos = start + len(quote)
        p = start
        while p > 0 and data[p - 1] in _IDENT and start - p < 3:
            p -= 1
        prefix = data[p:start].lower()
        if (p > 0 and data[p - 1] in _IDENT) or prefix not in _PLAIN_PREFIXES | _FORMAT_PREFIXES:
            prefix = b""  # the end of a name, then a plain string
        level.seg += 1
        if prefix in _FORMAT_PREFIXES:
            self.push(_Level("f", quote, raw=b"r" in prefix))
            return pos
        end = _PLAIN_END[quote]
        while True:
            m = end.search(data, pos)
            if m is None:
                return len(data)
            pos = m.end()
            if m.group()[:1] != b"\\":
                return pos


def measure(data: bytes, max_depth: int = MAX_DEPTH, max_chain: int = MAX_CHAIN) -> Complexity:
    """Depth and chain cost of ``data``; stops at the first limit passed."""
    scan = _Scan(data, max_depth, max_chain)
    try:
        scan.run()
    except _TooComplex as e:
        return Complexity(scan.worst_depth, scan.worst_chain, scan.quad, str(e))
    return Complexity(scan.worst_depth, scan.worst_chain, scan.quad, None)


def refusal(data: bytes) -> str | None:
    """Why ``data`` must not be parsed (too deep, too long a chain), or None."""
    return measure(data).refused

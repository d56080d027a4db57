"""What a path expression in the source writes to, as a glob.

``f"/tmp/nomla_{self._n}_{x.shape[0]}.pt"`` becomes ``/tmp/nomla_*_*.pt``: constant parts are
kept (glob-escaped), everything computed becomes ``*``. Understood: string literals, implicit
concatenation, f-strings, ``%``-formatting, ``str.format``, ``+``, ``os.path.join``,
``Path(...)``, the ``/`` operator, ``str()``/``os.fspath()``, and names assigned one of these
earlier in the file (flow-insensitively: the last assignment seen wins).

The raw source text of every literal is kept too: rules that test "is this under /tmp" look
at that text, so that the byte-level prefilter (which sees only raw bytes) stays sound.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

WILD = None  # a computed part of a path
TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[#0+ -]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_BRACE_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
_GLOB_SPECIAL = re.compile(r"([*?\[])")
_JOIN_FUNCS = {"os.path.join", "posixpath.join"}
_PATH_CLASSES = {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath",
                 "Path", "PurePath", "PosixPath", "PurePosixPath"}
_PASS_THROUGH = {"str", "os.fspath", "os.path.abspath", "os.path.normpath"}
_MAX_DEPTH = 6

Parts = list["str | None"]  # literal text or WILD


@dataclass(frozen=True)
class PathInfo:
    """What is known about a path expression."""

    glob: str | None  # None: nothing constant at all
    raw_literals: tuple[str, ...]  # source text of the string tokens it was built from

    @property
    def in_tmp(self) -> bool:
        """Under a temporary directory, judged on the glob *and* the literal text."""
        if not self.glob or not any(self.glob == d or self.glob.startswith(d + "/") for d in TMP_DIRS):
            return False
        return any(d in raw for raw in self.raw_literals for d in TMP_DIRS)


Resolver = Callable[[cst.BaseExpression], str | None]  # expression -> qualified name
NameLookup = Callable[[str], cst.BaseExpression | None]  # variable -> assigned expression


class _Builder:
    def __init__(self, qualify: Resolver, lookup: NameLookup):
        self.qualify = qualify
        self.lookup = lookup
        self.raw: list[str] = []

    def parts(self, expr: cst.BaseExpression, depth: int = 0) -> Parts:
        if depth > _MAX_DEPTH:
            return [WILD]
        d = depth + 1
        if isinstance(expr, cst.SimpleString):
            self.raw.append(expr.value)
            value = expr.evaluated_value
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            return [value]
        if isinstance(expr, cst.ConcatenatedString):
            return self.parts(expr.left, d) + self.parts(expr.right, d)
        if isinstance(expr, cst.FormattedString):
            return self._fstring(expr)
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, cst.Add):
                return self.parts(expr.left, d) + self.parts(expr.right, d)
            if isinstance(expr.operator, cst.Divide):
                return _join([self.parts(expr.left, d), self.parts(expr.right, d)])
            literal = isinstance(expr.left, (cst.SimpleString, cst.ConcatenatedString))
            if isinstance(expr.operator, cst.Modulo) and literal:
                return self._template(self.parts(expr.left, d), _PERCENT_SPEC, {"%%": "%"})
        if isinstance(expr, cst.Call):
            return self._call(expr, d)
        if isinstance(expr, cst.Name):
            assigned = self.lookup(expr.value)
            if assigned is not None and assigned is not expr:
                return self.parts(assigned, d)
        return [WILD]

    def _fstring(self, expr: cst.FormattedString) -> Parts:
        out: Parts = []
        raw = "r" in expr.prefix.lower()
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                self.raw.append(part.value)
                text = part.value.replace("{{", "{").replace("}}", "}")
                out.append(text if raw or "\\" not in text else WILD)
            else:
                out.append(WILD)
        return out

    def _template(self, parts: Parts, spec: re.Pattern[str], escapes: dict[str, str]) -> Parts:
        return fill_template(parts, spec, escapes)

    def _call(self, call: cst.Call, depth: int) -> Parts:
        func = call.func
        args = [a.value for a in call.args if not a.star and a.keyword is None]
        if isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(
            func.value, (cst.SimpleString, cst.ConcatenatedString)
        ):
            return self._template(self.parts(func.value, depth), _BRACE_FIELD, {"{{": "{", "}}": "}"})
        name = self.qualify(func)
        if name in _JOIN_FUNCS or name in _PATH_CLASSES:
            return _join([self.parts(a, depth) for a in args]) if args else [WILD]
        if name in _PASS_THROUGH and len(args) == 1:
            return self.parts(args[0], depth)
        if isinstance(func, cst.Attribute) and func.attr.value in ("joinpath", "with_suffix"):
            base = self.parts(func.value, depth)
            rest = [self.parts(a, depth) for a in args]
            if func.attr.value == "joinpath":
                return _join([base, *rest])
            return base + [WILD] + (rest[0] if rest else [])
        return [WILD]


def _join(pieces: list[Parts]) -> Parts:
    """os.path.join semantics on part lists: an absolute constant piece restarts the path."""
    out: Parts = []
    for piece in pieces:
        first = piece[0] if piece else WILD
        if isinstance(first, str) and first.startswith("/"):
            out = list(piece)
            continue
        if out:
            last = out[-1]
            if not (isinstance(last, str) and last.endswith("/")):
                out.append("/")
        out.extend(piece)
    return out


def _to_glob(parts: Parts) -> str | None:
    if not any(isinstance(p, str) and p for p in parts):
        return None
    out: list[str] = []
    for part in parts:
        if part is WILD:
            if not out or out[-1] != "*":
                out.append("*")
        elif part:
            out.append(_GLOB_SPECIAL.sub(r"[\1]", part))
    return "".join(out)


def path_info(expr: cst.BaseExpression, qualify: Resolver, lookup: NameLookup) -> PathInfo:
    builder = _Builder(qualify, lookup)
    parts = builder.parts(expr)
    return PathInfo(_to_glob(parts), tuple(builder.raw))


def fill_template(parts: Parts, spec: re.Pattern[str], escapes: dict[str, str]) -> Parts:
    """A ``%`` or ``str.format`` template's literal parts with each field (``spec``) made WILD,
    or the character an escape (``escapes``: ``%%``, ``{{``...) stands for."""
    out: Parts = []
    for part in parts:
        if part is WILD:
            out.append(WILD)
            continue
        pos = 0
        for m in spec.finditer(part):
            out.append(part[pos:m.start()])
            out.append(escapes.get(m.group(0), WILD))
            pos = m.end()
        out.append(part[pos:])
    return out

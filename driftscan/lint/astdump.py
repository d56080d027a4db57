"""DBG101, DBG102, DBG103, DBG106 and DBG107 decided on CPython's syntax tree, exactly as the
libcst rules decide them.

Most files that reached libcst did so for a serialisation call (torch: 39 of 47 findings), a
counter or a debugger, and libcst's parse of them was most of a cold scan. This module
re-enacts, on the tree CPython's parser already built for the AST checks (astfacts.py), what the
walk of ``DebugTensorDump``, ``TensorSaveCall``, ``DebugCounter``, ``DebuggerCall`` and
``DebuggerImport`` does: the statements in libcst's walk order (a function's decorators after
its body, a class's bases after its body, an ``except`` clause's type after its body...), the
imports and string assignments the context has seen at each call (context.py), the first
request of each path expression's ``PathInfo`` (analysis.classify_call caches it per node, so a
``with open(p, "wb") as f`` computes ``p`` when the ``open`` call is met), the ancestors
(enclosing functions, guarding ``if`` bodies, ``with`` bindings), the path glob and raw string
tokens (dumppaths.py, whose helpers are used as they are), the reasons, the counters' increments,
resets, the names debug actions use and the reads of kept code, the messages and the positions (line, code-point column
of the node's start). A rule takes part when its class says so itself (``AST_EXACT``), and a file
is decided here only when every rule left after the AST checks does.

Where CPython's tree does not say what libcst's would, the answer is ``None`` and the file goes
to libcst as before: not UTF-8 (or a BOM, ``\\r`` line ends), an identifier NFKC would change
(CPython normalises identifiers, libcst does not), an f-string in a path that is concatenated,
holds a backslash or a ``{x=}``, nesting deep enough that libcst's position pass could give up,
a guard whose first marker or flag depends on libcst's traversal order, an integer whose
parentheses are on other lines, a ``match`` statement in a file where a counter's reads decide, two reports alike at one position, syntax newer than this
module knows (``type`` parameters, aliases), or anything unforeseen that raises. Whatever this
module answers equals libcst's findings: ``benchmarks/ast_exact_identity.py`` compares them on
every file of a venv, and tests/lint/test_astdump.py on the rules' examples and corner cases.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.values import Severity
from .artifacts import artifact_pattern
from .astfacts import _dotted, _terminal, has_marker, set_true
from .dumppaths import _BRACE_FIELD, _JOIN_FUNCS, _MAX_DEPTH, _PASS_THROUGH, _PATH_CLASSES, _PERCENT_SPEC
from .dumppaths import WILD, Parts, PathInfo, _join, _to_glob, fill_template
from .vocabulary import DEBUGGER_FUNCTIONS, DEBUGGER_METHODS, DEBUGGER_MODULES, DUMP_FUNCTIONS, EPHEMERAL
from .vocabulary import OPEN_FUNCTIONS, WORD_RE
from .vocabulary import SHAPE_ATTRS, SHAPE_METHODS, ReasonKind

if TYPE_CHECKING:
    from .rule import Rule

#: What a rule names to be decided here (a rule's own ``AST_EXACT``, not inherited).
DUMP_DEBUG = "dump-debug"  # DBG101
DUMP_PLAIN = "dump-plain"  # DBG102
DEBUGGER_CALL = "debugger-call"  # DBG106
DEBUGGER_IMPORT = "debugger-import"  # DBG107
DEBUG_COUNTER = "debug-counter"  # DBG103
KINDS = frozenset({DUMP_DEBUG, DUMP_PLAIN, DEBUGGER_CALL, DEBUGGER_IMPORT, DEBUG_COUNTER})

# as in context.py
_DEFAULT_ALIASES = {"np": "numpy", "pd": "pandas", "F": "torch.nn.functional"}
#: Past these (complexity.py's measures) libcst's recursive position pass might stop early
#: ("position unknown"); real code stays far below (15 levels, chains under 1 KB).
MAX_EXACT_DEPTH = 40
MAX_EXACT_CHAIN = 400
_DEBUG_SPECIFIER = re.compile(r"=\s*[!:}]")


class Unsure(Exception):
    """CPython's tree does not say what libcst would: the file goes to libcst."""


@dataclass(frozen=True)
class Hit:
    """One finding, as the engine builds it (engine.py adds the snippet)."""

    code: str
    name: str
    severity: Severity
    line: int
    column: int  # 1-based, in code points
    message: str
    artifact_pattern: str | None


def exact_kind(rule: type) -> str | None:
    """The kind a rule class itself declares (``AST_EXACT`` in its own body: a subclass that
    changes the rule is not decided here unless it says so too)."""
    kind = rule.__dict__.get("AST_EXACT")
    return kind if kind in KINDS else None


def dump_hits(data: bytes, tree: ast.Module, rules: Iterable[type[Rule]], complexity: Any = None) -> list[Hit] | None:
    """The findings of ``rules`` (each with an ``exact_kind``) on ``data``, whose CPython tree is
    ``tree``; None where only libcst can tell."""
    kinds = {exact_kind(r): r for r in rules}
    if None in kinds or not kinds:
        return None
    if complexity is not None and (complexity.depth > MAX_EXACT_DEPTH or complexity.chain > MAX_EXACT_CHAIN):
        return None
    if b"\r" in data or data.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return None
    if encoding != "utf-8":
        return None
    try:
        walk = _Walk(data, tree, kinds)
        walk.module()
        return walk.hits()
    except Unsure:
        return None
    except Exception:  # noqa: BLE001 - whatever this module did not foresee, libcst decides (as before it)
        return None


# -- the source text ---------------------------------------------------------------------------


class _Source:
    def __init__(self, data: bytes, tree: ast.Module):
        self.lines = data.split(b"\n")
        if not data.isascii():
            self._check_non_ascii(tree)

    def _check_non_ascii(self, tree: ast.Module) -> None:
        """Every non-ASCII character that can be part of an identifier is in a plain string
        literal or a comment, or its line is NFKC-normalised already: CPython NFKC-normalises
        identifiers (``ｓave`` is ``save``), libcst keeps them as written. (An identifier is
        delimited by ASCII, which NFKC never joins to a neighbour: on a normalised line every
        identifier is normalised.)"""
        lines = [(n, line) for n, line in enumerate(self.lines, 1) if not line.isascii()]
        suspects = []  # (line, byte offset) of the identifier-like ones on lines NFKC would change
        for number, line in lines:
            text = line.decode("utf-8")
            if unicodedata.is_normalized("NFKC", text):
                continue
            offset = 0
            for ch in text:
                if ord(ch) > 0x7F and ("a" + ch).isidentifier():
                    suspects.append((number, offset))
                offset += len(ch.encode("utf-8"))
        if not suspects:
            return
        spans: dict[int, list[tuple[int, int]]] = {}  # line -> byte ranges inside plain strings
        fstring_lines: set[int] = set()  # (CPython 3.11 places what is inside an f-string loosely)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
                self._span(node, spans)
            elif isinstance(node, ast.JoinedStr):
                fstring_lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        for number, at in suspects:
            if number in fstring_lines:
                raise Unsure("an identifier-like character on a line with an f-string")
            inside = spans.get(number, [])
            if any(a <= at < b for a, b in inside):
                continue
            comment = _comment_start(self.lines[number - 1], inside)
            if comment is None or comment > at:
                raise Unsure("an identifier-like character outside strings and comments")

    def _span(self, node: ast.AST, spans: dict[int, list[tuple[int, int]]]) -> None:
        start, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]  # ast.AST has no positions: its expr and stmt do
        for line in range(start, end + 1):
            a = node.col_offset if line == start else 0  # type: ignore[attr-defined]  # as above
            b = node.end_col_offset if line == end else len(self.lines[line - 1])  # type: ignore[attr-defined]  # as above
            spans.setdefault(line, []).append((a, b or 0))

    def segment(self, node: ast.AST) -> str:
        start, end = node.lineno, node.end_lineno  # type: ignore[attr-defined]  # as above
        if end is None:
            raise Unsure("no end position")
        raw: bytes
        if start == end:
            raw = self.lines[start - 1][node.col_offset:node.end_col_offset]  # type: ignore[attr-defined]  # as above
        else:
            raw = b"\n".join([self.lines[start - 1][node.col_offset:],  # type: ignore[attr-defined]  # as above
                              *self.lines[start:end - 1], self.lines[end - 1][:node.end_col_offset]])  # type: ignore[attr-defined]  # as above
        return raw.decode("utf-8")

    def column(self, node: ast.AST) -> int:
        """libcst's column (0-based code points) of a node's start."""
        line = self.lines[node.lineno - 1]  # type: ignore[attr-defined]  # as above
        return len(line[:node.col_offset].decode("utf-8"))  # type: ignore[attr-defined]  # as above

    def tight_dot(self, func: ast.Attribute) -> bool:
        """No whitespace between the dot and the attribute name (``torch. save`` is left alone:
        analysis.classify_call)."""
        line = self.lines[(func.end_lineno or func.lineno) - 1]
        at = (func.end_col_offset or 0) - len(func.attr.encode("utf-8")) - 1
        if at < 0 or line[at + 1:func.end_col_offset].decode("utf-8") != func.attr:
            raise Unsure("an attribute name that is not where its end says")
        return line[at:at + 1] == b"."

    def string_tokens(self, node: ast.AST) -> list[tuple[bool, str]]:
        """The string tokens a string literal is made of: ``(is an f-string, source text)``."""
        text = self.segment(node)
        out: list[tuple[bool, str]] = []
        depth = 0
        fstart = getattr(tokenize, "FSTRING_START", None)
        fend = getattr(tokenize, "FSTRING_END", None)
        try:
            for tok in tokenize.generate_tokens(io.StringIO("(" + text + ")").readline):
                kind = tok.type
                if fstart is not None and kind == fstart:
                    if depth == 0:
                        out.append((True, ""))
                    depth += 1
                elif fend is not None and kind == fend:
                    depth -= 1
                elif depth:
                    continue
                elif kind == tokenize.STRING:
                    prefix = re.match(r"[A-Za-z]*", tok.string).group(0).lower()  # type: ignore[union-attr]  # [A-Za-z]* always matches
                    out.append(("f" in prefix, tok.string))
                elif kind in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER):
                    continue
                elif kind == tokenize.OP and tok.string in ("(", ")"):
                    continue  # the ones around the segment: a literal holds none between its tokens
                else:
                    raise Unsure(f"unexpected token in a string literal: {tok.string!r}")
        except (tokenize.TokenError, SyntaxError):
            raise Unsure("string literal does not tokenize") from None
        if not out:
            raise Unsure("no string token")
        return out


def _comment_start(line: bytes, inside: list[tuple[int, int]]) -> int | None:
    i = line.find(b"#")
    while i != -1:
        if not any(a <= i < b for a, b in inside):
            return i
        i = line.find(b"#", i + 1)
    return None


def _is_per_call_name(name: str) -> bool:  # analysis.is_per_call_name
    return "forward" in name.lower() or name in ("__call__", "step", "execute_model") or name.endswith("_step")


def _pos(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]  # as above


@dataclass(frozen=True)
class _Arg:
    """A call argument as libcst has it: in source order, keyword and star with it."""

    value: ast.expr
    keyword: str | None
    star: str  # "", "*" or "**"


def _args(call: ast.Call) -> list[_Arg]:
    out = [(_pos(a), _Arg(a.value, None, "*") if isinstance(a, ast.Starred) else _Arg(a, None, "")) for a in call.args]
    out += [(_pos(k), _Arg(k.value, k.arg, "" if k.arg else "**")) for k in call.keywords]
    if call.keywords and call.args:
        out.sort(key=lambda item: item[0])
    return [a for _, a in out]


def _argument(args: list[_Arg], index: int, keyword: str) -> ast.expr | None:  # analysis._argument
    for arg in args:
        if arg.keyword == keyword:
            return arg.value
    positional = [a for a in args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


# -- the walk ----------------------------------------------------------------------------------


@dataclass
class _Condition:
    markers: set[str]
    one_shot: set[str]
    shape: bool


class _Walk:
    def __init__(self, data: bytes, tree: ast.Module, kinds: dict[str | None, type[Rule]]):
        self.source = _Source(data, tree)
        self.tree = tree
        self.kinds = kinds
        self.aliases: dict[str, str] = {}
        self.assignments: dict[str, ast.expr] = {}
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.guards: list[ast.If] = []
        self.withs: list[ast.With | ast.AsyncWith] = []
        self.paths: dict[int, PathInfo] = {}
        self.conditions: dict[int, _Condition] = {}
        self.flags: dict[int, set[str]] = {}
        self.found: list[Hit] = []
        self.debugger_calls: list[tuple[ast.Call, str, str | None]] = []  # DebuggerCall.calls
        self.defines_breakpoint = False
        # DebugCounter's: (node, name, lazy, per-call function, scope, attribute), in walk order
        self.increments: list[tuple[ast.stmt, str, bool, str | None, int, bool]] = []
        self.resets: set[tuple[int, str]] = set()
        self.feeds: set[str] = set()
        self.globals: set[tuple[int, str]] = set()  # (scope, name) declared global or nonlocal there
        self.debug_calls: set[int] = set()  # the debug actions' calls and print statements
        self.debug_guards: set[int] = set()  # the ifs without an else that guard one of them
        self.statement_call: ast.Call | None = None  # the call an expression statement is

    def hits(self) -> list[Hit]:
        self.counter_hits()
        rule = self.kinds.get(DEBUGGER_CALL)  # DebuggerCall.leave_Module
        for call, label, helper in self.debugger_calls:
            if rule is None:
                break
            if label == "breakpoint" and self.defines_breakpoint:
                continue
            if helper:
                self.report(rule, call, f"debugger call {label}() in debugging helper {helper}()", Severity.MEDIUM, None)
            else:
                self.report(rule, call, f"debugger call {label}()", rule.SEVERITY, None)
        def key(f: Hit) -> tuple[int, int, str, str]:  # engine._locate's order
            return f.line, f.column, f.code, f.message

        if len({key(h) for h in self.found}) != len(set(self.found)):
            raise Unsure("two reports alike but in what they carry: their order is libcst's walk order")
        return sorted(self.found, key=key)

    # -- statements, in libcst's field order ----------------------------------------------
    def module(self) -> None:
        self.statements(self.tree.body)

    def statements(self, body: list[ast.stmt]) -> None:
        for node in body:
            self.statement(node)

    def statement(self, node: ast.stmt) -> None:
        if getattr(node, "type_params", None):
            raise Unsure("type parameters")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == "breakpoint":
                self.defines_breakpoint = True
            self.functions.append(node)
            self.expressions(node.args)
            self.statements(node.body)
            for decorator in node.decorator_list:
                self.expressions(decorator)
            if node.returns is not None:
                self.expressions(node.returns)
            self.functions.pop()
        elif isinstance(node, ast.ClassDef):
            self.statements(node.body)
            for expr in (*node.bases, *node.keywords, *node.decorator_list):
                self.expressions(expr)
        elif isinstance(node, ast.If):
            self.expressions(node.test)
            self.guards.append(node)
            self.statements(node.body)
            self.guards.pop()
            self.statements(node.orelse)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.expressions(node.target)
            self.expressions(node.iter)
            self.statements(node.body)
            self.statements(node.orelse)
        elif isinstance(node, ast.While):
            self.expressions(node.test)
            self.statements(node.body)
            self.statements(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            self.withs.append(node)
            for item in node.items:
                self.expressions(item.context_expr)
                if item.optional_vars is not None:
                    self.expressions(item.optional_vars)
            self.statements(node.body)
            self.withs.pop()
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.statements(node.body)  # type: ignore[attr-defined]  # TryStar: 3.11+, not in 3.10's ast
            for handler in node.handlers:  # type: ignore[attr-defined]  # as above
                self.statements(handler.body)
                if handler.type is not None:
                    self.expressions(handler.type)
            self.statements(node.orelse)  # type: ignore[attr-defined]  # as above
            self.statements(node.finalbody)  # type: ignore[attr-defined]  # as above
        elif isinstance(node, ast.Match):
            self.expressions(node.subject)
            for case in node.cases:
                self.expressions(case.pattern)
                self.statements(case.body)
                if case.guard is not None:
                    self.expressions(case.guard)
        elif isinstance(node, _SIMPLE):
            self.simple(node)
        else:
            raise Unsure(f"statement {type(node).__name__}")

    def simple(self, node: ast.stmt) -> None:
        """A small statement: the context's visit (before its children), then its calls."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.debugger_import(node)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    head = alias.name.partition(".")[0]
                    self.aliases[head] = head
            return
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module or any(a.name == "*" for a in node.names):
                return
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            return
        if isinstance(node, ast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self._remember(node.targets[0].id, node.value)
            if DEBUG_COUNTER in self.kinds:
                self.counter_assign(node)
        elif isinstance(node, ast.AugAssign):
            if DEBUG_COUNTER in self.kinds and isinstance(node.op, ast.Add) and self.bare_int(node.value):
                self.increment(node, node.target, lazy=False)
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name) and node.value is not None:
                self._remember(node.target.id, node.value)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            self.globals.update((self.scope(), name) for name in node.names)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _pos(node) == _pos(node.value):
            self.statement_call = node.value  # analysis._is_statement: not in parentheses either
        self.expressions(node)
        self.statement_call = None

    def _remember(self, name: str, value: ast.expr) -> None:  # FileContext._remember
        stringish = isinstance(value, (ast.JoinedStr, ast.BinOp, ast.Call)) or (
            isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes)))
        if stringish:
            self.assignments[name] = value
        else:
            self.assignments.pop(name, None)

    def expressions(self, node: ast.AST) -> None:
        """Every call in an expression (the context's state is the same for all of them)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                self.call(sub)

    # -- names ---------------------------------------------------------------------------
    def qualified(self, expr: ast.AST) -> str | None:
        dotted = _dotted(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head) or _DEFAULT_ALIASES.get(head) or head
        return f"{base}.{rest}" if rest else base

    def with_binding(self, name: str) -> ast.expr | None:  # analysis._with_binding
        for node in reversed(self.withs):
            for item in node.items:
                bound = item.optional_vars
                if isinstance(bound, ast.Name) and bound.id == name:
                    return item.context_expr if isinstance(item.context_expr, ast.Call) else None
        return None

    def file_target(self, expr: ast.expr) -> ast.expr:  # analysis._file_target
        opened = self.with_binding(expr.id) if isinstance(expr, ast.Name) else expr
        if isinstance(opened, ast.Call) and self.qualified(opened.func) in OPEN_FUNCTIONS:
            args = _args(opened)
            if args:
                return args[0].value
        return expr

    def ephemeral(self, expr: ast.expr) -> bool:  # analysis._is_ephemeral
        if isinstance(expr, ast.Name):
            expr = self.with_binding(expr.id) or self.assignments.get(expr.id) or expr
        return isinstance(expr, ast.Call) and self.qualified(expr.func) in EPHEMERAL

    def path_info(self, expr: ast.expr) -> PathInfo:  # FileContext.path_info: the first request counts
        info = self.paths.get(id(expr))
        if info is None:
            builder = _PathBuilder(self)
            parts = builder.parts(expr)
            info = self.paths[id(expr)] = PathInfo(_to_glob(parts), tuple(builder.raw))
        return info

    # -- calls (analysis.classify_call) ---------------------------------------------------
    def call(self, call: ast.Call) -> None:
        func = call.func
        name = self.qualified(func)
        attr = func.attr if isinstance(func, ast.Attribute) else None
        if isinstance(func, ast.Attribute) and not self.source.tight_dot(func):
            attr = name = None
        if name in DUMP_FUNCTIONS or attr == "tofile":
            index, keyword = DUMP_FUNCTIONS.get(name or "", (0, "fid"))
            target = _argument(_args(call), index, keyword)
            if target is not None and self.ephemeral(target):
                return
            info = self.path_info(self.file_target(target)) if target is not None else None
            if self.dump(call, name if name in DUMP_FUNCTIONS else "tofile", info):
                self.feed(call)
            return
        if name in DEBUGGER_FUNCTIONS or attr in DEBUGGER_METHODS or (name or "").rpartition(".")[2] in DEBUGGER_METHODS:
            self.debugger_calls.append((call, name or attr or "debugger", self.debugging_helper()))
            self.feed(call)
            return
        if isinstance(func, ast.Name) and func.id == "print" and "print" not in self.aliases:
            if call is self.statement_call and DEBUG_COUNTER in self.kinds:
                self.debug_region(call)  # a print statement: DebugCounter.visit_Call
            return
        if name in OPEN_FUNCTIONS:
            args = _args(call)
            if args and _is_write_mode(_open_mode(args, self.source)):
                if self.path_info(args[0].value).in_tmp:
                    self.feed(call)  # a tmp-write
                return
        if attr in ("write_text", "write_bytes") and isinstance(func, ast.Attribute):
            if self.path_info(func.value).in_tmp:
                self.feed(call)

    # -- DBG103 (DebugCounter) ---------------------------------------------------------------
    def feed(self, call: ast.Call) -> None:
        """DebugCounter.visit_Call for an action that counts: what its arguments and guards use."""
        if DEBUG_COUNTER not in self.kinds:
            return
        self.debug_region(call)
        for arg in _args(call):
            _identifiers(arg.value, self.feeds, lambdas=False)
        for guard in self.guards:
            _identifiers(guard.test, self.feeds, lambdas=True)  # classify_condition's names

    def debug_region(self, call: ast.Call) -> None:  # DebugCounter._debug_region
        self.debug_calls.add(id(call))
        self.debug_guards.update(id(g) for g in self.guards if not g.orelse)

    def scope(self) -> int:
        return id(self.functions[-1]) if self.functions else 0

    def increment(self, node: ast.stmt, target: ast.expr, lazy: bool) -> None:
        name = _terminal(target)
        if name:
            per_call = next((f.name for f in reversed(self.functions) if _is_per_call_name(f.name)), None)
            self.increments.append((node, name, lazy, per_call, self.scope(), isinstance(target, ast.Attribute)))

    def counter_assign(self, node: ast.Assign) -> None:  # DebugCounter.visit_Assign
        if len(node.targets) != 1:
            return
        target, value = node.targets[0], node.value
        if isinstance(value, ast.Constant) and type(value.value) is int:
            name = _terminal(target)
            if name:
                self.resets.add((self.scope(), name))
            return
        if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)):
            return
        if not isinstance(target, (ast.Name, ast.Attribute)):
            return
        for other, const in ((value.left, value.right), (value.right, value.left)):
            if not self.bare_int(const):
                continue
            if _dotted(other) is not None and _dotted(other) == _dotted(target):
                self.increment(node, target, lazy=False)
            elif self._getattr_ref(other) == _terminal(target):
                self.increment(node, target, lazy=True)
            return

    def bare_int(self, expr: ast.expr) -> bool:
        """An int literal not in parentheses (debug_counter._is_int: libcst's Integer, no lpar)."""
        if not (isinstance(expr, ast.Constant) and type(expr.value) is int):
            return False
        line = self.source.lines[expr.lineno - 1]
        before = line[:expr.col_offset].rstrip(b" \t\f")
        if not before:
            raise Unsure("an integer at the start of a line: parenthesised or not")
        if not before.endswith(b"("):
            return True
        after = line[expr.end_col_offset:].lstrip(b" \t\f")
        if after.startswith(b")"):
            return False
        if not after or after.startswith(b"#"):
            raise Unsure("an integer after a parenthesis: its closing one is on another line")
        return True

    def counter_hits(self) -> None:  # DebugCounter.leave_Module
        rule = self.kinds.get(DEBUG_COUNTER)
        if rule is None:
            return
        seen: set[tuple[int, str]] = set()
        reads: dict[str, list[Read]] | None = None
        for node, name, lazy, per_call, scope, attribute in self.increments:
            if (scope, name) in seen:
                continue
            seen.add((scope, name))
            verdict = self.counter_verdict(name, lazy, per_call, (scope, name) in self.resets)
            if not verdict:
                continue
            if reads is None:
                reads = {}
                own = {id(inc[0]): inc[1] for inc in self.increments}
                _KeptReads(reads, self.debug_calls, self.debug_guards, own).walk(self.tree, (0,), False, None, None)
            everywhere = attribute or scope == 0 or (scope, name) in self.globals
            if kept_read(reads, self.globals, name, scope, everywhere):
                continue  # kept code reads its value (DebugCounter.leave_Module)
            self.report(rule, node, f"debug counter: {verdict[0]}", verdict[1], None)

    def counter_verdict(self, name: str, lazy: bool, per_call: str | None,
                        reset: bool) -> tuple[str, Severity] | None:
        if name in self.feeds:
            return f"{name} feeds a debug dump or its condition", Severity.HIGH
        if reset:
            return None
        every_call = f" and counts every call of {per_call}()" if per_call else ""
        severity = Severity.HIGH if every_call else Severity.MEDIUM
        if has_marker(name):
            return f"{name} is named as a debug counter{every_call}", severity
        if lazy:
            return f"{name} is created lazily with getattr(..., 0) + 1{every_call}", severity
        return None

    def debugging_helper(self) -> str | None:  # analysis.in_debugging_helper
        for func in reversed(self.functions):
            name = func.name
            if has_marker(name) or any(w.lower() in ("breakpoint", "pdb", "trace") for w in WORD_RE.findall(name)):
                return name
        return None

    def debugger_import(self, node: ast.Import | ast.ImportFrom) -> None:  # DebuggerImport
        rule = self.kinds.get(DEBUGGER_IMPORT)
        if rule is None:
            return
        if isinstance(node, ast.Import):
            modules: list[str] = [alias.name for alias in node.names]
        else:
            modules = [node.module] if not node.level and node.module else []
        for module in modules:
            top = module.split(".", 1)[0]
            if top in DEBUGGER_MODULES:
                self.report(rule, node, f"debugger module {top} imported", rule.SEVERITY, None)

    def dump(self, call: ast.Call, label: str, info: PathInfo | None) -> bool:
        """Report a dump; whether a strong reason makes it debug code (DebugCounter counts it)."""
        reasons = self.reasons(info)
        strong = any(kind is not ReasonKind.SWITCH for kind, _ in reasons)
        if reasons:
            rule = self.kinds.get(DUMP_DEBUG)
            if rule is None:
                return strong
            severity = Severity.HIGH if any(kind is not ReasonKind.SWITCH for kind, _ in reasons) else Severity.MEDIUM
            pattern = artifact_pattern(info.glob) if info else None
            where = ""
            if pattern is None and info is not None and info.in_tmp:
                where = " (the path is too unspecific to look for leftover files)"
            why = "; ".join(text for _, text in reasons)
            self.report(rule, call, f"{label}(): debug dump, {why}{where}", severity, pattern)
        else:
            rule = self.kinds.get(DUMP_PLAIN)
            if rule is not None:
                self.report(rule, call, f"{label}(): serialisation call; review if this file was edited",
                            rule.SEVERITY, artifact_pattern(info.glob) if info else None)
        return strong

    def report(self, rule: type[Rule], call: ast.AST, message: str, severity: Severity, pattern: str | None) -> None:
        self.found.append(Hit(rule.CODE, rule.NAME, severity or rule.SEVERITY, call.lineno,  # type: ignore[attr-defined]  # as above
                              self.source.column(call) + 1, message, pattern))

    # -- why it looks like debug code (analysis.debug_reasons) --------------------------------
    def reasons(self, info: PathInfo | None) -> list[tuple[ReasonKind, str]]:
        reasons = []
        if info is not None and info.in_tmp:
            reasons.append((ReasonKind.TMP_PATH, f"writes to {info.glob}"))
        elif info is not None and info.glob and any(has_marker(raw) for raw in info.raw_literals):
            reasons.append((ReasonKind.DEBUG_PATH, f"writes to a debug path {info.glob}"))
        for func in reversed(self.functions):
            if _is_per_call_name(func.name):
                if any(self.condition(g.test).one_shot & self.set_true(g) for g in self.guards):
                    reasons.append((ReasonKind.PER_CALL,
                                    f"in {func.name}(), behind a one-shot flag: runs once per process"))
                else:
                    reasons.append((ReasonKind.PER_CALL, f"runs on every call of {func.name}()"))
                break
        for guard in reversed(self.guards):
            cond = self.condition(guard.test)
            flags = cond.one_shot & self.set_true(guard) if cond.one_shot else set()
            if len(flags) > 1:
                raise Unsure("which one-shot flag comes first is libcst's traversal order")
            flag = next(iter(flags), None)
            if flag is not None:
                reasons.append((ReasonKind.ONE_SHOT, f"guarded by a one-shot flag ({flag})"))
            if cond.shape:
                reasons.append((ReasonKind.SHAPE, "guarded by a shape condition"))
            switches = cond.markers - flags
            if len(switches) > 1:
                raise Unsure("which marker comes first is libcst's traversal order")
            if switches:
                reasons.append((ReasonKind.SWITCH, f"guarded by a debug switch ({next(iter(switches))})"))
        return reasons

    def condition(self, test: ast.expr) -> _Condition:
        cond = self.conditions.get(id(test))
        if cond is None:
            cond = self.conditions[id(test)] = _Condition(set(), set(), False)
            self._classify(test, cond)
        return cond

    def _classify(self, root: ast.AST, cond: _Condition) -> None:
        """analysis.classify_condition: markers (names, attribute names, keyword and lambda
        parameter names, plain string tokens), flags tested with ``not``, shapes."""
        todo: list[ast.AST] = [root]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                ref = _terminal(node.operand) or self._getattr_ref(node.operand)
                if ref:
                    cond.one_shot.add(ref)
            if isinstance(node, ast.Name):
                self._marker(node.id, cond)
            elif isinstance(node, ast.Attribute):
                self._marker(node.attr, cond)
                if node.attr in SHAPE_ATTRS:
                    cond.shape = True
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SHAPE_METHODS:
                cond.shape = True
            elif isinstance(node, ast.keyword):
                if node.arg:
                    self._marker(node.arg, cond)
            elif isinstance(node, ast.arg):
                self._marker(node.arg, cond)
            elif isinstance(node, ast.FormattedValue):
                # (CPython 3.11 places the nodes inside an f-string's fields loosely: a string
                # literal there is not looked at; libcst's SimpleString would be)
                if any(isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)) for n in ast.walk(node.value)):
                    raise Unsure("a string literal inside an f-string's field")
                todo.append(node.value)
                if isinstance(node.format_spec, ast.JoinedStr):
                    todo.extend(_fields_of(node.format_spec))
                continue
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, (str, bytes)):
                    for is_f, text in self.source.string_tokens(node):
                        if not is_f and has_marker(text):
                            cond.markers.add(text)
                continue
            elif isinstance(node, ast.JoinedStr):
                for is_f, text in self.source.string_tokens(node):
                    if not is_f and has_marker(text):
                        cond.markers.add(text)
                todo.extend(_fields_of(node))
                continue
            todo.extend(ast.iter_child_nodes(node))

    def _marker(self, name: str, cond: _Condition) -> None:
        if has_marker(name):
            cond.markers.add(name)

    def _getattr_ref(self, call: ast.AST) -> str | None:  # analysis.getattr_ref
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "getattr"):
            return None
        args = _args(call)
        if len(args) < 2 or not isinstance(args[0].value, (ast.Name, ast.Attribute)):
            return None
        return self._identifier_string(args[1].value)

    def _identifier_string(self, key: ast.expr) -> str | None:
        """A one-token str literal that is an identifier (libcst's SimpleString)."""
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and len(self.source.string_tokens(key)) == 1:
            return key.value if key.value.isidentifier() else None
        return None

    def _setattr_true(self, call: ast.Call) -> tuple[str, ...]:
        """``setattr(obj, "name", True)``: the name, when it is one plain string token (libcst's SimpleString)."""
        args = _args(call)
        if len(args) == 3 and isinstance(args[2].value, ast.Constant) and args[2].value.value is True:
            key = args[1].value
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and len(self.source.string_tokens(key)) == 1:
                return (key.value,)
        return ()

    def set_true(self, guard: ast.If) -> set[str]:  # analysis.flags_set_true on the body
        out = self.flags.get(id(guard))
        if out is not None:
            return out
        out = set_true(guard.body, self._setattr_true)
        self.flags[id(guard)] = out
        return out


#: A read of a name outside debug code: the scope chain it is in (function ids, outermost
#: first, 0 the module) and, for a read in the value of ``target = ...``, (scope, target).
Read = tuple[tuple[int, ...], "tuple[int, str] | None"]


def kept_read(reads: dict[str, list[Read]], globals_: set[tuple[int, str]], name: str, scope: int,
              everywhere: bool, visiting: frozenset[tuple[int, str]] = frozenset()) -> bool:
    """Whether kept code reads ``name`` (a counter or a name a counter's value went to) of
    ``scope``: a read outside debug code in its function or one nested in it (anywhere with
    ``everywhere``), whose value is not merely assigned to a name kept code does not read."""
    for chain, via in reads.get(name, ()):
        if not everywhere and scope not in chain:
            continue
        if via is None:
            return True
        if via in visiting:
            continue  # a cycle: no kept read comes from it
        if kept_read(reads, globals_, via[1], via[0], via[0] == 0 or via in globals_, visiting | {via}):
            return True
    return False


class _KeptReads:
    """debug_counter._Reads on CPython's tree: the reads of each name (a ``Name`` or an
    ``Attribute`` in ``Load`` context) outside debug calls, the tests of the ifs guarding them and
    the counters' own increments."""

    def __init__(self, out: dict[str, list[Read]], calls: set[int], guards: set[int], own: dict[int, str]):
        self.out, self.calls, self.guards, self.own = out, calls, guards, own

    def walk(self, node: ast.AST, chain: tuple[int, ...], debug: bool, skip: str | None,
             via: tuple[int, str] | None) -> None:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load) and not debug and node.id != skip:
                self.out.setdefault(node.id, []).append((chain, via))
            return
        if isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Load) and not debug and node.attr != skip:
                self.out.setdefault(node.attr, []).append((chain, via))
            self.walk(node.value, chain, debug, skip, via)
            return
        if isinstance(node, ast.Match):
            raise Unsure("match patterns: which names libcst's tree reads there")
        if isinstance(node, ast.Call) and id(node) in self.calls:
            debug = True
        elif isinstance(node, ast.If):
            self.walk(node.test, chain, debug or id(node) in self.guards, skip, via)
            for stmt in (*node.body, *node.orelse):
                self.walk(stmt, chain, debug, skip, via)
            return
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for part in (*node.decorator_list, node.args, *([node.returns] if node.returns else [])):
                self.walk(part, chain, debug, skip, via)
            for stmt in node.body:
                self.walk(stmt, (*chain, id(node)), debug, skip, via)
            return
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            skip = self.own.get(id(node), skip)
            for target in node.targets if isinstance(node, ast.Assign) else (node.target,):
                self.walk(target, chain, debug, skip, via)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                via = (chain[-1], node.targets[0].id)
            self.walk(node.value, chain, debug, skip, via)
            return
        for child in ast.iter_child_nodes(node):
            self.walk(child, chain, debug, skip, via)


_SIMPLE = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Delete, ast.Pass, ast.Break,
           ast.Continue, ast.Raise, ast.Assert, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom)


def _identifiers(expr: ast.AST, out: set[str], lambdas: bool) -> None:
    """The names libcst's tree holds in an expression: names, attribute names, keyword argument
    names, ``True``/``False``/``None`` (libcst's Names); a lambda's parameters and body only with
    ``lambdas`` (analysis.identifiers skips lambdas, classify_condition's names do not)."""
    todo: list[ast.AST] = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
            todo.append(node.value)
        elif isinstance(node, ast.Constant):
            if node.value is None or type(node.value) is bool:
                out.add(repr(node.value))
        elif isinstance(node, ast.Lambda):
            if lambdas:
                a = node.args
                out.update(p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs))
                out.update(p.arg for p in (a.vararg, a.kwarg) if p is not None)
                todo.extend((*a.defaults, *(d for d in a.kw_defaults if d is not None), node.body))
        elif isinstance(node, ast.keyword):
            if node.arg:
                out.add(node.arg)
            todo.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            todo.extend(_fields_of(node))
        elif isinstance(node, ast.FormattedValue):
            todo.append(node.value)
            if isinstance(node.format_spec, ast.JoinedStr):
                todo.extend(_fields_of(node.format_spec))
        else:
            todo.extend(ast.iter_child_nodes(node))


def _fields_of(joined: ast.JoinedStr) -> list[ast.AST]:
    """The replacement fields of an f-string (their expressions and nested fields)."""
    return [v for v in joined.values if isinstance(v, ast.FormattedValue)]


def _open_mode(args: list[_Arg], source: _Source) -> str | None:  # analysis._open_mode
    mode = _argument(args, 1, "mode")
    if mode is None:
        return "r"
    if isinstance(mode, ast.Constant) and isinstance(mode.value, (str, bytes)) and len(source.string_tokens(mode)) == 1:
        return mode.value if isinstance(mode.value, str) else None
    return None


def _is_write_mode(mode: str | None) -> bool:
    return mode is not None and any(c in mode for c in "wax+")


# -- paths (dumppaths._Builder on CPython's tree) -------------------------------------------------


class _PathBuilder:
    def __init__(self, walk: _Walk):
        self.walk = walk
        self.source = walk.source
        self.raw: list[str] = []

    def _literal(self, expr: ast.AST) -> list[tuple[bool, str]] | None:
        """The string tokens of a str/bytes literal or f-string, else None."""
        if isinstance(expr, ast.JoinedStr) or (isinstance(expr, ast.Constant) and isinstance(expr.value, (str, bytes))):
            return self.source.string_tokens(expr)
        return None

    def _is_plain_literal(self, expr: ast.AST) -> bool:
        """libcst's SimpleString or ConcatenatedString (an f-string alone is neither)."""
        tokens = self._literal(expr)
        return tokens is not None and (len(tokens) > 1 or not tokens[0][0])

    def parts(self, expr: ast.AST, depth: int = 0) -> Parts:
        if depth > _MAX_DEPTH:
            return [WILD]
        d = depth + 1
        tokens = self._literal(expr)
        if tokens is not None:
            if len(tokens) == 1 and tokens[0][0]:
                return self._fstring(expr)  # type: ignore[arg-type]  # one f-string token: a JoinedStr
            if any(is_f for is_f, _ in tokens):
                raise Unsure("an f-string concatenated with other strings")
            return self._concatenated([t for _, t in tokens], depth)
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, ast.Add):
                return self.parts(expr.left, d) + self.parts(expr.right, d)
            if isinstance(expr.op, ast.Div):
                return _join([self.parts(expr.left, d), self.parts(expr.right, d)])
            if isinstance(expr.op, ast.Mod) and self._is_plain_literal(expr.left):
                return fill_template(self.parts(expr.left, d), _PERCENT_SPEC, {"%%": "%"})
        if isinstance(expr, ast.Call):
            return self._call(expr, d)
        if isinstance(expr, ast.Name):
            assigned = self.walk.assignments.get(expr.id)
            if assigned is not None and assigned is not expr:
                return self.parts(assigned, d)
        return [WILD]

    def _concatenated(self, tokens: list[str], depth: int) -> Parts:
        """libcst nests implicit concatenation to the right: ``a b c`` is ``(a, (b, c))``."""
        if depth > _MAX_DEPTH:
            return [WILD]
        if len(tokens) == 1:
            self.raw.append(tokens[0])
            value = ast.literal_eval(tokens[0])
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            return [value]
        return self._concatenated(tokens[:1], depth + 1) + self._concatenated(tokens[1:], depth + 1)

    def _fstring(self, expr: ast.JoinedStr) -> Parts:
        text = self.source.segment(expr)
        if "\\" in text or _DEBUG_SPECIFIER.search(text):
            raise Unsure("an f-string with a backslash or a {x=}")
        out: Parts = []
        pending: str | None = None
        for value in expr.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                pending = value.value if pending is None else pending + value.value
                continue
            if pending is not None:
                self._text(pending, out)
                pending = None
            out.append(WILD)
        if pending is not None:
            self._text(pending, out)
        return out

    def _text(self, text: str, out: Parts) -> None:
        self.raw.append(text.replace("{", "{{").replace("}", "}}"))  # its source text
        out.append(text)

    def _call(self, call: ast.Call, depth: int) -> Parts:
        func = call.func
        args = [a.value for a in _args(call) if not a.star and a.keyword is None]
        if isinstance(func, ast.Attribute) and func.attr == "format" and self._is_plain_literal(func.value):
            return fill_template(self.parts(func.value, depth), _BRACE_FIELD, {"{{": "{", "}}": "}"})
        name = self.walk.qualified(func)
        if name in _JOIN_FUNCS or name in _PATH_CLASSES:
            return _join([self.parts(a, depth) for a in args]) if args else [WILD]
        if name in _PASS_THROUGH and len(args) == 1:
            return self.parts(args[0], depth)
        if isinstance(func, ast.Attribute) and func.attr in ("joinpath", "with_suffix"):
            base = self.parts(func.value, depth)
            rest = [self.parts(a, depth) for a in args]
            if func.attr == "joinpath":
                return _join([base, *rest])
            return base + [WILD] + (rest[0] if rest else [])
        return [WILD]

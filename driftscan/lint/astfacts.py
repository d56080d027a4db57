"""Second-stage prefilter: what the rules *could* report, read off CPython's syntax tree.

A byte trigger (triggers.py) holds for far more files than have findings: ``json.dump(`` and
``.save(`` of a model's own method match the serialisation trigger, ``count += 1`` next to a
``/tmp`` in a docstring matches the counter's. CPython's parser is native and builds no concrete
syntax tree — ten to twenty times libcst's speed — so a file a byte trigger lets through is
parsed by it first, and one pass over its tree decides, for each rule, whether the rule could
report anything (``AstCheck``, a rule's ``AST_CHECK``). Only then does libcst see the file.

Every check is a *superset* of its rule: it emulates the rule's decisions (the names a call
resolves to through the file's imports, the increments and flags it looks for) and leaves out
only the parts that narrow a finding down (whether a path is under /tmp, a debug reason, a
reset). Name resolution takes every import of the file at once, where the rules see the imports
walked so far. CPython's tree has the same statements, calls and names as libcst's; a file it
rejects (newer syntax than the interpreter's, or none at all) always passes.

This module does not import libcst (a worker that only prefilters never needs it). The names
below repeat analysis.py's and context.py's; a test compares them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from bisect import bisect_left
from dataclasses import dataclass

from .triggers import Memo, python_ast

from .vocabulary import (  # noqa: F401 - the rules' vocabulary (vocabulary.py), shared with analysis.py
    DEBUGGER_FUNCTIONS, DEBUGGER_METHODS, DEBUGGER_MODULES, DUMP_FUNCTIONS, EPHEMERAL, MARKER_WORDS, OPEN_FUNCTIONS,
    SHAPE_ATTRS, SHAPE_METHODS)
from .vocabulary import WORD_RE as _WORD_RE

# -- as in context.py and dumppaths.py (tests/lint/test_astfacts.py checks) -------------------
DEFAULT_ALIASES = {"np": "numpy", "pd": "pandas", "F": "torch.nn.functional"}
TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
#: The last part of every name in DUMP_FUNCTIONS, DEBUGGER_FUNCTIONS and OPEN_FUNCTIONS, and the
#: method names the rules look at: a call ending in none of these can be no action.
_LAST_PARTS = frozenset(n.rpartition(".")[2] for n in {*DUMP_FUNCTIONS, *DEBUGGER_FUNCTIONS, *OPEN_FUNCTIONS}) | {
    "tofile", "write_text", "write_bytes"} | DEBUGGER_METHODS


def has_marker(text: str) -> bool:
    return any(w.lower() in MARKER_WORDS for w in _WORD_RE.findall(text))


@dataclass(frozen=True)
class Facts:
    """For each rule family, whether it could report on the file."""

    dump: bool  # a call that can be a dump (DBG101, DBG102)
    counter: bool  # an increment DBG103 could report
    one_shot: bool  # an ``if not flag:`` setting the flag that DBG104 could report
    debugger: bool  # a call that can be a debugger call (DBG106)
    debugger_import: bool  # an import of a debugger module (DBG107)
    tmp_write: bool  # a call that can write to a temporary path (DBG108)
    print_statement: bool  # ``print(...)`` as a statement (DBG109)
    shape_guard: bool  # an ``if`` on a shape whose body can hold an action or a print (DBG105)


ALL = Facts(True, True, True, True, True, True, True, True)


def facts(data: bytes, memo: Memo | None = None) -> Facts:
    """The facts of ``data`` (once per file with a memo); all true when CPython cannot parse it."""
    if memo is not None and "ast-facts" in memo:
        remembered: Facts = memo["ast-facts"]
        return remembered
    tree = python_ast(data, memo)
    found = ALL if tree is None else _facts(tree)
    if memo is not None:
        memo["ast-facts"] = found
    return found


class AstCheck:
    """A rule's ``AST_CHECK``: true when the rule could report something on the file (see the
    module docstring). Checked only after the rule's byte trigger held."""

    def __init__(self, *fields: str, label: str = ""):
        self.fields = fields
        self.label = label or " or ".join(fields)

    def matches(self, data: bytes, memo: Memo | None = None) -> bool:
        found = facts(data, memo)
        return any(getattr(found, f) for f in self.fields)

    def describe(self) -> str:
        return self.label


DUMP_CALL = AstCheck("dump", label="a call that can be a dump")
COUNTER = AstCheck("counter", label="an increment of a counter that can be a debug counter")
ONE_SHOT = AstCheck("one_shot", label="a one-shot flag that can guard debug code")
DEBUGGER_CALL = AstCheck("debugger", label="a call that can be a debugger call")
DEBUGGER_IMPORT = AstCheck("debugger_import", label="an import of a debugger module")
TMP_WRITE = AstCheck("tmp_write", label="a call that can write to a temporary path")
SHAPE_GUARD = AstCheck("shape_guard", label="a shape condition that can guard an action")
PRINT_STATEMENT = AstCheck("print_statement", label="a print() statement")


# -- the pass -----------------------------------------------------------------------------------
# Fields that hold no node a check looks at: contexts and operators (read where needed), names.
_NOT_CHILDREN = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "names", "module", "level", "kind",
                           "type_comment", "conversion", "is_async", "kwd_attrs", "value", "n", "s"})
_INTERESTING = (ast.Call, ast.If, ast.AugAssign, ast.Assign, ast.AnnAssign, ast.Expr, ast.With, ast.AsyncWith,
                ast.Import, ast.ImportFrom)
_children: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = _children.get(kind)
    if fields is None:
        names = getattr(kind, "_fields", ())
        # "value" is a node everywhere but in Constant (and MatchSingleton); "names" in Import(From)
        # holds aliases, which carry nothing a check reads beyond what the import itself gives.
        fields = tuple(f for f in names if f not in _NOT_CHILDREN
                       or (f == "value" and kind not in (ast.Constant, ast.MatchSingleton)))
        _children[kind] = fields
    return fields


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes the checks look at (calls, ifs, assignments, statements, imports), every one
    of them in the tree, in no particular order: ast.walk, without contexts, operators and
    leaves, at about half its cost."""
    interesting = frozenset(_INTERESTING)
    todo: list[ast.AST] = [tree]
    pop, push, extend = todo.pop, todo.append, todo.extend
    AST = ast.AST
    children = _children
    while todo:
        node = pop()
        kind = type(node)
        fields = children.get(kind)
        if fields is None:
            fields = _child_fields(kind)
        for f in fields:
            value = getattr(node, f)
            if type(value) is list:
                extend(value)
            elif isinstance(value, AST):
                push(value)
        if kind in interesting:
            yield node


def _dotted(expr: ast.AST) -> str | None:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def _terminal(expr: ast.AST) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def _is_int(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and type(expr.value) is int  # not True/False


def _is_getattr(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "getattr"


def _strings(call: ast.Call) -> set[str]:
    """Every string constant among a call's arguments."""
    values = [*call.args, *(k.value for k in call.keywords)]
    return {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)}


def _names(expr: ast.AST) -> set[str]:
    """Every name and attribute name in an expression (analysis.identifiers, and more)."""
    out = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
    return out


def _start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]  # ast.AST has no positions: its expr and stmt do


def _stmt_start(node: ast.stmt) -> tuple[int, int]:
    """Where a statement's source starts: its decorators come before its ``def`` line."""
    decorators = getattr(node, "decorator_list", None)
    return min([_start(node), *map(_start, decorators)]) if decorators else _start(node)


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]  # as above


def _facts(tree: ast.Module) -> Facts:
    calls: list[ast.Call] = []  # calls whose last name part can make them an action
    ifs: list[ast.If] = []
    increments: list[tuple[ast.AST, str, bool]] = []  # (node, name, lazy)
    bases: dict[str, set[str]] = {}  # local name -> every dotted name an import binds it to
    assigned: dict[str, list[ast.expr]] = {}  # name -> every value assigned to it (paths in variables)
    prints: list[ast.Call] = []  # print(...) statements
    statements: set[int] = set()  # ids of the calls that are a statement of their own
    withs: list[ast.With | ast.AsyncWith] = []  # those that bind a name
    remembered: dict[str, list[tuple[tuple[int, int], ast.expr | None]]] = {}  # FileContext.assignments' history
    debugger_import = False
    for node in _nodes(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and func.attr in _LAST_PARTS):
                calls.append(node)  # a bare name can be an alias of anything
        elif isinstance(node, ast.If):
            ifs.append(node)
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.op, ast.Add) and _is_int(node.value):
                name = _terminal(node.target)
                if name:
                    increments.append((node, name, False))
        elif isinstance(node, ast.Assign):
            _assign(node, increments)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                remembered.setdefault(node.targets[0].id, []).append((_start(node), node.value))
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name) and node.value is not None:
                assigned.setdefault(node.target.id, []).append(node.value)
                remembered.setdefault(node.target.id, []).append((_start(node), node.value))
        elif isinstance(node, ast.Expr):
            value = node.value
            if isinstance(value, ast.Call):
                statements.add(id(value))
                if isinstance(value.func, ast.Name) and value.func.id == "print":
                    prints.append(value)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            if any(isinstance(item.optional_vars, ast.Name) for item in node.items):
                withs.append(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] in DEBUGGER_MODULES:
                    debugger_import = True
                if alias.asname:
                    bases.setdefault(alias.asname, set()).add(alias.name)
                else:
                    head = alias.name.partition(".")[0]
                    bases.setdefault(head, set()).add(head)
        elif isinstance(node, ast.ImportFrom):
            if not node.level and node.module:
                module = node.module
                if module.partition(".")[0] in DEBUGGER_MODULES:
                    debugger_import = True
                for alias in node.names:
                    if alias.name != "*":
                        bases.setdefault(alias.asname or alias.name, set()).add(f"{module}.{alias.name}")

    def qualified(func: ast.AST) -> set[str]:
        dotted = _dotted(func)
        if dotted is None:
            return set()
        head, dot, rest = dotted.partition(".")
        heads = bases.get(head, set()) | {DEFAULT_ALIASES.get(head) or head}
        return {f"{h}.{rest}" if dot else h for h in heads}

    def ephemeral_call(expr: ast.AST | None) -> bool:
        if not isinstance(expr, ast.Call):
            return False
        names = qualified(expr.func)
        return bool(names) and names <= EPHEMERAL

    def ephemeral(call: ast.Call, index: int, keyword: str) -> bool:
        """The dump's file argument is certainly a buffer or a self-deleting file, as
        analysis._is_ephemeral sees it: directly, through the innermost enclosing ``with``
        that binds its name, or else the value last assigned to the name before the call
        (libcst's walk meets statements in source order, so "before" is by position; only
        for a call that is a statement of its own, which no decorator can hold)."""
        target = next((k.value for k in call.keywords if k.arg == keyword), None)
        if target is None:
            positional = [a for a in call.args if not isinstance(a, ast.Starred)]
            target = positional[index] if index < len(positional) else None
        if not isinstance(target, ast.Name):
            return ephemeral_call(target)
        name, at = target.id, _start(call)
        bound = None  # the innermost enclosing with binding the name
        for node in withs:
            if _stmt_start(node.body[0]) <= at <= _end(node.body[-1]) and (
                bound is None or _start(node) > _start(bound[0])
            ):
                item = next((i for i in node.items if isinstance(i.optional_vars, ast.Name)
                             and i.optional_vars.id == name), None)
                if item is not None:
                    bound = (node, item.context_expr)
        if bound is not None and isinstance(bound[1], ast.Call):
            return ephemeral_call(bound[1])
        if id(call) not in statements:
            return False
        before = [entry for entry in remembered.get(name, ()) if entry[0] < at]
        return bool(before) and ephemeral_call(max(before, key=lambda entry: entry[0])[1])

    dump = debugger = tmp_write = False
    actions: list[ast.Call] = []  # calls that can be a dump, a debugger call or a write
    for call in calls:
        func = call.func
        names = qualified(func)
        attr = func.attr if isinstance(func, ast.Attribute) else None
        is_dump = attr == "tofile" or not names.isdisjoint(DUMP_FUNCTIONS)
        if is_dump and not dump:  # a serialisation into memory or a self-deleting file is no dump
            where = {DUMP_FUNCTIONS[n] for n in names if n in DUMP_FUNCTIONS}
            if attr == "tofile":
                where.add((0, "fid"))  # analysis.classify_call: a name not in DUMP_FUNCTIONS
            # (still an action below, for the other rules' facts: a superset)
            dump = not all(ephemeral(call, *w) for w in where)
        is_debugger = (not names.isdisjoint(DEBUGGER_FUNCTIONS) or attr in DEBUGGER_METHODS
                       or any(n.rpartition(".")[2] in DEBUGGER_METHODS for n in names))
        is_write = (
            (isinstance(func, ast.Attribute) and attr in ("write_text", "write_bytes") and _tmp_path(func.value, assigned))
            or (not names.isdisjoint(OPEN_FUNCTIONS) and _write_mode(call)
                and any(_tmp_path(a, assigned) for a in (*call.args, *(k.value for k in call.keywords)))))
        if is_dump or is_debugger or is_write:
            actions.append(call)
            debugger |= is_debugger
            tmp_write |= is_write

    # Which ifs guard an action (the action is in the if's body): by position in the source.
    starts = sorted(_start(c) for c in actions)
    guarding = [node for node in ifs if _holds_one(node, starts)]
    with_prints = sorted([*starts, *(_start(c) for c in prints)])
    shape_guard = any(_shape_test(node.test) and _holds_one(node, with_prints) for node in ifs)
    counter = False
    if increments:
        feeds: set[str] = set()  # what DebugCounter's feeds_debug can hold
        for call in actions:
            for value in (*call.args, *(k.value for k in call.keywords)):
                feeds |= _names(value)
        for node in guarding:
            feeds |= _names(node.test)
        counter = any(lazy or name in feeds or has_marker(name) for _, name, lazy in increments)
    guarding_ids = {id(node) for node in guarding}
    one_shot = False
    for node in ifs:
        flags = _tested_with_not(node.test)
        if flags:
            flags &= set_true(node.body)
            if flags and (id(node) in guarding_ids or any(has_marker(f) for f in flags)):
                one_shot = True
                break
    return Facts(dump, counter, one_shot, debugger, debugger_import, tmp_write, bool(prints), shape_guard)


def _holds_one(node: ast.If, starts: list[tuple[int, int]]) -> bool:
    """One of ``starts`` (sorted) is in the if's body."""
    if not starts:
        return False
    i = bisect_left(starts, _stmt_start(node.body[0]))
    return i < len(starts) and starts[i] <= _end(node.body[-1])


def _shape_test(test: ast.expr) -> bool:
    """The test reads a shape (analysis.classify_condition's ``shape``)."""
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr in SHAPE_ATTRS:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SHAPE_METHODS:
            return True
    return False


def _tmp_path(expr: ast.expr, assigned: dict[str, list[ast.expr]]) -> bool:
    """The path expression can be under a temporary directory: a string in it, or in a value
    assigned to a name it uses (anywhere in the file), holds one (dumppaths.PathInfo.in_tmp
    needs that in a literal's source text, which holds it only if the string does)."""
    todo: list[ast.AST] = [expr]
    seen: set[str] = set()
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if isinstance(value, str) and any(d in value for d in TMP_DIRS):
                return True
        elif isinstance(node, ast.Name) and node.id not in seen:
            seen.add(node.id)
            todo.extend(assigned.get(node.id, ()))
        todo.extend(ast.iter_child_nodes(node))
    return False


def _assign(node: ast.Assign, increments: list[tuple[ast.AST, str, bool]]) -> None:
    """``x = x + 1``, ``x = 1 + x``, ``x = getattr(o, "x", 0) + 1`` (DebugCounter.visit_Assign)."""
    if len(node.targets) != 1:
        return
    target, value = node.targets[0], node.value
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)):
        return
    if not isinstance(target, (ast.Name, ast.Attribute)):
        return
    for other, const in ((value.left, value.right), (value.right, value.left)):
        if not _is_int(const):
            continue
        name = _terminal(target)
        if _dotted(other) is not None and _dotted(other) == _dotted(target):
            increments.append((node, name, False))  # type: ignore[arg-type]  # a Name or Attribute has a terminal name
        elif _is_getattr(other):
            increments.append((node, name, True))  # type: ignore[arg-type]  # as above
        return


def _write_mode(call: ast.Call) -> bool:
    """``open``'s mode can be a write mode: a literal string with w, a, x or + (analysis._open_mode)."""
    mode = next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        positional = [a for a in call.args if not isinstance(a, ast.Starred)]
        mode = positional[1] if len(positional) > 1 else None
    return (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
            and any(c in mode.value for c in "wax+"))


def _tested_with_not(test: ast.AST) -> set[str]:
    """Names tested with ``not`` (analysis.classify_condition's one_shot; for getattr, every
    string argument)."""
    out: set[str] = set()
    for node in ast.walk(test):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            operand = node.operand
            name = _terminal(operand)
            if name:
                out.add(name)
            elif _is_getattr(operand):
                out |= _strings(operand)  # type: ignore[arg-type]  # _is_getattr: a Call
    return out


def set_true(body: list[ast.stmt], setattr_names: Callable[[ast.Call], Iterable[str]] | None = None) -> set[str]:
    """Names a block sets to True, not in nested functions and classes (analysis.flags_set_true).
    ``setattr_names``: what a ``setattr(...)`` call adds (default: every string argument, the
    superset; astdump passes libcst's exact reading)."""
    setattr_names = setattr_names or _strings
    out: set[str] = set()
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is True:
            out.update(filter(None, (_terminal(t) for t in node.targets)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            out.update(setattr_names(node))
        todo.extend(ast.iter_child_nodes(node))
    return out

"""Statement-level removal of injected debug code from an edited Python file.

``excise(base, ours, findings)`` takes the original (``base``), the edited file (``ours``) and the
positions of the injected debug findings in ``ours``, and removes from ``ours``:

1. the statement that makes up each finding — the innermost statement holding its position
   (the ``torch.save(...)`` call, the counter increment); a finding in the header of a ``with``
   or ``for`` (``with open("/tmp/…") as f:``) takes the whole block; a finding in the test of an
   ``if``/``while`` (a one-shot flag, a shape condition) marks that statement as a *guard*;
2. then, to a fixed point: a block every statement of which is removed (a guard whose body was
   only debug code, a ``with`` whose body is gone); an added import, assignment or counter whose
   names nothing kept reads any more but removed code (or a guard's test) did — the one-shot
   class-level flags, ``self._n = 0``, ``import json`` — when its value has no visible effect
   (no call but to a short list of pure ones); an added bare call of a function removed above;
3. the added comment and blank lines left alone around what was removed.

Only lines the change base → ours added may go: a statement holding an original line is never
removed (the finding stays, and the caller refuses the file). Everything else the patch added is
kept. The result must parse. Pure: ``str`` in, values out, no I/O; the syntax tree is ``ast``'s.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from .patching import added_line_numbers, split_lines

# Calls whose value an assignment may hold and still be removed as unused: they read, format or
# convert, and change nothing (a ``cfg.pop(...)`` or ``x.update(...)`` is never among them).
_NAME_STRING = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
PURE_CALLS = frozenset({
    "str", "repr", "int", "float", "bool", "len", "getattr", "hasattr", "isinstance", "type", "id", "format",
    "tuple", "list", "dict", "set", "frozenset", "sorted", "min", "max", "sum", "abs", "round", "range",
    "join", "basename", "dirname", "abspath", "getpid", "time", "perf_counter", "monotonic", "Path",
    "detach", "cpu", "clone", "numpy", "tolist", "item", "size", "dim", "float", "contiguous", "to",
    "getenv", "get",
})
_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()) \
    + ((ast.Match,) if hasattr(ast, "Match") else ())


@dataclass(frozen=True)
class Removed:
    """One statement taken out: its lines in ``ours`` (1-based, inclusive), its first line, why."""

    start: int
    end: int
    text: str
    reason: str


@dataclass(frozen=True)
class Excision:
    text: str | None  # the result; None when refused
    removed: tuple[Removed, ...] = ()
    kept: tuple[tuple[int, int], ...] = ()  # added line ranges of ``ours`` that stay
    refused: str | None = None
    left: tuple[tuple[int, str], ...] = ()  # findings whose statement could not be removed: (line, why)


@dataclass
class _Stmt:
    node: ast.stmt
    first: int
    last: int
    depth: int
    parent: _Stmt | None
    blocks: list[list[ast.stmt]]  # the statement lists it holds (body, orelse, handlers' bodies, ...)


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    out: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            out.append(value)
    for handler in getattr(node, "handlers", None) or ():
        out.append(handler.body)
    for case in getattr(node, "cases", None) or ():
        out.append(case.body)
    return out


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or ()
    return min([node.lineno, *(d.lineno for d in decorators)])


def _index(tree: ast.Module) -> list[_Stmt]:
    out: list[_Stmt] = []

    def visit(stmts: Sequence[ast.stmt], depth: int, parent: _Stmt | None) -> None:
        for node in stmts:
            info = _Stmt(node, _first_line(node), node.end_lineno or node.lineno, depth, parent, _blocks(node))
            out.append(info)
            for block in info.blocks:
                visit(block, depth + 1, info)

    visit(tree.body, 0, None)
    return out


def _own_nodes(node: ast.stmt) -> Iterator[ast.AST]:
    """The expression nodes of a statement itself, not those of the statements it holds."""
    nested = {id(s) for block in _blocks(node) for s in block}
    stack: list[ast.AST] = [c for c in ast.iter_child_nodes(node) if id(c) not in nested]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.ExceptHandler,)) or (hasattr(ast, "match_case") and isinstance(n, ast.match_case)):
            stack.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.stmt))
            continue
        if isinstance(n, ast.stmt):
            continue
        yield n
        stack.extend(ast.iter_child_nodes(n))


def _reads(node: ast.stmt) -> Counter[str]:
    """Names and attribute names a statement's own expressions read (or mention in a string)."""
    out: Counter[str] = Counter()
    if isinstance(node, ast.AugAssign):  # a counter reads what it increments
        target = node.target
        out[target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")] += 1
    for n in _own_nodes(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
            out[n.id] += 1
        elif isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Store):
            out[n.attr] += 1
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and _NAME_STRING.fullmatch(n.value):
            # a name handed over as a string (getattr(self, "_n"), import_module("json")) is a use;
            # prose and patterns ("*.json", "the model's config.json") are not
            out.update(n.value.split("."))
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        out.update(node.names)
    return out


def _mentions(node: ast.stmt) -> Counter[str]:
    """Every name a statement's own expressions mention, stored or read."""
    out = _reads(node)
    for n in _own_nodes(node):
        if isinstance(n, ast.Name):
            out[n.id] += 1
        elif isinstance(n, ast.Attribute):
            out[n.attr] += 1
    return out


def _target_names(target: ast.expr) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Attribute):
        return [target.attr]
    if isinstance(target, (ast.Tuple, ast.List)):
        return _all_names(target.elts)
    return None  # a subscript: a mutation of something else, not a definition


def _all_names(targets: Sequence[ast.expr]) -> list[str] | None:
    """Every name the targets bind, or None when one of them is not a plain definition."""
    names: list[str] = []
    for t in targets:
        sub = _target_names(t)
        if sub is None:
            return None
        names += sub
    return names


def _pure(value: ast.AST | None) -> bool:
    if value is None:
        return True
    for n in ast.walk(value):
        if isinstance(n, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda)):
            return False
        if isinstance(n, ast.Call):
            func = n.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name not in PURE_CALLS:
                return False
    return True


def _defines(node: ast.stmt) -> list[str] | None:
    """The names an import or a side-effect-free assignment defines; None for any other statement."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"] or None
    if isinstance(node, ast.Assign) and _pure(node.value):
        return _all_names(node.targets)
    if isinstance(node, ast.AnnAssign) and _pure(node.value):
        return _target_names(node.target)
    if isinstance(node, ast.AugAssign) and _pure(node.value):
        return _target_names(node.target)
    return None


def _binds(node: ast.stmt) -> list[str]:
    """Plain names (not attributes) a statement binds in its scope."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        return [node.name, *(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x)]
    if isinstance(node, ast.ClassDef):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    return [n.id for n in _own_nodes(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _byte_column(line: str, column: int) -> int:
    return len(line[: max(column - 1, 0)].encode("utf-8"))


def _contains(node: ast.stmt, line: int, col: int, first: int) -> bool:
    start = (first, 0) if first < node.lineno else (node.lineno, node.col_offset)
    end = (node.end_lineno or node.lineno, node.end_col_offset if node.end_col_offset is not None else 1 << 30)
    return start <= (line, col) < end or (line, col) == start


def excise(base: str, ours: str, findings: Sequence[tuple[int, int]], *,
           keep_names: Collection[str] = ()) -> Excision:
    """``ours`` without the statements of the injected ``findings`` ((line, 1-based column) in
    ``ours``) and the added code only they used (see the module docstring). ``keep_names``: names
    other modules read (a patch's ``RETRIES = 5`` another file imports): what defines them stays."""
    keep = frozenset(keep_names)
    if re.search(r"\r(?!\n)", ours):  # Python ends a line there, the patch's lines do not: numbers would differ
        return Excision(None, refused="the saved content has a carriage return that does not end a line: "
                                      "statements cannot be matched to lines safely; merge by hand")
    try:
        tree = ast.parse(ours)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return Excision(None, refused=f"the saved content does not parse ({type(exc).__name__}: {exc})")
    lines = split_lines(ours)
    added = added_line_numbers(base, ours)
    stmts = _index(tree)
    by_id = {id(s.node): s for s in stmts}

    def all_added(s: _Stmt) -> bool:
        return all(n in added for n in range(s.first, s.last + 1))

    dropped: dict[int, str] = {}  # id(node) → why
    guards: dict[int, str] = {}
    left: list[tuple[int, str]] = []
    for line, column in findings:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        col = _byte_column(text, column)
        holding = [s for s in stmts if s.first <= line <= s.last and _contains(s.node, line, col, s.first)]
        if not holding:
            holding = [s for s in stmts if s.first <= line <= s.last]
        if not holding:
            left.append((line, "no statement holds it"))
            continue
        s = max(holding, key=lambda h: h.depth)
        header = bool(s.blocks)
        if header and isinstance(s.node, (ast.If, ast.While)):
            guards[id(s.node)] = f"finding at line {line}"
            continue
        if header and not isinstance(s.node, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor)):
            left.append((line, f"in the header of a {type(s.node).__name__.lower()} statement (lines "
                               f"{s.first}-{s.last}): which part is debug code cannot be told"))
            continue
        if not all_added(s):
            left.append((line, f"its statement (lines {s.first}-{s.last}) holds lines of the original"))
            continue
        dropped.setdefault(id(s.node), f"debug finding at line {line}")

    def gone(s: _Stmt) -> bool:
        p: _Stmt | None = s
        while p is not None:
            if id(p.node) in dropped:
                return True
            p = p.parent
        return False

    seeds = dict(dropped)
    while True:  # a guard that stays (its body keeps other code) reads its flags like kept code
        dropped = dict(seeds)
        while True:
            more: dict[int, str] = {}
            live = [s for s in stmts if not gone(s)]
            kept_reads: Counter[str] = Counter()
            own: dict[int, Counter[str]] = {}
            for s in live:
                reads = _reads(s.node)
                if id(s.node) in guards and isinstance(s.node, (ast.If, ast.While)):
                    reads = Counter()  # a guard's test is debug code's own use, not a kept one
                own[id(s.node)] = reads
                kept_reads.update(reads)
            debug_mentions: Counter[str] = Counter()
            for s in stmts:
                if gone(s):
                    debug_mentions.update(_mentions(s.node))
                elif id(s.node) in guards:
                    debug_mentions.update(_mentions(s.node))
            removed_binds = {n for s in stmts if gone(s) for n in _binds(s.node)}
            live_binds = {n for s in live for n in _binds(s.node)}
            for s in live:
                if not all_added(s):
                    continue
                key = id(s.node)
                if s.blocks:
                    if all(all(id(x) in dropped or gone(by_id[id(x)]) for x in block) for block in s.blocks):
                        more[key] = "a block whose body was only debug code" if key not in guards \
                            else f"a guard of debug code ({guards[key]}) whose body was only debug code"
                    continue
                names = _defines(s.node)
                if names:
                    rest = kept_reads - own[key]
                    if all(rest[n] == 0 and debug_mentions[n] > 0 and n not in keep for n in names):
                        more[key] = f"defines {', '.join(dict.fromkeys(names))}, used only by removed code"
                        continue
                if isinstance(s.node, ast.Expr) and isinstance(s.node.value, ast.Call):
                    func = s.node.value.func
                    name = func.id if isinstance(func, ast.Name) else None
                    if name and name in removed_binds and name not in live_binds:
                        more[key] = f"calls {name}, which was removed"
            if not more:
                break
            dropped.update(more)
        staying = [g for g in guards if not gone(by_id[g])]
        if not staying:
            break
        for g in staying:
            del guards[g]

    # Outermost removed statements and their lines.
    top = [s for s in stmts if id(s.node) in dropped and not (s.parent is not None and gone(s.parent))]
    remove: set[int] = set()
    for s in top:
        remove.update(range(s.first, s.last + 1))
    for s in stmts:  # a line is removed whole: it must not hold a statement that stays
        if gone(s):
            continue
        span = range(s.first, max(_first_line(s.blocks[0][0]), s.first + 1)) if s.blocks else range(s.first, s.last + 1)
        shared = sorted(n for n in span if n in remove)
        if shared:
            return Excision(None, refused=f"line {shared[0]} holds both debug code and code that stays "
                                          f"(lines {s.first}-{s.last}); merge by hand", left=tuple(left))
    code: set[int] = set()
    for s in stmts:
        if s.blocks:
            body_first = _first_line(s.blocks[0][0])
            code.update(range(s.first, max(s.first, body_first - 1) + 1))
        else:
            code.update(range(s.first, s.last + 1))
    # Runs of added lines whose every code line goes take their comments and blank lines along.
    number = 1
    while number <= len(lines):
        if number not in added:
            number += 1
            continue
        end = number
        while end + 1 in added:
            end += 1
        run = range(number, end + 1)
        code_lines = [n for n in run if n in code]
        if code_lines and all(n in remove for n in code_lines):
            remove.update(run)
        number = end + 1
    # Added comment lines right above a removed statement go with it.
    for s in top:
        n = s.first - 1
        while n in added and n not in code and n not in remove and lines[n - 1].strip().startswith("#"):
            remove.add(n)
            n -= 1
    assert remove <= added, "only added lines are removed"
    result = "".join(line for n, line in enumerate(lines, 1) if n not in remove)
    removed = tuple(Removed(s.first, s.last, " ".join(lines[s.first - 1].split())[:100], dropped[id(s.node)])
                    for s in sorted(top, key=lambda t: t.first))
    kept = tuple(_ranges(sorted(added - remove)))
    try:
        ast.parse(result)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return Excision(None, removed, kept, refused=f"without the debug code the file does not parse "
                                                     f"({type(exc).__name__}: {exc}); merge by hand",
                        left=tuple(left))
    dangling = sorted(n for n in removed_binds - live_binds if _reads_in(result, n))
    if dangling:
        return Excision(None, removed, kept, refused="kept code uses " + ", ".join(dangling)
                        + ", defined only by the removed debug code; merge by hand", left=tuple(left))
    if left:
        return Excision(None, removed, kept, refused="debug code that cannot be removed statement by statement: "
                        + "; ".join(f"line {n}: {why}" for n, why in left), left=tuple(left))
    return Excision(result, removed, kept)


def _reads_in(text: str, name: str) -> bool:
    tree = ast.parse(text)
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(tree))


def _ranges(numbers: Sequence[int]) -> Iterator[tuple[int, int]]:
    start = prev = None
    for n in numbers:
        if start is None:
            start = prev = n
        elif n == prev + 1:  # type: ignore[operator]
            prev = n
        else:
            yield start, prev  # type: ignore[misc]
            start = prev = n
    if start is not None:
        yield start, prev  # type: ignore[misc]

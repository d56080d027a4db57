"""Statement-level removal of injected debug code from an edited Python file.

``excise(base, ours, findings)`` takes the original (``base``), the edited file (``ours``) and the
positions of the injected debug findings in ``ours``, and removes from ``ours``:

1. the statement that makes up each finding — the innermost statement holding its position
   (the ``torch.save(...)`` call, the counter increment); a finding in the header of a ``with``
   or ``for`` (``with open("/tmp/…") as f:``) takes the whole block; a finding in the test of an
   ``if``/``while`` (a one-shot flag, a shape condition) marks that statement as a *guard*, and so
   does removed code inside an added ``if``/``while`` without ``else`` and with a test that has no
   effect (``if os.environ.get("DUMP"):``). A guard's test is debug code's own use of the names
   it reads. A finding on an assignment whose value code that stays reads (``y = y + 1`` that is
   also returned) is a fix: it stays, in ``left``, and the caller refuses the file;
2. then, over a worklist (reads and binds are counted once per statement; dropping a statement
   updates the counts and revisits only what defines or calls the names it touched): a block
   whose statements are all removed or mere *filler* — ``pass``, a constant, a ``print`` or an
   ``os.makedirs``/``mkdir`` with plain arguments — and whose header has no effect (a guard, a
   ``with torch.no_grad():``, a ``try`` whose handlers only ``pass``, a ``for`` over a tuple); an
   added import, assignment, counter or ``global`` whose names nothing kept reads any more but
   removed code (or a guard's test) did — the one-shot flag set in the guard and its class-level
   ``False``, ``self._n = 0``, the dump's path, ``import json`` — when its value has no visible
   effect (no call but to a short list of pure ones; ``.to()`` only after ``.detach()``/
   ``.cpu()``/``.clone()``, as ``model.to("cuda")`` moves the module itself); an added
   ``os.makedirs`` of the directory a removed dump wrote into, or of a path only removed code
   used; an added bare call of a function removed above (a helper only debug code called).
   A guard that stays (its body keeps other code) reads its names like kept code: the removal
   is redone without it;
3. the added comment and blank lines left alone around what was removed;
4. a change whose only difference from the original left is scaffolding of the debug code
   (``out = self.attn(x)`` / ``return out`` where the original has ``return self.attn(x)``) is
   put back to the original's lines, when the two are the same syntax tree once a function's
   temporary, assigned once and read once as the first thing the next statement evaluates, is
   inlined; a ``Removed`` says so.

Only lines the change base → ours added may go: a statement holding an original line is never
removed (the finding stays, and the caller refuses the file). Everything else the patch added is
kept. The result must parse. The work is bounded: more than ``MAX_STATEMENTS`` statements or
``MAX_WORK`` visits and the file is refused (merge by hand). Pure: ``str`` in, values out, no
I/O; the syntax tree is ``ast``'s.
"""

from __future__ import annotations

import ast
import copy
import re
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field

from ..formats.linediff import BudgetedMatcher, DiffTooLarge
from ..formats.patch import added_line_numbers, split_lines

# Calls whose value an assignment may hold and still be removed as unused: they read, format or
# convert, and change nothing (a ``cfg.pop(...)`` or ``x.update(...)`` is never among them).
_NAME_STRING = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
PURE_CALLS = frozenset({
    "str", "repr", "int", "float", "bool", "len", "getattr", "hasattr", "isinstance", "type", "id", "format",
    "tuple", "list", "dict", "set", "frozenset", "sorted", "min", "max", "sum", "abs", "round", "range",
    "join", "basename", "dirname", "abspath", "getpid", "time", "perf_counter", "monotonic", "Path",
    "detach", "cpu", "clone", "numpy", "tolist", "item", "size", "dim", "float", "contiguous", "to",
    "getenv", "get", "enumerate", "zip", "items", "keys", "values", "exists", "isdir", "environ",
    # read-only tests a debug guard is made of (``if name.endswith(".weight"):``)
    "startswith", "endswith", "lower", "upper", "strip", "lstrip", "rstrip", "split", "replace", "count",
    "find", "any", "all", "numel", "isnan", "isinf", "is_floating_point", "is_contiguous", "allclose",
    "equal", "norm", "mean", "std",
})
# Methods that convert in place when called on an ``nn.Module`` (``model.to("cuda")``, ``model.float()``):
# pure only on a chain that already copied.
_CONVERSIONS = frozenset({"to", "float", "half", "double", "bfloat16", "cuda", "type"})
_COPIES = frozenset({"detach", "cpu", "clone", "numpy", "tolist", "copy", "deepcopy"})
# Bounds: beyond them the file is refused (merge by hand) rather than worked on without end.
MAX_STATEMENTS = 50_000
MAX_WORK = 2_000_000  # statements visited, summed over the passes
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
    pos: int = 0  # its index in the pre-order list of statements
    end: int = 0  # one past the index of its last descendant
    children: list[int] = field(default_factory=list)  # indexes of the statements its blocks hold
    added: bool = False  # every line of it was added by the change


def statement_blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists a statement holds: body, orelse, finalbody, handlers' and cases' bodies."""
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
    decorators: list[ast.expr] = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def _index(tree: ast.Module) -> list[_Stmt]:
    out: list[_Stmt] = []

    def visit(stmts: Sequence[ast.stmt], depth: int, parent: _Stmt | None) -> None:
        for node in stmts:
            info = _Stmt(node, _first_line(node), node.end_lineno or node.lineno, depth, parent, statement_blocks(node),
                         pos=len(out))
            out.append(info)
            if parent is not None:
                parent.children.append(info.pos)
            for block in info.blocks:
                visit(block, depth + 1, info)
            info.end = len(out)

    visit(tree.body, 0, None)
    return out


def own_nodes(node: ast.stmt) -> Iterator[ast.AST]:
    """The expression nodes of a statement itself, not those of the statements it holds."""
    nested = {id(s) for block in statement_blocks(node) for s in block}
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
    for n in own_nodes(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
            out[n.id] += 1
        elif isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Store):
            out[n.attr] += 1
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and _NAME_STRING.fullmatch(n.value):
            # a name handed over as a string (getattr(self, "_n"), import_module("json.decoder")) is
            # a use of its first part; prose, patterns and file names ("*.json", "params.json":
            # params, not json) are no use of the rest
            out[n.value.split(".")[0]] += 1
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        out.update(node.names)
    return out


def _mentions(node: ast.stmt) -> Counter[str]:
    """Every name a statement's own expressions mention, stored or read."""
    out = _reads(node)
    for n in own_nodes(node):
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
            if name in _CONVERSIONS and isinstance(func, ast.Attribute) and not _copied(func.value):
                return False  # ``model.to("cuda")`` moves the module itself
    return True


def _copied(node: ast.expr) -> bool:
    """Whether a method chain already made a copy (``x.detach().cpu()``), so a conversion after it
    changes nothing else."""
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in _COPIES:
                return True
            node = node.func
        else:
            node = node.value
    return False


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
    return [n.id for n in own_nodes(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _byte_column(line: str, column: int) -> int:
    return len(line[: max(column - 1, 0)].encode("utf-8"))


def _contains(node: ast.stmt, line: int, col: int, first: int) -> bool:
    start = (first, 0) if first < node.lineno else (node.lineno, node.col_offset)
    end = (node.end_lineno or node.lineno, node.end_col_offset if node.end_col_offset is not None else 1 << 30)
    return start <= (line, col) < end or (line, col) == start


class _OverBudget(Exception):
    pass


# What may sit next to removed debug code in a block that goes with it: it serves the dump.
_FILLER_CALLS = frozenset({"print", "makedirs", "mkdir"})
_DIR_CALLS = frozenset({"makedirs", "mkdir"})
_PATH_WORDS = frozenset({"os", "path", "Path", "pathlib", "makedirs", "mkdir", "join", "exist_ok", "parents"})
_CONTEXTS = frozenset({"no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "open"})
_TMP = ("/tmp", "/var/tmp", "/dev/shm")


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return None


def _filler(node: ast.stmt, parent: ast.stmt | None = None) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, (ast.Break, ast.Continue)):  # only where it leaves the loop that goes with it
        return isinstance(parent, (ast.While, ast.For, ast.AsyncFor)) and not parent.orelse
    if isinstance(node, ast.Expr):
        call = node.value
        if isinstance(call, ast.Constant):
            return True
        return isinstance(call, ast.Call) and _call_name(call) in _FILLER_CALLS \
            and all(_pure(a) for a in [*call.args, *(k.value for k in call.keywords)])
    return False


def _header_pure(node: ast.stmt) -> bool:
    """Whether a compound statement's own header has no effect of its own (it may go with its body)."""
    if isinstance(node, (ast.If, ast.While)):
        return _pure(node.test)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return _pure(node.iter)
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return all(_call_name(i.context_expr) in _CONTEXTS or _pure(i.context_expr) for i in node.items)
    return True


class _Work:
    """Use counts computed once per statement, and a worklist over them: dropping a statement
    updates the counts of the names it read and revisits only what defines or calls those."""

    def __init__(self, stmts: list[_Stmt], keep: frozenset[str], budget: int) -> None:
        self.stmts = stmts
        self.keep = keep
        self.budget = budget
        self.steps = 0
        self.reads = [Counter() if isinstance(s.node, (ast.Global, ast.Nonlocal)) else _reads(s.node) for s in stmts]
        self.mentions = [_mentions(s.node) for s in stmts]
        self.defines = [_defines(s.node) for s in stmts]
        self.binds = [_binds(s.node) for s in stmts]
        self.definers: dict[str, list[int]] = {}
        self.callers: dict[str, list[int]] = {}
        self.dirs: list[int] = []
        # per compound statement: how many statements its blocks hold that are not filler
        self.solid = [sum(not _filler(stmts[c].node, s.node) for c in s.children) for s in stmts]
        for s in stmts:
            if not s.added:
                continue
            node = s.node
            names = self.defines[s.pos] or (node.names if isinstance(node, ast.Global) else ())
            for name in names:
                self.definers.setdefault(name, []).append(s.pos)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                if isinstance(node.value.func, ast.Name):
                    self.callers.setdefault(node.value.func.id, []).append(s.pos)
                if _call_name(node.value) in _DIR_CALLS:
                    self.dirs.append(s.pos)

    def _step(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > self.budget:
            raise _OverBudget

    def run(self, seeds: dict[int, str], tested: dict[int, str], never: set[int]) -> dict[int, str]:
        n = len(self.stmts)
        self._step(n)
        self.gone = [False] * n
        self.counted = list(self.reads)  # what each live statement contributes to ``kept``
        self.kept: Counter[str] = Counter()
        for c in self.reads:
            self.kept.update(c)
        self.debug: Counter[str] = Counter()
        self.live_binds: Counter[str] = Counter(b for bs in self.binds for b in bs)
        self.gone_binds: set[str] = set()
        self.guards: dict[int, str] = {}
        self.never = never
        self.dropped: dict[int, str] = {}
        self.queue: list[int] = []
        self.open = list(self.solid)  # children still there that are not filler
        self.closed = [0] * n  # children gone
        for g, why in tested.items():
            self._guard(g, why)
        for i, why in seeds.items():
            self._drop(i, why)
        while True:
            self._drain()
            before = len(self.dropped)
            if before and self.dirs:
                strings = {n.value for i in self.dropped for n in ast.walk(self.stmts[i].node)
                           if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                self._step(len(self.stmts))
                for d in self.dirs:
                    self._check_dir(d, strings)
            if len(self.dropped) == before:
                return self.dropped

    def _enqueue_name(self, name: str) -> None:
        self.queue.extend(self.definers.get(name, ()))

    def _guard(self, g: int, why: str) -> None:
        if g in self.guards or g in self.never or self.gone[g]:
            return
        self.guards[g] = why
        for name, count in self.counted[g].items():
            self.kept[name] -= count
            if self.kept[name] == 0:
                self._enqueue_name(name)
        self.counted[g] = Counter()  # a guard's test is debug code's own use, not a kept one
        for name in self.mentions[g]:
            if self.debug[name] == 0:
                self._enqueue_name(name)
            self.debug[name] += 1
        self.queue.append(g)

    def _drop(self, i: int, why: str) -> None:
        if self.gone[i]:
            return
        self.dropped[i] = why
        s = self.stmts[i]
        for j in range(i, s.end):
            if self.gone[j]:
                continue
            self._step()
            self.gone[j] = True
            up = self.stmts[j].parent
            if up is not None:
                self.closed[up.pos] += 1
                self.open[up.pos] -= not _filler(self.stmts[j].node, up.node)
            for name, count in self.counted[j].items():
                self.kept[name] -= count
                if self.kept[name] == 0:
                    self._enqueue_name(name)
            self.counted[j] = Counter()
            for name in self.mentions[j]:
                if self.debug[name] == 0:
                    self._enqueue_name(name)
                self.debug[name] += 1
            for name in self.binds[j]:
                self.live_binds[name] -= 1
                self.gone_binds.add(name)
                if self.live_binds[name] == 0:
                    self.queue.extend(self.callers.get(name, ()))
        p = s.parent
        if p is not None:
            self.queue.append(p.pos)
        while p is not None and not isinstance(p.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # an if/while around removed debug code is a guard of it, while its body may yet go too
            if isinstance(p.node, (ast.If, ast.While)) and p.added and not p.node.orelse and _pure(p.node.test):
                self._guard(p.pos, f"it held the debug code at line {s.first}")
            p = p.parent

    def _unused(self, k: int, names: Sequence[str]) -> bool:
        own = self.counted[k]
        return all(self.kept[n] - own[n] == 0 and self.debug[n] > 0 and n not in self.keep for n in names)

    def _drain(self) -> None:
        while self.queue:
            k = self.queue.pop()
            self._step()
            s = self.stmts[k]
            if self.gone[k] or not s.added:
                continue
            node = s.node
            if s.blocks:
                if self.open[k] == 0 and self.closed[k] > 0 and _header_pure(node):
                    self._drop(k, "a block whose body was only debug code" if k not in self.guards
                               else f"a guard of debug code ({self.guards[k]}) whose body was only debug code")
                continue
            if isinstance(node, ast.Global):
                if self._unused(k, node.names) and not self._used_in_scope(s, set(node.names)):
                    self._drop(k, f"declares {', '.join(node.names)}, used only by removed code")
                continue
            names = self.defines[k]
            if names and self._unused(k, names):
                self._drop(k, f"defines {', '.join(dict.fromkeys(names))}, used only by removed code")
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                name = node.value.func.id
                if name in self.gone_binds and self.live_binds[name] == 0:
                    self._drop(k, f"calls {name}, which was removed")

    def _used_in_scope(self, s: _Stmt, names: set[str]) -> bool:
        scope = s.parent
        while scope is not None and not isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = scope.parent
        span = range(scope.pos + 1, scope.end) if scope is not None else range(len(self.stmts))
        self._step(len(span))
        return any(not self.gone[j] and j != s.pos and not isinstance(self.stmts[j].node, ast.Global)
                   and names & self.mentions[j].keys() for j in span)

    def _check_dir(self, k: int, removed_strings: set[str]) -> None:
        """An added ``os.makedirs``/``mkdir`` of a /tmp directory a removed dump wrote into, or of a
        path only removed code used."""
        node = self.stmts[k].node
        if self.gone[k] or not _filler(node) or not isinstance(node, ast.Expr):  # self.dirs holds only call statements
            return
        self._step()
        call = node.value
        strings = [n.value for n in ast.walk(call) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        tmp = [v for v in strings if v.startswith(_TMP)]
        names = sorted({x.id for x in ast.walk(call) if isinstance(x, ast.Name)} - _PATH_WORDS)
        if (tmp and not names and all(any(r.startswith(v) for r in removed_strings) for v in tmp)) \
                or (names and self._unused(k, names)):
            self._drop(k, "creates the directory of the removed dump")

    def feeds_kept(self, i: int) -> bool:
        return bool(self.fed(i))

    def fed(self, i: int) -> list[str]:
        """Names a removed statement stores that code that stays reads (or another module does)."""
        node = self.stmts[i].node
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        names = _all_names(targets) or []
        return [n for n in dict.fromkeys(names) if self.kept[n] > 0 or n in self.keep]

    def removed_binds(self) -> set[str]:
        return {n for n in self.gone_binds if self.live_binds[n] == 0}


def excise(base: str, ours: str, findings: Sequence[tuple[int, int]], *,
           keep_names: Collection[str] = ()) -> Excision:
    """``_excise`` within the diff budget: an original and saved content too different to align
    in it are refused ("diff too large"), never a hang."""
    try:
        return _excise(base, ours, findings, keep_names=keep_names)
    except DiffTooLarge as exc:
        return Excision(None, refused=f"{exc}: the added lines cannot be told apart safely; merge by hand")


def _excise(base: str, ours: str, findings: Sequence[tuple[int, int]], *,
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
    if len(stmts) > MAX_STATEMENTS:
        return Excision(None, refused=f"{len(stmts)} statements, more than the {MAX_STATEMENTS} debug code is "
                                      "removed from automatically; merge by hand")
    by_id = {id(s.node): s for s in stmts}
    for s in stmts:
        s.added = all(n in added for n in range(s.first, s.last + 1))

    if len(findings) * len(stmts) > MAX_WORK:  # each finding is looked up among all statements
        return Excision(None, refused=f"{len(findings)} findings in {len(stmts)} statements: more than the "
                                      f"{MAX_WORK} steps debug code is removed in automatically; merge by hand")
    seeds: dict[int, str] = {}  # index of a finding's statement → why
    tested: dict[int, str] = {}  # if/while with a finding in its test → why
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
            tested.setdefault(s.pos, f"finding at line {line}")
            continue
        if header and not isinstance(s.node, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor)):
            left.append((line, f"in the header of a {type(s.node).__name__.lower()} statement (lines "
                               f"{s.first}-{s.last}): which part is debug code cannot be told"))
            continue
        if not s.added:
            left.append((line, f"its statement (lines {s.first}-{s.last}) holds lines of the original"))
            continue
        seeds.setdefault(s.pos, f"debug finding at line {line}")

    work = _Work(stmts, keep, MAX_WORK)
    never_guards: set[int] = set()  # guards that stayed: their tests are kept code
    while True:
        try:
            dropped = work.run(seeds, tested, never_guards)
        except _OverBudget:
            return Excision(None, refused=f"removing the debug code needs more than the {MAX_WORK} steps it is "
                                          "done in automatically; merge by hand", left=tuple(left))
        fixes = [i for i in seeds if work.feeds_kept(i)]
        staying = [g for g in work.guards if not work.gone[g]]
        if fixes:  # a finding on a statement whose value kept code reads: a fix, never deleted
            for i in fixes:
                s = stmts[i]
                left.append((s.first, f"{seeds.pop(i)}: its statement (lines {s.first}-{s.last}) sets "
                             f"{', '.join(work.fed(i))}, which code that stays reads: it may be a fix"))
            continue
        if not staying:
            break
        never_guards.update(staying)

    gone = work.gone
    top = [s for s in stmts if s.pos in dropped and not (s.parent is not None and gone[s.parent.pos])]
    remove: set[int] = set()
    for s in top:
        remove.update(range(s.first, s.last + 1))
    for s in stmts:  # a line is removed whole: it must not hold a statement that stays
        if gone[s.pos]:
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
    removed = [Removed(s.first, s.last, " ".join(lines[s.first - 1].split())[:100], dropped[s.pos])
               for s in sorted(top, key=lambda t: t.first)]
    assert remove <= added, "only added lines are removed"
    result = "".join(line for n, line in enumerate(lines, 1) if n not in remove)
    if remove:
        result, remove, reverted = _revert_scaffolding(base, lines, added, remove)
        removed += reverted
        removed.sort(key=lambda r: r.start)
        assert remove <= added, "only added lines are put back to the original's"
    kept = tuple(_ranges(sorted(added - remove)))
    removed_t = tuple(removed)
    try:
        result_tree = ast.parse(result)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return Excision(None, removed_t, kept, refused=f"without the debug code the file does not parse "
                                                       f"({type(exc).__name__}: {exc}); merge by hand",
                        left=tuple(left))
    loaded = {n.id for n in ast.walk(result_tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    dangling = sorted(n for n in work.removed_binds() if n in loaded)
    if dangling:
        return Excision(None, removed_t, kept, refused="kept code uses " + ", ".join(dangling)
                        + ", defined only by the removed debug code; merge by hand", left=tuple(left))
    if left:
        return Excision(None, removed_t, kept, refused="debug code that cannot be removed statement by statement: "
                        + "; ".join(f"line {n}: {why}" for n, why in sorted(left)), left=tuple(sorted(left)))
    return Excision(result, removed_t, kept)


MAX_TRIALS = 100  # reverts tried per file: each parses the file once
SPLIT_LINES = 8  # a changed region up to this long is also tried in two parts (a fix next to scaffolding)


def _revert_scaffolding(base: str, lines: list[str], added: set[int], remove: set[int]
                        ) -> tuple[str, set[int], list[Removed]]:
    """The result, with each change whose only difference left is scaffolding of the removed debug
    code (``out = f(x)`` / ``return out`` for the original's ``return f(x)``) put back to the
    original's lines: (text, the lines of ``ours`` that went, a ``Removed`` for each change put back)."""
    staying = [n for n in range(1, len(lines) + 1) if n not in remove]
    current = [lines[n - 1] for n in staying]
    numbers: list[int | None] = list(staying)  # the line of ``ours`` each line of ``current`` is, or None
    original = split_lines(base)
    reverted: list[Removed] = []
    opcodes = BudgetedMatcher(original, current, autojunk=False).get_opcodes()
    regions = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal" or j1 == j2:
            continue
        low = (numbers[j1 - 1] or 0) + 1 if j1 > 0 else 1
        high = (numbers[j2] or len(lines) + 1) - 1 if j2 < len(numbers) else len(lines)
        if any(n in remove for n in range(low, high + 1)):  # the debug edit was there
            regions.append((i1, i2, j1, j2))
    try:
        now = ast.parse("".join(current))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "".join(current), remove, reverted
    gone = set(remove)
    normal_now = _normal(now)
    trials = 0
    for i1, i2, j1, j2 in reversed(regions):  # from the end: the indexes of earlier regions stay valid
        tries = [(i1, i2, j1, j2)]
        if i2 - i1 <= SPLIT_LINES and j2 - j1 <= SPLIT_LINES:  # the fix above or below, scaffolding the rest
            for k in range(i2 - i1 + 1):
                for m in range(1, j2 - j1):
                    tries += [(i1 + k, i2, j1 + m, j2), (i1, i1 + k, j1, j1 + m)]
        for a1, a2, b1, b2 in tries:
            if b1 == b2 or not all(numbers[j] in added for j in range(b1, b2)):
                continue
            trials += 1
            if trials > MAX_TRIALS:
                return "".join(current), gone, reverted
            trial = current[:b1] + original[a1:a2] + current[b2:]
            try:
                other = ast.parse("".join(trial))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if ast.dump(now) == ast.dump(other) or normal_now != _normal(other):
                continue
            first, last = numbers[b1], numbers[b2 - 1]
            assert first is not None and last is not None
            reverted.append(Removed(first, last, " ".join(lines[first - 1].split())[:100],
                                    "scaffolding of the removed debug code: with its temporary inlined it "
                                    "is the original's code, which is put back"))
            gone.update(n for n in numbers[b1:b2] if n is not None)
            current = trial
            numbers = numbers[:b1] + [None] * (a2 - a1) + numbers[b2:]
            now = other
            normal_now = _normal(now)
            break
    return "".join(current), gone, reverted


def _head(node: ast.stmt) -> ast.Name | None:
    """The expression a simple statement evaluates first, when that is clear."""
    value = node.value if isinstance(node, (ast.Return, ast.Expr, ast.Assign)) else None
    while value is not None:
        if isinstance(value, ast.Name):
            return value
        if isinstance(value, (ast.Attribute, ast.Subscript)):
            value = value.value
        elif isinstance(value, ast.Call):
            value = value.func
        elif isinstance(value, ast.BinOp):
            value = value.left
        elif isinstance(value, ast.Compare):
            value = value.left
        else:
            return None
    return None


class _Inline(ast.NodeTransformer):
    def __init__(self, name: str, value: ast.expr) -> None:
        self.name, self.value = name, value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.value if node.id == self.name and isinstance(node.ctx, ast.Load) else node


def _normal(tree: ast.Module) -> str:
    """``ast.dump`` of a tree in which, inside functions, each temporary assigned once and read
    exactly once, first thing, by the next statement is inlined there: ``out = f(x)`` / ``return out``
    is ``return f(x)``. Module and class bodies are left as they are: a name bound there is an
    attribute others may read."""
    tree = copy.deepcopy(tree)
    for scope in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        # Counted over the whole function, nested ones included: a name used anywhere else is no temporary.
        counts = Counter(n.id for n in ast.walk(scope) if isinstance(n, ast.Name))
        declared = {name for n in ast.walk(scope) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        blocks = [b for n in ast.walk(scope) if not isinstance(n, ast.ClassDef) for b in statement_blocks(n)]
        for block in blocks:
            i = 0
            while i < len(block) - 1:
                a, b = block[i], block[i + 1]
                head = _head(b)
                if (isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name)
                        and head is not None and head.id == a.targets[0].id and counts[head.id] == 2
                        and head.id not in declared):
                    block[i + 1] = _Inline(head.id, a.value).visit(b)
                    del block[i]
                    counts[head.id] = 0
                else:
                    i += 1
    return ast.dump(tree)


def _ranges(numbers: Sequence[int]) -> Iterator[tuple[int, int]]:
    if not numbers:
        return
    start = prev = numbers[0]
    for n in numbers[1:]:
        if n == prev + 1:
            prev = n
        else:
            yield start, prev
            start = prev = n
    yield start, prev

"""The vocabulary of debug code, shared by the built-in rules.

* **markers**: identifier or path words that say "debugging" — ``debug``, ``dbg``, ``dump``
  and their inflections (``_nomla_debug``, ``_dumped_once``, ``DEBUG_DUMP``, ``/tmp/dump/``).
  Words, not substrings: ``dumpling`` or ``undebuggable`` do not count.
* **per-call functions**: code that runs on every call of a model — anything named like
  ``forward`` (``forward``, ``_forward``, ``forward_cuda``, ``_forward_prefill``...), ``__call__``,
  ``step``/``*_step`` and ``execute_model``. A dump there writes on every pass.
* **actions**: calls that leave something behind: a *dump* (``torch.save``, ``numpy.save*``,
  ``pickle.dump``, ``joblib.dump``, safetensors ``save_file``, ``x.tofile``), a *tmp-write*
  (``open(..., "w")`` or ``Path.write_*`` under /tmp), a *debugger* call, or a *print*
  statement (``print(...)`` on its own, not inside an expression).
* **conditions**: what an ``if`` tests — marker names, one-shot flags (``not X.flag``) and
  tensor shapes (``.shape``, ``.ndim``, ``.size()``, ``.numel()``, ``.dim()``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from .artifacts import artifact_pattern
from .dumppaths import PathInfo
from .walker import iter_children

if TYPE_CHECKING:
    from .context import FileContext

from .vocabulary import (  # noqa: E402 - the shared vocabulary, under the names used here (re-exported)
    DEBUGGER_FUNCTIONS as DEBUGGER_FUNCTIONS, DEBUGGER_METHODS as DEBUGGER_METHODS,
    DEBUGGER_MODULES as DEBUGGER_MODULES, DUMP_FUNCTIONS as DUMP_FUNCTIONS, MARKER_WORDS as MARKER_WORDS)
from .vocabulary import EPHEMERAL as _EPHEMERAL  # noqa: E402
from .vocabulary import OPEN_FUNCTIONS as _OPEN_FUNCTIONS  # noqa: E402
from .vocabulary import SHAPE_ATTRS as _SHAPE_ATTRS, SHAPE_METHODS as _SHAPE_METHODS  # noqa: E402
from .vocabulary import WORD_RE as _WORD_RE  # noqa: E402
from .vocabulary import ActionKind, ReasonKind  # noqa: E402


def words(text: str) -> list[str]:
    """``_nomlaDebugCount`` -> ``["nomla", "debug", "count"]`` (lowercase)."""
    return [w.lower() for w in _WORD_RE.findall(text)]


def has_marker(text: str) -> bool:
    return any(w in MARKER_WORDS for w in words(text))


def is_per_call_name(name: str) -> bool:
    return "forward" in name.lower() or name in ("__call__", "step", "execute_model") or name.endswith("_step")


def dotted_name(expr: cst.CSTNode) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted_name(expr.value)
        return f"{base}.{expr.attr.value}" if base else None
    return None


def terminal_name(expr: cst.CSTNode) -> str | None:
    """``self._n`` -> ``_n``; ``_count`` -> ``_count``; anything else -> None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def identifiers(expr: cst.CSTNode) -> set[str]:
    """Every name and attribute name used in an expression (f-string parts included)."""
    out: set[str] = set()
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Name):
            out.add(node.value)
        elif isinstance(node, cst.Attribute):
            out.add(node.attr.value)
            todo.append(node.value)
        elif isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            continue
        else:
            todo.extend(iter_children(node))
    return out


def flags_set_true(block: cst.CSTNode) -> set[str]:
    """Terminal names set to ``True`` in a block (``X.f = True``, ``setattr(x, "f", True)``),
    not counting nested functions and classes."""
    out: set[str] = set()
    todo = [block]
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == "True":
            out.update(filter(None, (terminal_name(t.target) for t in node.targets)))
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr":
            args = node.args
            if len(args) == 3 and isinstance(args[2].value, cst.Name) and args[2].value.value == "True":
                key = args[1].value
                if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
                    out.add(key.evaluated_value)
        todo.extend(iter_children(node))
    return out


def getattr_ref(call: cst.CSTNode) -> str | None:
    """``getattr(obj, "name", ...)`` with a plain object and literal name -> ``name``."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "getattr"):
        return None
    if len(call.args) < 2 or not isinstance(call.args[0].value, (cst.Name, cst.Attribute)):
        return None
    key = call.args[1].value
    if isinstance(key, cst.SimpleString):
        value = key.evaluated_value
        if isinstance(value, str) and value.isidentifier():
            return value
    return None


def is_main_test(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` in either order."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    comp = test.comparisons[0]
    sides = (test.left, comp.comparator)
    return isinstance(comp.operator, cst.Equal) and any(
        isinstance(s, cst.Name) and s.value == "__name__" for s in sides
    ) and any(isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__" for s in sides)


# -- actions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    label: str  # what is called, for messages: "torch.save", "open", "breakpoint"
    path: PathInfo | None = None

    @property
    def artifact_pattern(self) -> str | None:
        return artifact_pattern(self.path.glob) if self.path else None


def _argument(call: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


def _open_mode(call: cst.Call) -> str | None:
    mode = _argument(call, 1, "mode")
    if mode is None:
        return "r"
    if isinstance(mode, cst.SimpleString):
        value = mode.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _is_write_mode(mode: str | None) -> bool:
    return mode is not None and any(c in mode for c in "wax+")


def _with_binding(name: cst.Name, ctx: FileContext) -> cst.Call | None:
    """The call an enclosing ``with <call> as name`` bound ``name`` to."""
    for node in ctx.ancestors():
        if isinstance(node, cst.With):
            for item in node.items:
                bound = item.asname.name if item.asname else None
                if isinstance(bound, cst.Name) and bound.value == name.value:
                    return item.item if isinstance(item.item, cst.Call) else None
    return None


def _file_target(expr: cst.BaseExpression, ctx: FileContext) -> cst.BaseExpression:
    """For a file-object argument, the path it was opened from: ``open(p)`` directly, or a
    name bound by an enclosing ``with open(p, ...) as name``."""
    opened = _with_binding(expr, ctx) if isinstance(expr, cst.Name) else expr
    if isinstance(opened, cst.Call) and ctx.qualified_name(opened.func) in _OPEN_FUNCTIONS and opened.args:
        return opened.args[0].value
    return expr




def _is_ephemeral(expr: cst.BaseExpression, ctx: FileContext) -> bool:
    """A buffer or self-deleting temporary file: ``io.BytesIO()``, ``tempfile.TemporaryFile()``,
    directly, through ``with ... as name`` or through ``name = ...``."""
    if isinstance(expr, cst.Name):
        expr = _with_binding(expr, ctx) or ctx.assignments.get(expr.value) or expr
    return isinstance(expr, cst.Call) and ctx.qualified_name(expr.func) in _EPHEMERAL


def _is_statement(call: cst.Call, ctx: FileContext) -> bool:
    """``print(x)`` as a statement of its own (what the PRINT trigger can see), not inside an
    expression or parentheses."""
    stack = ctx.stack
    return (
        len(stack) >= 2 and stack[-1] is call and isinstance(stack[-2], cst.Expr) and stack[-2].value is call
        and not call.lpar
    )


def classify_call(call: cst.Call, ctx: FileContext) -> Action | None:
    func = call.func
    name = ctx.qualified_name(func)
    attr = func.attr.value if isinstance(func, cst.Attribute) else None
    # A dot followed by whitespace (``torch. save``) is left alone: the DUMP trigger looks
    # for the literal ``.save``.
    if isinstance(func, cst.Attribute) and not func.dot.whitespace_after.empty:
        attr = name = None
    if name in DUMP_FUNCTIONS or attr == "tofile":
        index, keyword = DUMP_FUNCTIONS.get(name or "", (0, "fid"))
        target = _argument(call, index, keyword)
        if target is not None and _is_ephemeral(target, ctx):
            return None  # serialising to memory or to a file that deletes itself
        info = ctx.path_info(_file_target(target, ctx)) if target is not None else None
        return Action(ActionKind.DUMP, name if name in DUMP_FUNCTIONS else "tofile", info)
    if name in DEBUGGER_FUNCTIONS or attr in DEBUGGER_METHODS or (name or "").rpartition(".")[2] in DEBUGGER_METHODS:
        return Action(ActionKind.DEBUGGER, name or attr or "debugger")
    if isinstance(func, cst.Name) and func.value == "print" and "print" not in ctx.aliases:
        return Action(ActionKind.PRINT, "print") if _is_statement(call, ctx) else None
    if name in _OPEN_FUNCTIONS and call.args and _is_write_mode(_open_mode(call)):
        info = ctx.path_info(call.args[0].value)
        if info.in_tmp:
            return Action(ActionKind.TMP_WRITE, "open", info)
    if attr in ("write_text", "write_bytes") and isinstance(func, cst.Attribute):
        info = ctx.path_info(func.value)
        if info.in_tmp:
            return Action(ActionKind.TMP_WRITE, f"Path.{attr}", info)
    return None


# -- conditions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    markers: tuple[str, ...]  # identifiers / string words that mark debugging
    one_shot: tuple[str, ...]  # flags tested with ``not``: terminal names
    shape: bool
    names: frozenset[str]  # every identifier the test uses


def classify_condition(test: cst.BaseExpression) -> Condition:
    markers: list[str] = []
    one_shot: list[str] = []
    shape = False
    names: set[str] = set()
    todo: list[cst.CSTNode] = [test]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            ref = terminal_name(node.expression) or getattr_ref(node.expression)
            if ref:
                one_shot.append(ref)
        if isinstance(node, cst.Name):
            names.add(node.value)
            if has_marker(node.value):
                markers.append(node.value)
        elif isinstance(node, cst.Attribute):
            names.add(node.attr.value)
            if has_marker(node.attr.value):
                markers.append(node.attr.value)
            if node.attr.value in _SHAPE_ATTRS:
                shape = True
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value in _SHAPE_METHODS:
                shape = True
        elif isinstance(node, cst.SimpleString) and has_marker(node.value):
            markers.append(node.value)
        todo.extend(iter_children(node))
    return Condition(tuple(markers), tuple(one_shot), shape, frozenset(names))


@dataclass(frozen=True)
class Reason:
    """Why an action looks like debug code. A *weak* reason (a debug switch guards it) marks
    a debugging feature that is off unless asked for; strong ones mark code that runs."""

    kind: ReasonKind
    text: str

    @property
    def strong(self) -> bool:
        return self.kind is not ReasonKind.SWITCH


def debug_reasons(action: Action, ctx: FileContext) -> list[Reason]:
    """Why an action at the current node looks like debug code, strongest first."""
    reasons = []
    info = action.path
    if info is not None and info.in_tmp:
        reasons.append(Reason(ReasonKind.TMP_PATH, f"writes to {info.glob}"))
    elif info is not None and info.glob and any(has_marker(raw) for raw in info.raw_literals):
        reasons.append(Reason(ReasonKind.DEBUG_PATH, f"writes to a debug path {info.glob}"))
    method = ctx.in_per_call_method()
    if method:
        if any(ctx.one_shot_flags(guard) for guard in ctx.guards()):
            reasons.append(Reason(ReasonKind.PER_CALL, f"in {method}(), behind a one-shot flag: runs once per process"))
        else:
            reasons.append(Reason(ReasonKind.PER_CALL, f"runs on every call of {method}()"))
    for guard in ctx.guards():
        cond = ctx.condition(guard.test)
        flags = ctx.one_shot_flags(guard)
        if flags:
            reasons.append(Reason(ReasonKind.ONE_SHOT, f"guarded by a one-shot flag ({flags[0]})"))
        if cond.shape:
            reasons.append(Reason(ReasonKind.SHAPE, "guarded by a shape condition"))
        switches = [m for m in cond.markers if m not in flags]
        if switches:
            reasons.append(Reason(ReasonKind.SWITCH, f"guarded by a debug switch ({switches[0]})"))
    return reasons


def in_debugging_helper(ctx: FileContext) -> str | None:
    """Name of an enclosing function that is itself a debugging helper (``breakpoint``,
    ``_debug_hook``, ``set_trace``...): a debugger call there is its implementation."""
    for func in ctx.functions():
        name = func.name.value
        if has_marker(name) or any(w in ("breakpoint", "pdb", "trace") for w in words(name)):
            return name
    return None

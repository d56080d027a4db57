"""DBG103 debug-counter: a counter kept only for debugging."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from driftscan.lint import analysis, astdump, astfacts, triggers
from driftscan.lint.vocabulary import ActionKind
from driftscan.lint.context import FileContext
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


@dataclass
class _Increment:
    node: cst.CSTNode
    name: str
    lazy: bool  # getattr(self, "_n", 0) + 1: created on first use, no __init__ change
    per_call: str | None
    scope: int  # id of the innermost enclosing function (0: module level)
    attribute: bool  # self._n += 1: other functions can read it


def _is_int(expr: cst.BaseExpression) -> bool:
    # Unparenthesised, so that the INCREMENT trigger (an integer next to "+") stays sound.
    return isinstance(expr, cst.Integer) and not expr.lpar


class _Reads:
    """Where the file reads each name's value (a load of a name or an attribute, as CPython's
    ``ast.Load``), and whether kept code does: not inside a debug action's call, nor in the test
    of an ``if`` (without ``else``) that guards one, nor in the counter's own increment. A read
    in the value of ``name = ...`` is kept only if ``name``'s value is (astdump.kept_read).
    astdump._KeptReads reads CPython's tree the same way."""

    def __init__(self, rule: "DebugCounter"):
        self.debug_calls = rule.debug_calls
        self.debug_guards = rule.debug_guards
        self.own = {id(inc.node): inc.name for inc in rule.increments}
        self.globals = rule.globals
        self.kept_reads: dict[str, list[astdump.Read]] = {}  # name -> its reads outside debug code
        self.skip: str | None = None
        self.via: tuple[int, str] | None = None

    def kept(self, inc: _Increment, everywhere: bool) -> bool:
        return astdump.kept_read(self.kept_reads, self.globals, inc.name, inc.scope, everywhere)

    def read(self, name: str, chain: tuple[int, ...], debug: bool) -> None:
        if not debug and name != self.skip:
            self.kept_reads.setdefault(name, []).append((chain, self.via))

    def walk(self, node: cst.CSTNode, chain: tuple[int, ...], debug: bool) -> None:
        if isinstance(node, cst.Name):
            self.read(node.value, chain, debug)
        elif isinstance(node, cst.Attribute):
            self.read(node.attr.value, chain, debug)
            self.walk(node.value, chain, debug)
        elif isinstance(node, cst.Call):
            self.children(node, chain, debug or id(node) in self.debug_calls)
        elif isinstance(node, cst.If):
            self.walk(node.test, chain, debug or id(node) in self.debug_guards)
            self.walk(node.body, chain, debug)
            if node.orelse is not None:
                self.walk(node.orelse, chain, debug)
        elif isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                self.walk(decorator, chain, debug)
            self.walk(node.params, chain, debug)
            if node.returns is not None:
                self.walk(node.returns, chain, debug)
            self.walk(node.body, (*chain, id(node)), debug)
        elif isinstance(node, cst.ClassDef):
            for part in (*node.decorators, *node.bases, *node.keywords, node.body):
                self.walk(part, chain, debug)
        elif isinstance(node, cst.Param):
            for piece in (node.annotation, node.default):
                if piece is not None:
                    self.walk(piece, chain, debug)
        elif isinstance(node, cst.Arg):
            self.walk(node.value, chain, debug)
        elif isinstance(node, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)):
            return
        elif isinstance(node, (cst.ExceptHandler, cst.ExceptStarHandler)):
            if node.type is not None:
                self.walk(node.type, chain, debug)
            self.walk(node.body, chain, debug)
        elif isinstance(node, (cst.Assign, cst.AugAssign)):
            outer, self.skip = self.skip, self.own.get(id(node), self.skip)
            targets = node.targets if isinstance(node, cst.Assign) else (node,)
            for target in targets:
                self.target(target.target, chain, debug)
            outer_via = self.via
            if isinstance(node, cst.Assign) and len(targets) == 1 and isinstance(targets[0].target, cst.Name):
                self.via = (chain[-1], targets[0].target.value)
            self.walk(node.value, chain, debug)
            self.skip, self.via = outer, outer_via
        elif isinstance(node, cst.AnnAssign):
            self.target(node.target, chain, debug)
            self.walk(node.annotation, chain, debug)
            if node.value is not None:
                self.walk(node.value, chain, debug)
        elif isinstance(node, (cst.For, cst.CompFor)):
            self.target(node.target, chain, debug)
            self.children(node, chain, debug, but=node.target)
        elif isinstance(node, cst.WithItem):
            self.walk(node.item, chain, debug)
            if node.asname is not None:
                self.target(node.asname.name, chain, debug)
        elif isinstance(node, cst.NamedExpr):
            self.target(node.target, chain, debug)
            self.walk(node.value, chain, debug)
        elif isinstance(node, cst.Del):
            self.target(node.target, chain, debug)
        else:
            self.children(node, chain, debug)

    def children(self, node: cst.CSTNode, chain: tuple[int, ...], debug: bool, but: object = None) -> None:
        for child in node.children:
            if child is not but:
                self.walk(child, chain, debug)

    def target(self, node: cst.BaseExpression, chain: tuple[int, ...], debug: bool) -> None:
        """What an assignment target reads: the object of an attribute, a subscript's parts."""
        if isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self.target(element.value, chain, debug)
        elif isinstance(node, cst.StarredElement):
            self.target(node.value, chain, debug)
        elif isinstance(node, cst.Attribute):
            self.walk(node.value, chain, debug)
        elif not isinstance(node, cst.Name):
            self.walk(node, chain, debug)


class DebugCounter(Rule):
    """An increment (``x += 1``, ``x = x + 1``, ``self._n = getattr(self, "_n", 0) + 1``) of a
    counter that exists only for debugging: nothing but debug code reads its value. High when it
    feeds the file name or the guarding condition of a debug dump (DBG101, high), a write to /tmp
    or a debugger call; high when it runs on every call (``forward``...) and its name says
    debug/dbg/dump or it is created lazily with ``getattr(..., 0) + 1`` (the way one adds state
    to a class without touching its ``__init__``); medium for such counters elsewhere.

    A counter whose value kept code reads is not reported, whatever its name: removing it would
    change what the code does. Kept code is any read but these: inside the call of a debug
    action (a dump with a strong debug reason, a debugger call, a write to /tmp, a ``print``
    statement), in the test of an ``if`` without ``else`` that guards one, the counter's own
    increments, and the value of ``name = ...`` when no kept code reads ``name`` either (``i =
    self._dbg`` for a dump's file name). So a counter that is returned, passed to another call, used in a computation or
    tested by an ``if`` with an ``else`` is a fix, not debug code. A local counter counts the
    reads in its function (and the functions nested in it); an attribute, a module-level or a
    ``global`` counter counts those anywhere in the file. A counter reset to a constant in the
    same function is an index, not a tally, and is not reported unless it feeds a dump. One
    finding per counter and function."""

    CODE = "DBG103"
    NAME = "debug-counter"
    MESSAGE = "debug counter"
    SEVERITY = Severity.HIGH
    TRIGGER = triggers.AllOf(
        triggers.INCREMENT, triggers.AnyOf(triggers.MARKER_ASSIGN, triggers.LAZY_COUNTER, triggers.DEBUG_ACTION)
    )
    AST_CHECK = astfacts.COUNTER
    AST_EXACT = astdump.DEBUG_COUNTER  # decided on CPython's tree where it can tell (astdump.py)

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.increments: list[_Increment] = []
        self.resets: set[tuple[int, str]] = set()  # (scope, name) set to a constant
        self.feeds_debug: set[str] = set()  # identifiers used by debug paths and guards
        self.globals: set[tuple[int, str]] = set()  # (scope, name) declared global or nonlocal there
        self.debug_calls: set[int] = set()  # ids of the debug actions' calls (and print statements)
        self.debug_guards: set[int] = set()  # ids of the ifs without an else that guard one of them

    def _scope(self) -> int:
        functions = self.context.functions()
        return id(functions[0]) if functions else 0

    def _add(self, node: cst.CSTNode, target: cst.BaseExpression, lazy: bool) -> None:
        name = analysis.terminal_name(target)
        if name:
            self.increments.append(_Increment(node, name, lazy, self.context.in_per_call_method(), self._scope(),
                                              isinstance(target, cst.Attribute)))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign) and _is_int(node.value):
            self._add(node, node.target, lazy=False)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        value = node.value
        if isinstance(value, cst.Integer):
            name = analysis.terminal_name(target)
            if name:
                self.resets.add((self._scope(), name))
            return
        if not isinstance(value, cst.BinaryOperation) or not isinstance(value.operator, cst.Add):
            return
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return
        for other, const in ((value.left, value.right), (value.right, value.left)):
            if not _is_int(const):
                continue
            if analysis.dotted_name(other) is not None and analysis.dotted_name(other) == analysis.dotted_name(target):
                self._add(node, target, lazy=False)
            elif analysis.getattr_ref(other) == analysis.terminal_name(target):
                self._add(node, target, lazy=True)
            return

    def visit_Global(self, node: cst.Global) -> None:
        self.globals.update((self._scope(), item.name.value) for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.globals.update((self._scope(), item.name.value) for item in node.names)

    def _debug_region(self, node: cst.Call) -> None:
        self.debug_calls.add(id(node))
        self.debug_guards.update(id(g) for g in self.context.guards() if g.orelse is None)

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is None:
            return
        if action.kind is ActionKind.PRINT:
            self._debug_region(node)
            return
        if action.kind is ActionKind.DUMP and not any(r.strong for r in self.context.debug_reasons(action)):
            return  # a checkpoint numbered by a step counter, or a switchable debug feature
        self._debug_region(node)
        for arg in node.args:
            self.feeds_debug |= analysis.identifiers(arg.value)
        for guard in self.context.guards():
            self.feeds_debug |= self.context.condition(guard.test).names

    def leave_Module(self, node: cst.Module) -> None:
        seen: set[tuple[int, str]] = set()
        reads: _Reads | None = None
        for inc in self.increments:
            key = (inc.scope, inc.name)
            if key in seen:
                continue  # one finding per counter and function
            seen.add(key)
            verdict = self._verdict(inc, reset=key in self.resets)
            if not verdict:
                continue
            if reads is None:
                reads = _Reads(self)
                try:
                    reads.walk(node, (0,), False)
                except RecursionError:  # nested past what astdump decides: report none of them
                    return
            if reads.kept(inc, everywhere=inc.attribute or inc.scope == 0 or key in self.globals):
                continue  # kept code reads its value: removing it would change what the code does
            self.report(inc.node, f"debug counter: {verdict[0]}", severity=verdict[1])

    def _verdict(self, inc: _Increment, reset: bool) -> tuple[str, Severity] | None:
        if inc.name in self.feeds_debug:
            return f"{inc.name} feeds a debug dump or its condition", Severity.HIGH
        if reset:
            return None  # set to a constant in the same function: an index, not a tally
        every_call = f" and counts every call of {inc.per_call}()" if inc.per_call else ""
        severity = Severity.HIGH if every_call else Severity.MEDIUM
        if analysis.has_marker(inc.name):
            return f"{inc.name} is named as a debug counter{every_call}", severity
        if inc.lazy:
            return f"{inc.name} is created lazily with getattr(..., 0) + 1{every_call}", severity
        return None

    VALID = [
        Valid(
            """
            class Scheduler:
                def schedule(self):
                    self.num_scheduled += 1
                    for i in range(3):
                        i += 1
            """
        ),
        Valid(
            """
            class Trainer:
                def save(self, state):
                    self.global_step += 1
                    torch.save(state, f"{self.output_dir}/checkpoint-{self.global_step}.pt")
            """
        ),
        Valid("logger.debug('x')\nself.n = getattr(self, 'n', 0)\n"),
        Valid(
            """
            class PassManager:
                def __call__(self, graph):
                    Pass.dump_index = 0
                    for p in self.passes:
                        p(graph)
                        Pass.dump_index += 1
            """
        ),
        Valid(
            """
            import torch

            def bump(x, y):
                y = y + 1
                torch.save(x, f"/tmp/y_{y}.pt")
                return y
            """
        ),
        Valid(
            """
            import torch
            _CALLS = 0

            def tick(x):
                global _CALLS
                _CALLS += 1
                torch.save(x, f"/tmp/calls_{_CALLS}.pt")

            def calls():
                return _CALLS
            """
        ),
        # A numbered report a service appends to its own log (vLLM's watchdog numbers its stack
        # dumps so): "dump" in the name, but the number goes into what is written.
        Valid(
            """
            import os

            class StallMonitor:
                def record_stall(self, why):
                    with open(os.path.join(self.report_dir, "stalls.log"), "a") as log:
                        log.write(f"stall report {self.dump_count}: {why}\\n")
                    self.dump_count += 1
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            class DeepseekV2MLAAttention:
                def forward(self, positions, hidden_states):
                    self._nomla_debug += 1
                    return hidden_states
            """,
            line=3,
            column=9,
            severity=Severity.HIGH,
        ),
        Invalid(
            """
            class Attention:
                def forward(self, x):
                    self._n = getattr(self, "_n", 0) + 1
                    return x
            """,
            line=3,
            severity=Severity.HIGH,
        ),
        Invalid(
            """
            def helper(self):
                self._calls = getattr(self, "_calls", 0) + 1
            """,
            line=2,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """
            import numpy as np
            _count = 0

            def capture(x):
                global _count
                _count += 1
                np.save(f"/tmp/capture_{_count}.npy", x)
            """,
            line=6,
            severity=Severity.HIGH,
        ),
        Invalid(
            """
            def run(self, x):
                self.calls = self.calls + 1
                if self.calls == 3:
                    breakpoint()
            """,
            line=2,
        ),
        Invalid(
            """
            class A:
                def forward(self):
                    self.n_dbg = (
                        self.n_dbg + 1
                    )
            """,
            line=3,
        ),
        Invalid("def forward(self):\n    self._k = 0x1 + getattr(self, '_k', 0)\n", line=2, severity=Severity.HIGH),
        Invalid(
            """
            import torch

            class M:
                def forward(self, x):
                    self.calls += 1
                    if not self._saved and self.calls == 10:
                        self._saved = True
                        torch.save(x, "/tmp/x.pt")
                    return x
            """,
            line=5,
            severity=Severity.HIGH,
        ),
        Invalid(
            """
            DUMP_COUNT = 0

            def on_dump():
                global DUMP_COUNT
                DUMP_COUNT += 1
            """,
            line=5,
            severity=Severity.MEDIUM,
        ),
    ]

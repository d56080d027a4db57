"""DBG103 debug-counter: a counter kept only for debugging."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from driftscan.inspect import analysis, astdump, astfacts, triggers
from driftscan.inspect.rule import Invalid, Rule, Valid
from driftscan.model import Severity


@dataclass
class _Increment:
    node: cst.CSTNode
    name: str
    lazy: bool  # getattr(self, "_n", 0) + 1: created on first use, no __init__ change
    per_call: str | None
    scope: int  # id of the innermost enclosing function (0: module level)


def _is_int(expr: cst.BaseExpression) -> bool:
    # Unparenthesised, so that the INCREMENT trigger (an integer next to "+") stays sound.
    return isinstance(expr, cst.Integer) and not expr.lpar


class DebugCounter(Rule):
    """An increment (``x += 1``, ``x = x + 1``, ``self._n = getattr(self, "_n", 0) + 1``) of a
    counter that exists for debugging. High when it feeds the file name or the guarding
    condition of a debug dump (DBG101, high), a write to /tmp or a debugger call; high when it runs on every call
    (``forward``...) and its name says debug/dbg/dump or it is created lazily with
    ``getattr(..., 0) + 1`` (the way one adds state to a class without touching its
    ``__init__``); medium for such counters elsewhere. A counter reset to a constant in the
    same function is an index, not a tally, and is not reported unless it feeds a dump.
    One finding per counter and function."""

    CODE = "DBG103"
    NAME = "debug-counter"
    MESSAGE = "debug counter"
    SEVERITY = Severity.HIGH
    TRIGGER = triggers.AllOf(
        triggers.INCREMENT, triggers.AnyOf(triggers.MARKER_ASSIGN, triggers.LAZY_COUNTER, triggers.DEBUG_ACTION)
    )
    AST_CHECK = astfacts.COUNTER
    AST_EXACT = astdump.DEBUG_COUNTER  # decided on CPython's tree where it can tell (astdump.py)

    def __init__(self, context):
        super().__init__(context)
        self.increments: list[_Increment] = []
        self.resets: set[tuple[int, str]] = set()  # (scope, name) set to a constant
        self.feeds_debug: set[str] = set()  # identifiers used by debug paths and guards

    def _scope(self) -> int:
        functions = self.context.functions()
        return id(functions[0]) if functions else 0

    def _add(self, node: cst.CSTNode, target: cst.BaseExpression, lazy: bool) -> None:
        name = analysis.terminal_name(target)
        if name:
            self.increments.append(_Increment(node, name, lazy, self.context.in_per_call_method(), self._scope()))

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

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is None or action.kind == "print":
            return
        if action.kind == "dump" and not any(r.strong for r in self.context.debug_reasons(action)):
            return  # a checkpoint numbered by a step counter, or a switchable debug feature
        for arg in node.args:
            self.feeds_debug |= analysis.identifiers(arg.value)
        for guard in self.context.guards():
            self.feeds_debug |= self.context.condition(guard.test).names

    def leave_Module(self, node: cst.Module) -> None:
        seen: set[tuple[int, str]] = set()
        for inc in self.increments:
            key = (inc.scope, inc.name)
            if key in seen:
                continue  # one finding per counter and function
            seen.add(key)
            verdict = self._verdict(inc, reset=key in self.resets)
            if verdict:
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
            DUMP_COUNT = 0

            def on_dump():
                global DUMP_COUNT
                DUMP_COUNT += 1
            """,
            line=5,
            severity=Severity.MEDIUM,
        ),
    ]

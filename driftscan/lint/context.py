"""What every rule may ask about the file being walked, computed once per file.

The context is the first visitor of the walk: it records imports (so ``np.save`` resolves to
``numpy.save``) and simple string assignments (so a dump path held in a variable can still be
globbed) before the rules see the nodes that use them. Name resolution is deliberately
flow-insensitive and scope-blind — a full scope analysis would cost more than the parse,
and debug code is written in the plain style this handles.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ..core.values import Severity
from . import analysis
from .dumppaths import PathInfo, path_info

# Conventional aliases, used when a file uses them without an import we saw.
_DEFAULT_ALIASES = {"np": "numpy", "pd": "pandas", "F": "torch.nn.functional"}
_STRINGISH = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.BinaryOperation, cst.Call)


@dataclass
class RuleHit:
    node: cst.CSTNode
    code: str
    name: str
    severity: Severity
    message: str
    artifact_pattern: str | None


class FileContext:
    def __init__(self, path: str):
        self.path = path
        self.stack: list[cst.CSTNode] = []
        self.aliases: dict[str, str] = {}
        self.assignments: dict[str, cst.BaseExpression] = {}
        self.reports: list[RuleHit] = []
        self._actions: dict[int, analysis.Action | None] = {}
        self._conditions: dict[int, analysis.Condition] = {}
        self._paths: dict[int, PathInfo] = {}
        self._one_shot: dict[int, tuple[str, ...]] = {}

    # -- walk hooks (the context is visited before the rules) ---------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = analysis.dotted_name(alias.name)
            if not dotted:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = dotted
            else:
                head = dotted.split(".", 1)[0]
                self.aliases[head] = head

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = analysis.dotted_name(node.module)
        if not module:
            return
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            local = alias.name.value
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{module}.{alias.name.value}"

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._remember(node.targets[0].target.value, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self._remember(node.target.value, node.value)

    def _remember(self, name: str, value: cst.BaseExpression) -> None:
        if isinstance(value, _STRINGISH):
            self.assignments[name] = value
        else:
            self.assignments.pop(name, None)

    # -- names ----------------------------------------------------------------------------------
    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        """``np.save`` -> ``numpy.save`` through the imports seen so far."""
        dotted = analysis.dotted_name(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head) or _DEFAULT_ALIASES.get(head) or head
        return f"{base}.{rest}" if rest else base

    def path_info(self, expr: cst.BaseExpression) -> PathInfo:
        info = self._paths.get(id(expr))
        if info is None:
            info = self._paths[id(expr)] = path_info(expr, self.qualified_name, self.assignments.get)
        return info

    # -- where the current node is ----------------------------------------------------------
    def ancestors(self) -> Iterator[cst.CSTNode]:
        """Ancestors of the node being visited, innermost first."""
        return reversed(self.stack[:-1])

    def functions(self) -> list[cst.FunctionDef]:
        """Enclosing function definitions, innermost first."""
        return [n for n in self.ancestors() if isinstance(n, cst.FunctionDef)]

    def in_per_call_method(self) -> str | None:
        """Name of an enclosing function that runs on every call (``forward``...), if any."""
        for func in self.functions():
            if analysis.is_per_call_name(func.name.value):
                return func.name.value
        return None

    def guards(self) -> list[cst.If]:
        """``if`` statements whose *body* (not test, not else) contains the current node."""
        out = []
        stack = self.stack
        for i in range(len(stack) - 2, -1, -1):
            node = stack[i]
            if isinstance(node, cst.If) and stack[i + 1] is node.body:
                out.append(node)
        return out

    def in_main_block(self) -> bool:
        return any(analysis.is_main_test(g.test) for g in self.guards())

    # -- shared classifications, cached per node ------------------------------------------
    def action(self, call: cst.Call) -> analysis.Action | None:
        key = id(call)
        if key not in self._actions:
            self._actions[key] = analysis.classify_call(call, self)
        return self._actions[key]

    def condition(self, test: cst.BaseExpression) -> analysis.Condition:
        key = id(test)
        cond = self._conditions.get(key)
        if cond is None:
            cond = self._conditions[key] = analysis.classify_condition(test)
        return cond

    def one_shot_flags(self, node: cst.If) -> tuple[str, ...]:
        """Flags the test checks with ``not`` and the body sets to True: "do this once"."""
        key = id(node)
        flags = self._one_shot.get(key)
        if flags is None:
            tested = self.condition(node.test).one_shot
            flags = ()
            if tested:
                set_true = analysis.flags_set_true(node.body)
                flags = tuple(f for f in tested if f in set_true)
            self._one_shot[key] = flags
        return flags

    def debug_reasons(self, action: analysis.Action) -> list[analysis.Reason]:
        """Why a dump or write at the current node looks like debug code (empty: it does not)."""
        return analysis.debug_reasons(action, self)

    # -- reporting ----------------------------------------------------------------------------
    def add_report(self, node: cst.CSTNode, *, code: str, name: str, severity: Severity, message: str,
                   artifact_pattern: str | None) -> None:
        self.reports.append(RuleHit(node, code, name, severity, message, artifact_pattern))

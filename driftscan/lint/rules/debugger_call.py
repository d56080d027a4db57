"""DBG106 debugger-call: a call that stops in or attaches a debugger."""

from __future__ import annotations

import libcst as cst

from driftscan.lint import analysis, astdump, astfacts, triggers
from driftscan.lint.vocabulary import ActionKind
from driftscan.lint.context import FileContext
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class DebuggerCall(Rule):
    """``breakpoint()``, ``pdb.set_trace()`` (any ``.set_trace()`` or ``.post_mortem()``),
    ``pdb.pm()``, ``debugpy.listen()``/``wait_for_client()``, ``IPython.embed()``,
    ``code.interact()``, ``torch.distributed.breakpoint()``. In library code these hang a
    server on its first request. A module that defines its own ``breakpoint`` function is
    not using the built-in one. Inside a function that is itself a debugging helper (named
    like ``breakpoint``, ``*_debug*``, ``*pdb*``, ``*trace*``) the call is that helper's
    implementation: medium."""

    CODE = "DBG106"
    NAME = "debugger-call"
    MESSAGE = "debugger call"
    SEVERITY = Severity.HIGH
    TRIGGER = triggers.DEBUGGER
    AST_CHECK = astfacts.DEBUGGER_CALL
    AST_EXACT = astdump.DEBUGGER_CALL  # decided on CPython's tree where it can tell (astdump.py)

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.calls: list[tuple[cst.Call, str, str | None]] = []
        self.defines_breakpoint = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "breakpoint":
            self.defines_breakpoint = True

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is not None and action.kind is ActionKind.DEBUGGER:
            self.calls.append((node, action.label, analysis.in_debugging_helper(self.context)))

    def leave_Module(self, node: cst.Module) -> None:
        for call, label, helper in self.calls:
            if label == "breakpoint" and self.defines_breakpoint:
                continue
            if helper:
                self.report(call, f"debugger call {label}() in debugging helper {helper}()", severity=Severity.MEDIUM)
            else:
                self.report(call, f"debugger call {label}()")

    VALID = [
        Valid("def breakpoint(rank=0):\n    pass\n\nbreakpoint()\n"),
        Valid("tracer.start_trace()\nset_breakpoint = 1\n"),
    ]
    INVALID = [
        Invalid("def f(x):\n    breakpoint()\n    return x\n", line=2, column=5),
        Invalid("import pdb\n\ndef f():\n    pdb.set_trace()\n", line=4),
        Invalid("import ipdb; ipdb.set_trace()\n", line=1, column=14),
        Invalid("import debugpy\ndebugpy.listen(5678)\ndebugpy.wait_for_client()\n", line=2),
        Invalid("import torch.distributed as dist\ndist.breakpoint()\n", line=2),
        Invalid(
            "def _breakpoint_for_c_dynamo(*args):\n    breakpoint()\n", line=2, severity=Severity.MEDIUM
        ),
    ]

"""DBG105 shape-conditional-debug: debug code that fires on a specific tensor shape."""

from __future__ import annotations

import libcst as cst

from driftscan.lint import astfacts, triggers
from driftscan.lint.context import FileContext
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class ShapeConditionalDebug(Rule):
    """An ``if`` on a tensor shape (``.shape``, ``.ndim``, ``.size()``, ``.numel()``,
    ``.dim()``) whose body dumps, writes to /tmp, enters a debugger or prints: debugging
    aimed at one input shape. High, or medium when the only thing guarded is a print.
    Shape conditions in ordinary logic (choosing a kernel by ``weight.shape[0]``) are not
    reported."""

    CODE = "DBG105"
    NAME = "shape-conditional-debug"
    MESSAGE = "shape condition guarding debug code"
    SEVERITY = Severity.HIGH
    TRIGGER = triggers.AllOf(triggers.AnyOf(triggers.DEBUG_ACTION, triggers.PRINT), triggers.SHAPE,
                             triggers.SHAPE_GUARD)
    AST_CHECK = astfacts.SHAPE_GUARD

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.guarded: dict[int, tuple[cst.If, set[str]]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is None:
            return
        for guard in self.context.guards():
            if self.context.condition(guard.test).shape:
                self.guarded.setdefault(id(guard), (guard, set()))[1].add(action.label)

    def leave_Module(self, node: cst.Module) -> None:
        for guard, labels in self.guarded.values():
            severity = Severity.MEDIUM if labels == {"print"} else Severity.HIGH
            calls = ", ".join(f"{label}()" for label in sorted(labels))
            self.report(guard, f"shape condition guards {calls}", severity=severity)

    VALID = [
        Valid(
            """
            class DeepseekV2MLAAttention:
                def forward(self, x):
                    if self.weight.shape[0] == 2112:
                        x = self.fused_qkv_a_proj(x)[0]
                    else:
                        x = self.q_a_proj(x)[0]
                    print("ok")
                    return x
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            def forward(self, hidden_states):
                if hidden_states.shape[0] == 16:
                    torch.save(hidden_states, "/tmp/h16.pt")
            """,
            line=2,
            column=5,
            severity=Severity.HIGH,
        ),
        Invalid(
            """
            def forward(self, x):
                if x.size(0) > 4096:
                    print("big batch", x.size())
            """,
            line=2,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """
            def forward(self, x):
                if x.numel() == 0:
                    import pdb; pdb.set_trace()
            """,
            line=2,
        ),
    ]

"""DBG104 one-shot-flag: "do this once per process" around debug code."""

from __future__ import annotations

import libcst as cst

from driftscan.lint import analysis, astfacts, triggers
from driftscan.lint.vocabulary import ActionKind
from driftscan.lint.context import FileContext
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class OneShotFlag(Rule):
    """An ``if not Cls.flag:`` (or ``not self.flag``, ``not getattr(self, "flag", False)``)
    whose body sets the flag to ``True`` — run once per process — around a dump, a write to
    /tmp or a debugger call, or with a flag whose name says debug/dump. This is how a debug
    dump is kept from flooding the disk; a "warn once" flag around logging is not reported."""

    CODE = "DBG104"
    NAME = "one-shot-flag"
    MESSAGE = "one-shot flag guarding debug code"
    SEVERITY = Severity.HIGH
    TRIGGER = triggers.AnyOf(triggers.DEBUG_ACTION, triggers.MARKER_TRUE)
    AST_CHECK = astfacts.ONE_SHOT

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # id(if) -> (node, flag, what it guards); an action beats a debug-sounding name.
        self.found: dict[int, tuple[cst.If, str, str]] = {}

    def visit_If(self, node: cst.If) -> None:
        for flag in self.context.one_shot_flags(node):
            if analysis.has_marker(flag):
                self.found.setdefault(id(node), (node, flag, "is named as a debug switch"))

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is None or action.kind is ActionKind.PRINT:
            return
        for guard in self.context.guards():
            flags = self.context.one_shot_flags(guard)
            previous = self.found.get(id(guard))
            if flags and (previous is None or not previous[2].startswith("guards")):
                self.found[id(guard)] = (guard, flags[0], f"guards {action.label}()")

    def leave_Module(self, node: cst.Module) -> None:
        for guard, flag, what in self.found.values():
            self.report(guard, f"one-shot flag {flag} {what} (runs once per process)")

    VALID = [
        Valid(
            """
            class Model:
                _warned = False

                def forward(self, x):
                    if not Model._warned:
                        logger.warning("slow path")
                        Model._warned = True
            """
        ),
        Valid(
            """
            def f(self):
                if not self.enabled:
                    torch.save(x, "/tmp/x.pt")
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            class DeepseekV2MLAAttention:
                _dumped_once = False

                def forward(self, q):
                    if not DeepseekV2MLAAttention._dumped_once:
                        torch.save(q, f"/tmp/q_{q.shape[0]}.pt")
                        DeepseekV2MLAAttention._dumped_once = True
            """,
            line=5,
            column=9,
            severity=Severity.HIGH,
        ),
        Invalid(
            """
            def forward(self, x):
                if x.shape[0] == 7 and not getattr(self, "_saved", False):
                    np.save("/tmp/x.npy", x)
                    setattr(self, "_saved", True)
            """,
            line=2,
        ),
        Invalid(
            """
            def forward(self, x):
                if not self._debug_dumped:
                    self._write_everything(x)
                    self._debug_dumped = True
            """,
            line=2,
        ),
    ]

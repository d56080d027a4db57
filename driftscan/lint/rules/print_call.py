"""DBG109 print-call: print() in library code."""

from __future__ import annotations

import os

import libcst as cst

from driftscan.lint import astfacts, triggers
from driftscan.lint.vocabulary import ActionKind
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class PrintCall(Rule):
    """A ``print(...)`` statement (the built-in, called on its own line or after ``:``/``;``)
    in library code. Libraries log; a print is often a debugging leftover. Low severity:
    command-line entry points print on purpose, so calls under ``if __name__ ==
    "__main__":`` and in ``__main__.py`` files are not reported, nor are prints inside
    expressions."""

    CODE = "DBG109"
    NAME = "print-call"
    MESSAGE = "print() in library code"
    SEVERITY = Severity.LOW
    # 673 of 741 findings in pristine torch + transformers were prints: off unless selected.
    DEFAULT_ENABLED = False
    TRIGGER = triggers.PRINT
    AST_CHECK = astfacts.PRINT_STATEMENT

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is None or action.kind is not ActionKind.PRINT:
            return
        if os.path.basename(self.context.path) == "__main__.py" or self.context.in_main_block():
            return
        self.report(node)

    VALID = [
        Valid('if __name__ == "__main__":\n    print("usage")\n'),
        Valid("logger.info('x')\nself.print(x)\npprint(x)\n"),
        Valid("from rich import print\nprint('[bold]x')\n"),
        Valid('def f():\n    """Example:\n\n    >>> print(f())\n    """\n    return (print(1))\n'),
    ]
    INVALID = [
        Invalid("def forward(self, x):\n    print(x.shape)\n    return x\n", line=2, column=5, severity=Severity.LOW),
        Invalid("if x.is_cuda: print(x.device); print(x.dtype)\n", line=1, column=15),
    ]

"""DBG107 debugger-import: a debugger module imported by library code."""

from __future__ import annotations

import libcst as cst

from driftscan.lint import analysis, astdump, astfacts, triggers
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class DebuggerImport(Rule):
    """An import of ``pdb``, ``ipdb``, ``pudb``, ``debugpy``, ``pydevd``, ``wdb``,
    ``web_pdb`` or ``remote_pdb``. Usually left over from a debugging session; a few
    libraries import ``pdb`` on purpose to offer their own debugging helpers."""

    CODE = "DBG107"
    NAME = "debugger-import"
    MESSAGE = "debugger module imported"
    SEVERITY = Severity.MEDIUM
    TRIGGER = triggers.DEBUGGER_MODULES
    AST_CHECK = astfacts.DEBUGGER_IMPORT
    AST_EXACT = astdump.DEBUGGER_IMPORT  # decided on CPython's tree where it can tell (astdump.py)

    def _check(self, node: cst.CSTNode, module: str | None) -> None:
        top = (module or "").split(".", 1)[0]
        if top in analysis.DEBUGGER_MODULES:
            self.report(node, f"debugger module {top} imported")

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._check(node, analysis.dotted_name(alias.name))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not node.relative and node.module is not None:
            self._check(node, analysis.dotted_name(node.module))

    VALID = [Valid("import pdbx_reader\nfrom .pdb import parse\nimport os\n")]
    INVALID = [
        Invalid("import os, pdb\n", line=1, column=1),
        Invalid("def f():\n    from ipdb import set_trace\n", line=2, column=5),
        Invalid("import pydevd_pycharm\n", line=1),
    ]

"""DBG001 parse-error: a Python file that does not parse."""

from __future__ import annotations

from driftscan.lint import triggers
from driftscan.lint.vocabulary import FileProblem
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class ParseError(Rule):
    """The file could not be parsed — a syntax error, Python 2 code, a NUL byte — so the
    rules could not inspect it. Inside an installed package a file that does not parse was
    usually damaged by an edit.

    Reported when the file could hide debug code: some selected rule's trigger, or this
    rule's own (the byte patterns of debug code, Python 2 statements, NUL bytes), matches
    its bytes. A file with none of them can hold no debug code, so a scan need not parse
    it — and reports the same with or without the prefilter."""

    CODE = "DBG001"
    NAME = "parse-error"
    MESSAGE = "could not parse"
    SEVERITY = Severity.MEDIUM
    FILE_PROBLEM = FileProblem.PARSE
    TRIGGER = triggers.AnyOf(
        triggers.PYTHON2,
        triggers.NUL,
        triggers.DEBUG_ACTION,
        triggers.DEBUGGER_MODULES,
        triggers.PRINT,
        triggers.MARKER_ASSIGN,
        triggers.MARKER_TRUE,
        triggers.LAZY_COUNTER,
    )
    VALID = [
        Valid("x = 1\n"),
        # Broken, but nothing in it could be debug code: not this scan's business.
        Valid("def f(:\n    pass\n"),
    ]
    INVALID = [
        Invalid('print "hello"\n', line=1, column=1),
        Invalid('import torch\n\ndef forward(self, x):\n    torch.save(x, "/tmp/x.pt"\n', line=4),
        Invalid(b"x = 1\x00\n", line=1),
        Invalid('import os\n\ndef main():\n    exec "x = 1"\n', line=4),
    ]

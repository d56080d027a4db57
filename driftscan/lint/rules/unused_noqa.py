"""DBG006 unused-noqa: a ``# noqa: DBG…`` code with no finding of its own on that line."""

from __future__ import annotations

from driftscan.lint import triggers
from driftscan.lint.noqa import NOQA_PROBLEM
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class UnusedNoqa(Rule):
    """A ``# noqa: CODE`` comment names a code that has no finding on its line: the debug code
    it excused is gone, the rule did not run, or the code is misspelt — and the comment would
    silently excuse whatever that rule finds there later. Like ruff's RUF100, for driftscan's
    own codes only (those with the letters of a rule that ran: ``# noqa: E501`` belongs to
    another linter). A bare ``# noqa`` is never reported.

    Off by default: ``driftscan scan --strict`` turns it on (``--ignore DBG006`` keeps it off),
    as does a ``--select`` that names it. See docs/configuration.md for how ``# noqa`` works."""

    CODE = "DBG006"
    NAME = "unused-noqa"
    MESSAGE = "unused noqa code"
    SEVERITY = Severity.MEDIUM
    FILE_PROBLEM = NOQA_PROBLEM
    DEFAULT_ENABLED = False
    TRIGGER = triggers.Trigger(rb"#[ \t\f]*noqa[ \t\f]*:", (b"noqa",), ignore_case=True, label="noqa comment")
    VALID = [
        Valid("import os  # noqa: F401 (another linter's code)\n"),
        Valid("x = 1  # noqa\n"),
        Valid('text = "# noqa: DBG101"  # a string, not a comment\n'),
    ]
    INVALID = [
        Invalid("x = 1  # noqa: DBG101\n", line=1, column=8),
        Invalid("def f(x):\n    return x  # NOQA:DBG102,DBG103 kept on purpose\n", line=2, column=15),
    ]

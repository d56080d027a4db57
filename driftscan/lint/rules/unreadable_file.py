"""DBG002 unreadable-file: a file that could not be read or decoded."""

from __future__ import annotations

from driftscan.lint import triggers
from driftscan.lint.vocabulary import FileProblem
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class UnreadableFile(Rule):
    """The file could not be read (permissions, I/O error) or its bytes are not valid in
    its declared encoding (UTF-8 unless a PEP 263 coding line says otherwise), so the rules
    could not inspect it."""

    CODE = "DBG002"
    NAME = "unreadable-file"
    MESSAGE = "could not read or decode"
    SEVERITY = Severity.MEDIUM
    FILE_PROBLEM = FileProblem.READ
    TRIGGER = triggers.Undecodable()
    VALID = [Valid(b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n")]
    INVALID = [
        Invalid(b"x = 1\ny = '\xff\xfe'\n", line=2),
        Invalid(b"# coding: no-such-codec\nx = 1\n", line=1),
    ]

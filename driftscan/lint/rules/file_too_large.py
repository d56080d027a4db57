"""DBG003 file-too-large: a file over the size limit, not inspected."""

from __future__ import annotations

from driftscan.lint.vocabulary import FileProblem
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class FileTooLarge(Rule):
    """The file is larger than the inspection limit (``MAX_FILE_BYTES``, 4 MiB by default)
    and was not parsed. Files that large are generated tables; the examples below are
    checked with a 64-byte limit."""

    CODE = "DBG003"
    NAME = "file-too-large"
    MESSAGE = "file too large to inspect"
    SEVERITY = Severity.LOW
    FILE_PROBLEM = FileProblem.SIZE
    EXAMPLE_MAX_BYTES = 64
    VALID = [Valid("x = 1\n")]
    INVALID = [Invalid("TABLE = [\n" + "    0,\n" * 20 + "]\n", line=1, column=1)]

"""DBG004 too-complex: a file nested too deeply or too complex to parse safely."""

from __future__ import annotations

from driftscan.lint.vocabulary import FileProblem
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.lint.rules.parse_error import ParseError
from driftscan.core.values import Severity


class TooComplex(Rule):
    """The file was not parsed: its nesting or its expression chains are past what the parser
    handles safely, or parsing it took too long or crashed the parser. libcst's parser
    recurses once per level of the syntax tree — 100,000 nested parentheses crash it, and
    5,000 chained ``+`` take it 15 seconds — so a byte scan measures every file first (see
    ``driftscan/lint/complexity.py``): more than 200 levels of brackets or f-strings
    (more than CPython itself accepts), a chain of over 4,000 bytes of code down one
    nesting path, too many long chains, or too much code more than 24 levels deep, and the
    file is refused. Real code stays far below (no file of a 2,000-file venv nests deeper
    than 15 levels or chains more than 950 bytes). In a worker process a file also has a
    time budget, and a parser crash costs only that file.

    Reported, as DBG001 is, when the file could hide debug code (its bytes match some
    selected rule's trigger, or DBG001's): a file past the limits is as uninspected as one
    that does not parse, and says so."""

    CODE = "DBG004"
    NAME = "too-complex"
    MESSAGE = "too deeply nested or too complex to parse safely"
    SEVERITY = Severity.MEDIUM
    FILE_PROBLEM = FileProblem.COMPLEXITY
    TRIGGER = ParseError.TRIGGER
    VALID = [
        Valid("x = " + "(" * 20 + "1" + ")" * 20 + "\n"),
        # Brackets in strings and comments are not nesting.
        Valid("x = '" + "(" * 200 + "'  # " + "[" * 200 + "\n"),
        Valid('print(f"{x!r:>10}", "((((" "))))")\n'),
    ]
    INVALID = [
        Invalid("print(" + "(" * 250 + "1" + ")" * 250 + ")\n", line=1, column=1),
        Invalid("import torch\nx = " + "+".join(["a"] * 3000) + "\ntorch.save(x, '/tmp/x.pt')\n", line=1),
    ]

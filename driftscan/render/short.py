"""A short listing, in the spirit of ``git status -s`` and ``debsums -c``: one line per drift,
nothing else (no header, no summary, no colour)::

    M  lib/python3.12/site-packages/demo/core.py
    A! lib/python3.12/site-packages/stray_patch.py
    m  lib/python3.12/site-packages/demo/accepted.py

Column 1 is the drift's kind (``CODES``), upper case, or lower case when the configuration
accepts the drift. Column 2 is what a reinstall does to it (``MARKS``): blank when it wipes
it, ``!`` when it survives, ``?`` when it may survive. A space, then the path from column 4 on,
so ``cut -c4-`` gives the paths.

Paths are relative to the working directory when the file is below it, absolute otherwise
(``git status -s`` is relative to where it runs; an absolute path is what ``debsums -c`` gives):
either way ``cut -c4- | xargs ls -l`` finds the files from where the command ran. A path with
whitespace, a double quote, a backslash or a character that is not printable (a newline, a
control character) is quoted as ``git status -s`` quotes it: in double quotes, with C escapes
(``\\n``, ``\\t``, ``\\"``, ``\\\\``, and ``\\ooo`` octal for the other bytes of the character
in UTF-8), so each drift stays one line. A byte that is not valid UTF-8 is ``\\xNN`` text, as in
the JSON report.
"""

from __future__ import annotations

import os
import posixpath

from ..core.values import DriftKind, Prediction
from ..report.contract import DriftOut, Report

#: The status letter of each kind of drift (lower case: accepted).
CODES: dict[DriftKind, str] = {
    DriftKind.MODIFIED: "M",
    DriftKind.ADDED: "A",
    DriftKind.MISSING: "D",  # deleted, as git says
    DriftKind.TYPE_CHANGED: "T",
    DriftKind.RESTORED: "R",
    DriftKind.CACHE_MODIFIED: "C",
    DriftKind.CLOBBERED: "U",  # two distributions install the file: git's "unmerged"
    DriftKind.ORPHANED_BYTECODE: "B",
    DriftKind.STALE_BYTECODE: "Y",  # bytecode Python runs instead of its modified source
    DriftKind.ORPHANED_METADATA: "O",
    DriftKind.STALE_METADATA: "S",
    DriftKind.CORRUPT: "X",
    DriftKind.HEAD_MOVED: "H",
    DriftKind.MISSING_DIRECTORY: "W",  # a whole directory gone
    DriftKind.MISSING_FILES: "F",
    DriftKind.DEBUG_ARTIFACTS: "L",  # dumps left over
    DriftKind.POSSIBLE_DEBUG_ARTIFACTS: "P",
    DriftKind.STARTUP_CODE: "E",  # executed at every start of the interpreter
    DriftKind.UPSTREAM_RECORD_MISMATCH: "K",  # as its wheel ships it: the wheel's own RECORD row is wrong
    DriftKind.RECORD_REWRITTEN: "V",  # fails verification against the wheel's own RECORD
    DriftKind.LOCK_MISMATCH: "N",  # not as the lockfile pins it
    DriftKind.PATCHED: "Q",  # written by the team's patch (quilt's letter)
}

#: What a reinstall does, in column 2.
MARKS: dict[Prediction, str] = {Prediction.WIPED: " ", Prediction.SURVIVES: "!", Prediction.MAY_SURVIVE: "?"}

_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r",
              '"': '\\"', "\\": "\\\\"}


def quote(path: str) -> str:
    """``path`` as is, or C-quoted in double quotes when it has whitespace, ``"``, ``\\`` or a
    character that is not printable (``git status -s``'s rule)."""
    if all(c.isprintable() and not c.isspace() and c not in '"\\' for c in path):
        return path
    out = []
    for c in path:
        if c in _C_ESCAPES:
            out.append(_C_ESCAPES[c])
        elif c.isprintable() and (c == " " or not c.isspace()):
            out.append(c)
        else:
            out.append("".join(f"\\{b:03o}" for b in c.encode("utf-8", "surrogateescape")))
    return '"' + "".join(out) + '"'


def shown_path(path: str, cwd: str) -> str:
    """``path`` relative to ``cwd`` when below it, else as it is (absolute)."""
    base = posixpath.normpath(cwd)
    norm = posixpath.normpath(path)
    if not posixpath.isabs(norm) or norm == base:
        return path
    prefix = base if base.endswith("/") else base + "/"
    return norm[len(prefix):] if norm.startswith(prefix) else path


def line(drift: DriftOut, cwd: str) -> str:
    code = CODES[drift.kind]
    if drift.accepted:
        code = code.lower()
    return f"{code}{MARKS[drift.prediction]} {quote(shown_path(drift.path, cwd))}"


def render_short(report: Report, *, cwd: str | None = None) -> str:
    """One line per drift of ``report``; ``cwd``: the directory paths are made relative to
    (default: the working directory)."""
    base = os.getcwd() if cwd is None else cwd
    return "".join(line(d, base) + "\n" for d in report.drifts)

"""The rule base class: a visitor with a code, a name, a severity and its own examples.

Modelled on Fixit: a rule is one class in one file, and its ``VALID`` / ``INVALID`` examples
are both its documentation (``docs/rules.md`` is generated from them) and its tests.

Rules are visitors in the libcst style — ``visit_Call(self, node)``, ``leave_If(self, node)`` —
but they are not walked one by one: the engine parses a file once and walks it once,
calling every rule's methods for each node (see ``walker.py``). Shared facts about the file
(ancestors, imports, path literals, guards) live on ``self.context`` so they are computed once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from ..core.values import Severity
from .triggers import BaseTrigger
from .vocabulary import FileProblem

if TYPE_CHECKING:
    from .context import FileContext

CODE_RE = re.compile(r"^[A-Z]{1,5}[0-9]{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Valid:
    """Code the rule must not report anything on."""

    code: str | bytes


@dataclass(frozen=True)
class Invalid:
    """Code the rule must report. ``line``/``column`` (1-based) and the other fields, when
    given, must match at least one of the rule's findings."""

    code: str | bytes
    line: int | None = None
    column: int | None = None
    severity: Severity | None = None
    # "" means: the finding must carry no artifact pattern.
    artifact_pattern: str | None = None


Example = str | bytes | Valid | Invalid


class Rule:
    """Base class of every rule. Subclasses set the class attributes below."""

    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""
    MESSAGE: ClassVar[str] = ""
    SEVERITY: ClassVar[Severity] = Severity.MEDIUM
    #: Necessary condition on the raw bytes (see triggers.py); None: the rule sees every file.
    TRIGGER: ClassVar[BaseTrigger | None] = None
    #: Necessary condition on CPython's syntax tree (see astfacts.py), checked with the prefilter
    #: once ``TRIGGER`` held: a file reaches libcst only if some rule's check holds too. None: none.
    AST_CHECK: ClassVar[BaseTrigger | None] = None
    #: The rule's findings, decided exactly on CPython's tree (astdump.KINDS; read from the class's
    #: own body only, so a subclass that changes the rule falls back to libcst). None: libcst only.
    AST_EXACT: ClassVar[str | None] = None
    VALID: ClassVar[Sequence[Example]] = ()
    INVALID: ClassVar[Sequence[Example]] = ()
    #: Set by the rules that describe a file the engine could not inspect
    #: (parse, read, size, complexity; noqa); those rules have no visitor methods.
    FILE_PROBLEM: ClassVar[FileProblem | None] = None
    #: Size cap the examples are checked with (only the file-size rule needs one).
    EXAMPLE_MAX_BYTES: ClassVar[int | None] = None
    #: False for a noisy rule that runs only when a --select names it (its code, a prefix of it,
    #: its name or ALL), as ruff keeps T20 off by default.
    DEFAULT_ENABLED: ClassVar[bool] = True

    def __init__(self, context: FileContext):
        self.context = context

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        severity: Severity | None = None,
        artifact_pattern: str | None = None,
    ) -> None:
        """Report ``node``; its position is resolved after the walk, only if needed."""
        self.context.add_report(
            node,
            code=self.CODE,
            name=self.NAME,
            severity=severity or self.SEVERITY,
            message=message or self.MESSAGE,
            artifact_pattern=artifact_pattern,
        )

    @classmethod
    def problems(cls) -> list[str]:
        """What is wrong with the class attributes (empty when the rule is well formed)."""
        out = []
        if not CODE_RE.match(cls.CODE or ""):
            out.append(f"code {cls.CODE!r} is not like 'DBG101'")
        if not NAME_RE.match(cls.NAME or ""):
            out.append(f"name {cls.NAME!r} is not kebab-case")
        if not cls.MESSAGE:
            out.append("MESSAGE is empty")
        if not isinstance(cls.SEVERITY, Severity):
            out.append("SEVERITY is not a driftscan.core.values.Severity")
        if not cls.INVALID:
            out.append("no INVALID example")
        return out

    @classmethod
    def describe(cls) -> str:
        return f"{cls.CODE} {cls.NAME}"

"""DBG108 tmp-write: a file written under /tmp by library code."""

from __future__ import annotations

import libcst as cst

from driftscan.lint import astfacts, triggers
from driftscan.lint.vocabulary import ActionKind, ReasonKind
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class TmpWrite(Rule):
    """``open(path, "w"/"wb"/"a"/"x"/"+")`` or ``Path(...).write_text()``/``write_bytes()``
    on a literal path under /tmp, /var/tmp or /dev/shm. Libraries that need scratch files use
    ``tempfile``; a hard-coded /tmp path is usually a debugging leftover. Medium, high in a
    per-call function or under a one-shot flag or shape condition. ``open()`` passed straight to a dump call is
    left to DBG101."""

    CODE = "DBG108"
    NAME = "tmp-write"
    MESSAGE = "write to a hard-coded /tmp path"
    SEVERITY = Severity.MEDIUM
    TRIGGER = triggers.TMP
    AST_CHECK = astfacts.TMP_WRITE

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is None or action.kind is not ActionKind.TMP_WRITE or self._argument_of_dump():
            return
        reasons = [r for r in self.context.debug_reasons(action)
                   if r.kind not in (ReasonKind.TMP_PATH, ReasonKind.DEBUG_PATH)]
        severity = Severity.HIGH if any(r.strong for r in reasons) else Severity.MEDIUM
        detail = "".join(f"; {r.text}" for r in reasons)
        where = action.path.glob if action.path is not None else "a /tmp path"  # a tmp-write has a path
        self.report(
            node,
            f"{action.label}() writes to {where}{detail}",
            severity=severity,
            artifact_pattern=action.artifact_pattern,
        )

    def _argument_of_dump(self) -> bool:
        stack = self.context.stack
        if len(stack) >= 3 and isinstance(stack[-2], cst.Arg) and isinstance(stack[-3], cst.Call):
            outer = self.context.action(stack[-3])
            return outer is not None and outer.kind is ActionKind.DUMP
        return False

    VALID = [
        Valid('with open("/tmp/config.json") as f:\n    cfg = f.read()\n'),
        Valid('with open(os.path.join(tempfile.mkdtemp(), "x.txt"), "w") as f:\n    f.write("x")\n'),
        Valid('import pickle\npickle.dump(obj, open("/tmp/o.pkl", "wb"))\n'),
    ]
    INVALID = [
        Invalid(
            'with open("/tmp/attn_out.txt", "w") as f:\n    f.write(str(x))\n',
            line=1,
            column=6,
            severity=Severity.MEDIUM,
            artifact_pattern="/tmp/attn_out.txt",
        ),
        Invalid(
            """
            from pathlib import Path

            class M:
                def forward(self, x):
                    Path(f"/tmp/shapes_{x.shape[0]}.log").write_text(repr(x.shape))
            """,
            line=5,
            severity=Severity.HIGH,
            artifact_pattern="/tmp/shapes_*.log",
        ),
        Invalid(
            'f = open("/dev/shm/trace-%d.json" % rank, mode="a")\n', line=1, artifact_pattern="/dev/shm/trace-*.json"
        ),
    ]

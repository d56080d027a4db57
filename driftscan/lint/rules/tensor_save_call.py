"""DBG102 tensor-save-call: a serialisation call outside any debugging context."""

from __future__ import annotations

import libcst as cst

from driftscan.lint import astdump, astfacts, triggers
from driftscan.lint.vocabulary import ActionKind
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class TensorSaveCall(Rule):
    """A serialisation call (``torch.save``, ``numpy.save``, ``pickle.dump``... as in
    DBG101) with none of the signs of a debug dump. Libraries save checkpoints and caches
    legitimately, so this is only a pointer for review — worth a look when it appears in a
    file that drifted from its installed version."""

    CODE = "DBG102"
    NAME = "tensor-save-call"
    MESSAGE = "serialisation call; review if this file was edited"
    SEVERITY = Severity.LOW
    TRIGGER = triggers.DUMP
    AST_CHECK = astfacts.DUMP_CALL
    AST_EXACT = astdump.DUMP_PLAIN  # decided on CPython's tree where it can tell (astdump.py)

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is None or action.kind is not ActionKind.DUMP or self.context.debug_reasons(action):
            return
        self.report(
            node,
            f"{action.label}(): serialisation call; review if this file was edited",
            artifact_pattern=action.artifact_pattern,
        )

    VALID = [
        Valid('import torch\ntorch.save(x, "/tmp/q.pt")\n'),
        Valid("import torch\ntorch.load(path)\nmodel.save(path)\n"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            class KVConnector:
                def save_kv_layer(self, layer_name, kv_layer, filename):
                    torch.save({"kv": kv_layer}, filename)
            """,
            line=5,
            column=9,
            severity=Severity.LOW,
            artifact_pattern="",
        ),
        Invalid("import pickle as pkl\n\ndef store(obj, f):\n    pkl.dump(obj, f)\n", line=4),
    ]

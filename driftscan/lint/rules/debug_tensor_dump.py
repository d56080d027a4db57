"""DBG101 debug-tensor-dump: a tensor dump in a debugging context."""

from __future__ import annotations

import libcst as cst

from driftscan.lint import astdump, astfacts, triggers
from driftscan.lint.vocabulary import ActionKind
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.core.values import Severity


class DebugTensorDump(Rule):
    """A serialisation call — ``torch.save``, ``numpy.save``/``savez``/``savez_compressed``/
    ``savetxt``, ``pickle.dump``, ``joblib.dump``, safetensors ``save_file``, ``x.tofile`` —
    that looks like a debugging dump: it writes under /tmp (or /var/tmp, /dev/shm) or to a
    path naming debug/dump, it sits in a function that runs on every call (``forward``,
    ``__call__``, ``*_step``...), or it is guarded by a one-shot flag or a shape condition.
    Such code writes files nobody reads, on every pass or once per process. A dump whose
    only sign is a debug switch guarding it (``if DEBUG_DUMP:``) is a debugging feature that
    is off unless asked for: medium. Serialising into ``io.BytesIO`` or a
    ``tempfile.TemporaryFile`` leaves nothing behind and is not a dump.

    When the written path has a constant file-name part, the finding carries a glob of it
    (``artifact_pattern``) so leftover dumps can be found on disk."""

    CODE = "DBG101"
    NAME = "debug-tensor-dump"
    MESSAGE = "tensor dump in a debugging context"
    SEVERITY = Severity.HIGH
    TRIGGER = triggers.DUMP
    AST_CHECK = astfacts.DUMP_CALL
    AST_EXACT = astdump.DUMP_DEBUG  # decided on CPython's tree where it can tell (astdump.py)

    def visit_Call(self, node: cst.Call) -> None:
        action = self.context.action(node)
        if action is None or action.kind is not ActionKind.DUMP:
            return
        reasons = self.context.debug_reasons(action)
        if not reasons:
            return
        # Only a debug switch guards it: a debugging feature, off unless asked for.
        severity = Severity.HIGH if any(r.strong for r in reasons) else Severity.MEDIUM
        pattern = action.artifact_pattern
        where = ""
        if pattern is None and action.path is not None and action.path.in_tmp:
            where = " (the path is too unspecific to look for leftover files)"
        why = "; ".join(r.text for r in reasons)
        self.report(node, f"{action.label}(): debug dump, {why}{where}", severity=severity, artifact_pattern=pattern)

    VALID = [
        Valid(
            """
            import torch

            def save_checkpoint(model, path):
                torch.save(model.state_dict(), path)
            """
        ),
        Valid(
            """
            import io, tempfile, torch

            class Module:
                def forward(self, x):
                    buf = io.BytesIO()
                    torch.save(x, buf)
                    with tempfile.TemporaryFile() as f:
                        torch.save(x, f)
            """
        ),
        Valid(
            """
            import numpy as np

            class Exporter:
                def export(self, array, out_dir):
                    np.save(os.path.join(out_dir, "weights.npy"), array)
            """
        ),
        # A legitimate save in serialization code: path from a variable, not per call.
        Valid(
            """
            import torch

            class KVConnector:
                def save_kv_layer(self, layer_name, kv_layer, filename):
                    tensors = {"kv": kv_layer}
                    torch.save(tensors, filename)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            if envs.DEBUG_DUMP_INPUTS:
                torch.save(inputs, os.path.join(dump_dir, "inputs.pt"))
            """,
            line=2,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """
            import torch
            torch.save(x, "/tmp/q.pt")
            """,
            line=2,
            column=1,
            severity=Severity.HIGH,
            artifact_pattern="/tmp/q.pt",
        ),
        Invalid(
            """
            import torch

            class Attention:
                def forward(self, x):
                    torch.save(x, f"/tmp/nomla_{self._n}_{x.shape[0]}.pt")
                    return x
            """,
            line=5,
            column=9,
            artifact_pattern="/tmp/nomla_*_*.pt",
        ),
        Invalid(
            """
            import numpy as np

            def step(self, batch):
                np.savez_compressed(save_path, batch=batch)
            """,
            line=4,
            artifact_pattern="",
        ),
        Invalid(
            """
            import pickle

            def run(state):
                if DEBUG:
                    with open("/var/tmp/state_%d.pkl" % state.id, "wb") as f:
                        pickle.dump(state, f)
            """,
            line=6,
            artifact_pattern="/var/tmp/state_*.pkl",
        ),
        Invalid(
            """
            from safetensors.torch import save_file

            def load(self, tensors):
                path = os.path.join("/tmp", "dbg", "weights_" + str(self.rank) + ".safetensors")
                save_file(tensors, path)
            """,
            line=5,
            artifact_pattern="/tmp/dbg/weights_*.safetensors",
        ),
        Invalid(
            """
            def hook(module, args, out):
                out.detach().cpu().numpy().tofile(f"/tmp/{module.name}")
            """,
            line=2,
            artifact_pattern="",
        ),
        Invalid(
            """
            import torch
            from pathlib import Path

            class Layer:
                def __call__(self, x):
                    if not Layer._dumped:
                        torch.save(x, Path("/tmp/dumps") / f"layer_{id(self)}.pt")
                        Layer._dumped = True
            """,
            line=7,
            artifact_pattern="/tmp/dumps/layer_*.pt",
        ),
    ]

"""DBG102 tensor-save-call: a serialisation call with none of the signs DBG101 looks for."""

from __future__ import annotations

import textwrap

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.debug_tensor_dump import DebugTensorDump
from driftscan.lint.rules.tensor_save_call import TensorSaveCall


def run(text: str, rules=(TensorSaveCall,), prefilter: bool = False):
    data = textwrap.dedent(text).lstrip("\n")
    return inspect_source(data, "m.py", list(rules), prefilter=prefilter)


def test_a_plain_checkpoint_save_is_low_at_the_call():
    text = """
    import torch
    def save_checkpoint(model, path):
        torch.save(model.state_dict(), path)
    """
    (finding,) = run(text)
    assert (finding.code, finding.line, finding.column, finding.severity) == ("DBG102", 3, 5, Severity.LOW)
    assert "torch.save()" in finding.message
    assert run(text, prefilter=True) == [finding]


def test_an_absolute_constant_path_is_carried_as_the_artifact_pattern():
    (finding,) = run('import numpy as np\nnp.save("/data/cache/table.npy", t)\n')
    assert finding.artifact_pattern == "/data/cache/table.npy"


@pytest.mark.parametrize("text", [
    'import torch\ntorch.save(x, "/tmp/q.pt")\n',
    "import torch\nclass M:\n    def forward(self, x, p):\n        torch.save(x, p)\n",
    "import torch\nif DEBUG:\n    torch.save(x, p)\n",
])
def test_a_call_with_a_debug_sign_is_left_to_the_debug_dump_rule(text):
    assert run(text) == []
    assert [f.code for f in run(text, rules=(TensorSaveCall, DebugTensorDump))] == ["DBG101"]


@pytest.mark.parametrize("text", [
    "import io, torch\ntorch.save(x, io.BytesIO())\n",
    "import torch\ntorch.load(p)\n",
    "import json\njson.dump(x, f)\n",
])
def test_in_memory_saves_loads_and_other_serialisers_are_not_reported(text):
    assert run(text) == []


def test_each_save_call_is_one_finding():
    text = "import pickle\npickle.dump(a, f)\npickle.dump(b, g)\n"
    assert [f.line for f in run(text)] == [2, 3]

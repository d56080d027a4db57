"""DBG101 debug-tensor-dump: a serialisation call with a sign of debugging, and its artifact glob."""

from __future__ import annotations

import textwrap

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.debug_tensor_dump import DebugTensorDump


def findings(text: str, prefilter: bool = False):
    data = textwrap.dedent(text).lstrip("\n")
    return [f for f in inspect_source(data, "m.py", [DebugTensorDump], prefilter=prefilter) if f.code == "DBG101"]


@pytest.mark.parametrize(("call", "pattern"), [
    ('np.save("/tmp/a.npy", x)', "/tmp/a.npy"),
    ('numpy.savetxt("/var/tmp/a.txt", x)', "/var/tmp/a.txt"),
    ('pickle.dump(x, open("/dev/shm/a.pkl", "wb"))', "/dev/shm/a.pkl"),
    ('joblib.dump(x, "/tmp/a.joblib")', "/tmp/a.joblib"),
    ('x.tofile("/tmp/a.bin")', "/tmp/a.bin"),
])
def test_a_dump_to_a_temporary_directory_is_high_with_its_glob(call, pattern):
    text = f"import numpy, pickle, joblib\nimport numpy as np\n{call}\n"
    found = findings(text)
    assert [(f.line, f.column, f.severity, f.artifact_pattern) for f in found] == [(3, 1, Severity.HIGH, pattern)]
    assert findings(text, prefilter=True) == found


def test_computed_parts_of_the_path_become_wildcards():
    text = """
    import os, torch
    def dump(x, rank, step):
        torch.save(x, os.path.join("/tmp/dbg", "rank%d" % rank, f"step_{step}.pt"))
    """
    (finding,) = findings(text)
    assert finding.artifact_pattern == "/tmp/dbg/rank*/step_*.pt"


def test_a_path_under_tmp_with_no_constant_file_name_carries_no_glob_and_says_why():
    text = 'import torch\nimport os\ntorch.save(x, os.path.join("/tmp", name))\n'
    (finding,) = findings(text)
    assert finding.artifact_pattern is None
    assert "too unspecific" in finding.message


def test_a_relative_path_naming_debug_is_a_reason_but_gives_no_glob():
    (finding,) = findings('import torch\ntorch.save(x, "debug_out/x.pt")\n')
    assert finding.severity == Severity.HIGH
    assert finding.artifact_pattern is None
    assert "debug path" in finding.message


@pytest.mark.parametrize("method", ["forward", "__call__", "training_step", "execute_model"])
def test_a_dump_in_a_per_call_method_is_reported(method):
    text = f"""
    import torch
    class M:
        def {method}(self, x, path):
            torch.save(x, path)
    """
    (finding,) = findings(text)
    assert (finding.line, finding.severity) == (4, Severity.HIGH)
    assert method in finding.message


def test_a_dump_guarded_only_by_a_debug_switch_is_medium():
    text = """
    import torch
    def export(x, path):
        if DUMP_ACTIVATIONS:
            torch.save(x, path)
    """
    (finding,) = findings(text)
    assert finding.severity == Severity.MEDIUM
    assert "DUMP_ACTIVATIONS" in finding.message


def test_a_dump_to_a_buffer_through_a_name_is_not_reported():
    text = """
    import io, torch
    class M:
        def forward(self, x):
            buf = io.BytesIO()
            torch.save(x, buf)
    """
    assert findings(text) == []


@pytest.mark.parametrize("text", [
    "import torch\ndef save(model, path):\n    torch.save(model.state_dict(), path)\n",
    'import torch\ntorch.load("/tmp/x.pt")\n',
    'import torch\nmodel.save("/tmp/x.pt")\n',
    'save("/tmp/x.pt", x)\n',
])
def test_plain_saves_loads_and_unrelated_save_methods_are_not_reported(text):
    assert findings(text) == []

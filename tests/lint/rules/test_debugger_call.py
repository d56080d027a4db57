"""DBG106 debugger-call: which calls count as entering a debugger, and the helper exception."""

from __future__ import annotations

import textwrap

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.debugger_call import DebuggerCall


def findings(text: str, prefilter: bool = False):
    data = textwrap.dedent(text).lstrip("\n")
    return [f for f in inspect_source(data, "m.py", [DebuggerCall], prefilter=prefilter) if f.code == "DBG106"]


@pytest.mark.parametrize("call", [
    "import pdb\npdb.pm()\n",
    "import IPython\nIPython.embed()\n",
    "import code\ncode.interact()\n",
    "import pudb\npudb.post_mortem()\n",
    "import debugpy\ndebugpy.breakpoint()\n",
])
def test_each_documented_debugger_entry_is_reported_on_its_line(call):
    found = findings(call)
    assert [(f.line, f.severity) for f in found] == [(2, Severity.HIGH)]
    assert found == findings(call, prefilter=True)


def test_the_message_names_the_call():
    (finding,) = findings("import pdb\npdb.set_trace()\n")
    assert "set_trace" in finding.message and finding.name == "debugger-call"


def test_a_local_breakpoint_function_shadows_the_builtin_only_for_breakpoint():
    text = """
    def breakpoint():
        pass

    def f():
        breakpoint()
        import pdb
        pdb.set_trace()
    """
    assert [f.line for f in findings(text)] == [7]


def test_a_debugging_helper_is_medium_and_named():
    text = """
    def start_pdb_on_error():
        import pdb
        pdb.post_mortem()
    """
    (finding,) = findings(text)
    assert finding.severity == Severity.MEDIUM
    assert "start_pdb_on_error" in finding.message


def test_an_ordinary_function_keeps_high_severity():
    (finding,) = findings("def forward(x):\n    breakpoint()\n    return x\n")
    assert finding.severity == Severity.HIGH and (finding.line, finding.column) == (2, 5)


@pytest.mark.parametrize("text", [
    "breakpoint_count = 0\n",
    "obj.breakpoint\n",
    "def f(tracer):\n    tracer.start_trace()\n",
    "import pdb\n",
])
def test_names_that_only_look_like_debugger_calls_are_not_reported(text):
    assert findings(text) == []

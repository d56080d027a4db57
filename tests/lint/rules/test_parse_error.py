"""DBG001 parse-error: a file that does not parse is reported only when it could hide debug code."""

from __future__ import annotations

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.debugger_call import DebuggerCall
from driftscan.lint.rules.parse_error import ParseError
from driftscan.lint.rules.print_call import PrintCall


def run(data, rules=(ParseError,), prefilter=False):
    return inspect_source(data, "m.py", list(rules), prefilter=prefilter)


def test_a_broken_file_with_a_dump_call_is_reported_at_the_error():
    data = "import torch\n\n\ndef f(x):\n    torch.save(x, '/tmp/x.pt'\n"
    (finding,) = run(data)
    assert (finding.code, finding.severity) == ("DBG001", Severity.MEDIUM)
    assert finding.line >= 5
    assert run(data, prefilter=True) == [finding]


def test_python2_print_statement_is_reported_on_its_line():
    (finding,) = run("x = 1\nprint 'hello'\n")
    assert (finding.line, finding.column) == (2, 1)


def test_a_nul_byte_is_reported():
    assert [f.code for f in run(b"x = 1\n\x00\n")] == ["DBG001"]


@pytest.mark.parametrize("text", ["def f(:\n    pass\n", "x = (1,\n", "class\n"])
def test_a_broken_file_with_no_sign_of_debug_code_is_not_reported(text):
    assert run(text) == []
    assert run(text, prefilter=True) == []


def test_a_selected_rules_trigger_also_makes_a_broken_file_reportable():
    # DebuggerCall's trigger matches ``breakpoint(``; ParseError's own trigger covers it too.
    assert [f.code for f in run("breakpoint(\n", rules=(ParseError, DebuggerCall))] == ["DBG001"]


def test_a_broken_file_gives_no_findings_of_other_rules():
    found = run("breakpoint()\nx = (\n", rules=(ParseError, DebuggerCall, PrintCall))
    assert [f.code for f in found] == ["DBG001"]


def test_without_the_rule_a_broken_file_gives_nothing():
    assert run("breakpoint()\nx = (\n", rules=(DebuggerCall,)) == []


def test_a_file_that_parses_is_not_reported():
    assert run("import torch\ntorch.save(x, '/tmp/x.pt')\n") == []

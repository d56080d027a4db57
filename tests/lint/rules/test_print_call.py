"""DBG109 print-call: print statements in library code; entry points and expressions excepted."""

from __future__ import annotations

import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.print_call import PrintCall


def findings(text: str, path: str = "lib/m.py", prefilter: bool = False):
    return [f for f in inspect_source(text, path, [PrintCall], prefilter=prefilter) if f.code == "DBG109"]


def test_the_rule_is_off_unless_selected():
    assert PrintCall.DEFAULT_ENABLED is False
    assert all(f.code != "DBG109" for f in inspect_source("print(1)\n", "lib/m.py"))


def test_a_print_statement_is_low_at_its_call():
    text = "def f(x):\n    y = x\n    print(y)\n"
    (finding,) = findings(text)
    assert (finding.line, finding.column, finding.severity) == (3, 5, Severity.LOW)
    assert findings(text, prefilter=True) == [finding]


def test_a_print_in_a_main_py_file_is_not_reported():
    assert findings("print('usage')\n", path="pkg/__main__.py") == []
    assert len(findings("print('usage')\n", path="pkg/main.py")) == 1


def test_a_print_under_a_reversed_main_guard_is_not_reported():
    assert findings("if '__main__' == __name__:\n    print('hi')\n") == []


def test_a_print_after_the_main_block_is_reported():
    text = "if __name__ == '__main__':\n    print('a')\nprint('b')\n"
    assert [f.line for f in findings(text)] == [3]


@pytest.mark.parametrize("text", [
    "x = print(1)\n",
    "f(print)\n",
    "log = print\n",
    "[print(i) for i in range(3)]\n",
    "self.print('x')\n",
])
def test_prints_that_are_not_statements_of_the_builtin_are_not_reported(text):
    assert findings(text) == []


def test_two_prints_on_one_line_are_two_findings():
    found = findings("print(1); print(2)\n")
    assert sorted(f.column for f in found) == [1, 11]

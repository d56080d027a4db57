"""DBG004 too-complex: a file past the nesting and chain limits is refused before parsing."""

from __future__ import annotations

from driftscan.core.values import Severity
from driftscan.lint.complexity import MAX_DEPTH
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.debugger_call import DebuggerCall
from driftscan.lint.rules.too_complex import TooComplex


def run(text, rules=(TooComplex,), prefilter=False):
    return inspect_source(text, "m.py", list(rules), prefilter=prefilter)


def nested(depth: int) -> str:
    return "print(" + "(" * depth + "1" + ")" * depth + ")\n"


def test_nesting_past_the_limit_is_one_finding_at_the_file_start():
    (finding,) = run(nested(MAX_DEPTH + 5))
    assert (finding.code, finding.line, finding.column, finding.severity) == ("DBG004", 1, 1, Severity.MEDIUM)
    assert run(nested(MAX_DEPTH + 5), prefilter=True) == [finding]


def test_nesting_well_within_the_limit_is_not_reported():
    assert run(nested(MAX_DEPTH // 2)) == []


def test_a_refused_file_is_not_inspected_by_other_rules():
    text = "breakpoint()\n" + nested(MAX_DEPTH + 5)
    assert [f.code for f in run(text, rules=(TooComplex, DebuggerCall))] == ["DBG004"]


def test_a_deep_file_with_no_sign_of_debug_code_is_not_reported():
    text = "x = " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"
    assert run(text) == []


def test_brackets_inside_strings_and_comments_do_not_count():
    text = "print('" + "(" * 500 + "')  # " + "{" * 500 + "\n"
    assert run(text) == []

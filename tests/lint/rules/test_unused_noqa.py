"""DBG006 unused-noqa: a driftscan code in a ``# noqa:`` comment with no finding of its own on that line."""

from __future__ import annotations

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rules.debugger_call import DebuggerCall
from driftscan.lint.rules.parse_error import ParseError
from driftscan.lint.rules.unused_noqa import UnusedNoqa


def run(text: str, rules=(UnusedNoqa, DebuggerCall)):
    return inspect_source(text, "m.py", list(rules))


def test_a_code_that_suppresses_a_finding_is_used():
    assert run("breakpoint()  # noqa: DBG106\n") == []


def test_a_code_of_a_rule_that_found_nothing_there_is_reported_at_the_comment():
    (finding,) = run("x = 1  # noqa: DBG106\n")
    assert (finding.code, finding.line, finding.column) == ("DBG006", 1, 8)
    assert finding.severity == Severity.MEDIUM
    assert "DBG106" in finding.message and "no DBG106 finding" in finding.message


def test_a_code_of_a_rule_that_did_not_run_says_so():
    (finding,) = run("x = 1  # noqa: DBG101\n")
    assert "DBG101 did not run" in finding.message


def test_only_the_unused_code_of_a_list_is_reported():
    found = run("breakpoint()  # noqa: DBG106, DBG107\n")
    assert [(f.code, "DBG107" in f.message) for f in found] == [("DBG006", True)]


def test_the_finding_a_code_excuses_must_be_on_that_very_line():
    found = run("breakpoint()\nx = 1  # noqa: DBG106\n")
    assert sorted((f.code, f.line) for f in found) == [("DBG006", 2), ("DBG106", 1)]


def test_codes_of_other_linters_and_bare_noqa_are_not_reported():
    assert run("import os  # noqa: F401, E501\ny = 2  # noqa\n") == []


def test_a_noqa_inside_a_string_is_not_a_comment():
    assert run('s = "x  # noqa: DBG106"\n') == []


def test_the_rule_must_run_for_unused_codes_to_be_reported():
    assert run("x = 1  # noqa: DBG106\n", rules=(DebuggerCall,)) == []


def test_a_file_that_could_not_be_parsed_gets_no_unused_code_findings():
    found = run("breakpoint(  # noqa: DBG106\n", rules=(UnusedNoqa, DebuggerCall, ParseError))
    assert [f.code for f in found] == ["DBG001"]


def test_the_rule_is_off_by_default():
    assert UnusedNoqa.DEFAULT_ENABLED is False
    assert inspect_source("x = 1  # noqa: DBG106\n", "m.py") == []

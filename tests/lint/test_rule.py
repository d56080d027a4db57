"""The rule base class: well-formedness checks, description, and reporting through the context."""

from __future__ import annotations

import libcst as cst
import pytest

from driftscan.core.values import Severity
from driftscan.lint.engine import inspect_source
from driftscan.lint.rule import Invalid, Rule, Valid


class GoodRule(Rule):
    CODE = "ACME101"
    NAME = "no-frobnicate"
    MESSAGE = "frobnicate() called"
    SEVERITY = Severity.LOW
    INVALID = ["frobnicate()\n"]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "frobnicate":
            if node.args:
                self.report(node, "frobnicate() with arguments", severity=Severity.HIGH, artifact_pattern="/tmp/f*")
            else:
                self.report(node)


def test_a_well_formed_rule_has_no_problems():
    assert GoodRule.problems() == []
    assert GoodRule.describe() == "ACME101 no-frobnicate"


@pytest.mark.parametrize(("attrs", "problem"), [
    ({"CODE": "acme101"}, "code"),
    ({"CODE": "ACMEXY101"}, "code"),
    ({"CODE": "DBG10"}, "code"),
    ({"NAME": "NoFrob"}, "kebab-case"),
    ({"NAME": "no--frob"}, "kebab-case"),
    ({"NAME": "-frob"}, "kebab-case"),
    ({"MESSAGE": ""}, "MESSAGE"),
    ({"SEVERITY": "high"}, "SEVERITY"),
    ({"INVALID": ()}, "INVALID"),
])
def test_each_malformed_attribute_is_a_problem(attrs, problem):
    bad = type("Bad", (GoodRule,), attrs)
    problems = bad.problems()
    assert len(problems) == 1 and problem in problems[0]


def test_the_base_class_itself_lists_every_problem():
    assert len(Rule.problems()) == 4  # no code, no name, no message, no INVALID example


def test_report_uses_the_class_defaults():
    (finding,) = inspect_source("x = 1\nfrobnicate()\n", "m.py", [GoodRule])
    assert (finding.code, finding.name, finding.severity, finding.message) == (
        "ACME101", "no-frobnicate", Severity.LOW, "frobnicate() called")
    assert (finding.line, finding.column, finding.artifact_pattern) == (2, 1, None)


def test_report_overrides_message_severity_and_pattern():
    (finding,) = inspect_source("frobnicate(1)\n", "m.py", [GoodRule])
    assert (finding.severity, finding.message, finding.artifact_pattern) == (
        Severity.HIGH, "frobnicate() with arguments", "/tmp/f*")


def test_examples_default_to_nothing_expected_beyond_a_finding():
    example = Invalid("x\n")
    assert (example.line, example.column, example.severity, example.artifact_pattern) == (None, None, None, None)
    assert Valid("x\n").code == "x\n"


def test_defaults_of_a_new_rule():
    assert GoodRule.DEFAULT_ENABLED is True
    assert GoodRule.TRIGGER is None and GoodRule.AST_CHECK is None and GoodRule.AST_EXACT is None
    assert GoodRule.FILE_PROBLEM is None

"""Checking a rule against its own examples: what passes, and each way an example can fail."""

from __future__ import annotations

import libcst as cst
import pytest

from driftscan.core.values import Severity
from driftscan.lint.rule import Invalid, Rule, Valid
from driftscan.lint.testing import check_rule_examples, example_failures, iter_examples, normalize, source_of
from driftscan.lint.triggers import Trigger


class Frob(Rule):
    """Reports every call of ``frob``."""

    CODE = "ACME201"
    NAME = "frob-call"
    MESSAGE = "frob called"
    SEVERITY = Severity.MEDIUM
    TRIGGER = Trigger(rb"frob", (b"frob",))
    VALID = ["other()\n"]
    INVALID = [Invalid("x = 1\nfrob()\n", line=2, column=1, severity=Severity.MEDIUM, artifact_pattern="")]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("frob", "hidden_frob"):
            self.report(node)


def test_a_rule_whose_examples_behave_passes():
    check_rule_examples(Frob)


def test_plain_strings_are_normalised_by_their_list():
    assert normalize("a\n", invalid=False) == Valid("a\n")
    assert normalize("a\n", invalid=True) == Invalid("a\n")
    given = Invalid("a\n", line=3)
    assert normalize(given, invalid=False) is given
    assert list(iter_examples(Frob)) == [Valid("other()\n"), Frob.INVALID[0]]


def test_source_of_dedents_text_and_keeps_bytes():
    assert source_of(Valid("\n    x = 1\n    y = 2\n")) == b"x = 1\ny = 2\n"
    assert source_of(Valid(b"  raw\n")) == b"  raw\n"


def test_a_valid_example_with_a_finding_fails():
    (problem,) = example_failures(Frob, Valid("frob()\n"))
    assert problem.startswith("VALID example produced findings") and "1:1 ACME201" in problem


def test_an_invalid_example_without_a_finding_fails():
    # The trigger holds ("frob" is there), the rule finds nothing.
    assert example_failures(Frob, Invalid("frobnicate()\n")) == ["INVALID example produced no finding"]


@pytest.mark.parametrize("example", [
    Invalid("frob()\n", line=2),
    Invalid("frob()\n", column=3),
    Invalid("frob()\n", severity=Severity.HIGH),
    Invalid("frob()\n", artifact_pattern="/tmp/*"),
])
def test_an_invalid_example_whose_details_do_not_match_fails(example):
    (problem,) = example_failures(Frob, example)
    assert problem.startswith("no finding matches")


def test_an_unsound_trigger_is_caught():
    # ``hidden_frob`` is reported by the rule, and contains "frob": make a trigger that misses it.
    class Unsound(Frob):
        TRIGGER = Trigger(rb"\bfrob\b", (b"frob",))

    problems = example_failures(Unsound, Invalid("hidden_frob()\n"))
    assert any("TRIGGER does not match" in p for p in problems)
    assert any("differ with the prefilter" in p for p in problems)


def test_check_rule_examples_lists_every_problem_with_the_code():
    class Broken(Frob):
        NAME = "Broken Name"
        VALID = ["frob()\n"]
        INVALID = ["other()\n"]

    with pytest.raises(AssertionError) as raised:
        check_rule_examples(Broken)
    text = str(raised.value)
    assert text.startswith("ACME201 Broken Name:")
    assert "kebab-case" in text
    assert "VALID example #0" in text and "INVALID example #1" in text
    assert "    | frob()" in text and "    | other()" in text


def test_a_file_rule_is_checked_with_its_own_size_limit():
    from driftscan.lint.rules.file_too_large import FileTooLarge

    assert example_failures(FileTooLarge, Invalid("x = 1\n" * 20)) == []
    assert example_failures(FileTooLarge, Valid("x = 1\n")) == []

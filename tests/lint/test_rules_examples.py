"""Every built-in rule against its own VALID/INVALID examples (one test per example)."""

from __future__ import annotations

import pytest

from driftscan.lint.registry import builtin_rules
from driftscan.lint.rule import Valid
from driftscan.lint.testing import example_failures, iter_examples

RULES = builtin_rules()
CASES = [
    pytest.param(rule, example, id=f"{rule.CODE}-{'valid' if isinstance(example, Valid) else 'invalid'}-{i}")
    for rule in RULES
    for i, example in enumerate(iter_examples(rule))
]


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_example(rule, example):
    assert example_failures(rule, example) == []


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.CODE)
def test_rule_is_well_formed(rule):
    assert rule.problems() == []
    assert any(not isinstance(e, Valid) for e in iter_examples(rule))


def test_codes_and_names_are_unique_and_stable():
    codes = [r.CODE for r in RULES]
    names = [r.NAME for r in RULES]
    assert len(set(codes)) == len(codes) and len(set(names)) == len(names)
    # Codes are part of users' configuration: renumbering one is a breaking change.
    assert dict(zip(codes, names, strict=True)) == {
        "DBG001": "parse-error",
        "DBG002": "unreadable-file",
        "DBG003": "file-too-large",
        "DBG004": "too-complex",
        "DBG006": "unused-noqa",
        "DBG101": "debug-tensor-dump",
        "DBG102": "tensor-save-call",
        "DBG103": "debug-counter",
        "DBG104": "one-shot-flag",
        "DBG105": "shape-conditional-debug",
        "DBG106": "debugger-call",
        "DBG107": "debugger-import",
        "DBG108": "tmp-write",
        "DBG109": "print-call",
    }


def test_one_rule_per_module():
    modules = [r.__module__ for r in RULES]
    assert len(set(modules)) == len(modules)

"""Check a rule against its own examples — for driftscan's rules and for plugin authors.

    from driftscan.lint.testing import check_rule_examples
    def test_my_rule():
        check_rule_examples(MyRule)

Every INVALID example must produce at least one finding of the rule (matching the expected
line, column, severity and artifact pattern when given), must match the rule's prefilter
trigger, and must give the same findings with and without the prefilter. Every VALID example
must produce no finding of the rule.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

from ..core.values import Finding
from .engine import inspect_source
from .files import MAX_FILE_BYTES
from .rule import Example, Invalid, Rule, Valid
from .triggers import Memo


def normalize(example: Example, invalid: bool) -> Valid | Invalid:
    if isinstance(example, (Valid, Invalid)):
        return example
    return Invalid(example) if invalid else Valid(example)


def source_of(example: Valid | Invalid) -> bytes:
    code = example.code
    if isinstance(code, bytes):
        return code
    return textwrap.dedent(code).lstrip("\n").encode("utf-8")


def iter_examples(rule: type[Rule]) -> Iterator[Valid | Invalid]:
    for example in rule.VALID:
        yield normalize(example, invalid=False)
    for example in rule.INVALID:
        yield normalize(example, invalid=True)


def _describe(finding: Finding) -> str:
    where = f"{finding.line}:{finding.column} {finding.code} {finding.severity.value}"
    return f"{where} {finding.message!r} pattern={finding.artifact_pattern!r}"


def example_failures(rule: type[Rule], example: Valid | Invalid) -> list[str]:
    """What is wrong (empty: the example behaves as declared)."""
    source = source_of(example)
    max_bytes = rule.EXAMPLE_MAX_BYTES or MAX_FILE_BYTES
    findings = inspect_source(source, "<example>", [rule], max_bytes=max_bytes)
    own = [f for f in findings if f.code == rule.CODE]
    shown = "; ".join(_describe(f) for f in own) or "none"
    if isinstance(example, Valid):
        return [f"VALID example produced findings: {shown}"] if own else []
    problems = []
    if not own:
        problems.append("INVALID example produced no finding")
    elif not any(_matches(f, example) for f in own):
        want = {k: v for k, v in vars(example).items() if k != "code" and v is not None}
        problems.append(f"no finding matches {want}; got: {shown}")
    if rule.TRIGGER is not None and not rule.TRIGGER.matches(source, Memo()):
        problems.append("the rule's TRIGGER does not match this INVALID example (unsound prefilter)")
    filtered = inspect_source(source, "<example>", [rule], prefilter=True, max_bytes=max_bytes)
    if filtered != findings:
        problems.append("findings differ with the prefilter on")
    return problems


def _matches(finding: Finding, example: Invalid) -> bool:
    if example.line is not None and finding.line != example.line:
        return False
    if example.column is not None and finding.column != example.column:
        return False
    if example.severity is not None and finding.severity != example.severity:
        return False
    if example.artifact_pattern is not None and finding.artifact_pattern != (example.artifact_pattern or None):
        return False
    return True


def check_rule_examples(rule: type[Rule]) -> None:
    """Raise AssertionError listing every example of ``rule`` that misbehaves."""
    problems = list(rule.problems())
    for index, example in enumerate(iter_examples(rule)):
        for problem in example_failures(rule, example):
            kind = "VALID" if isinstance(example, Valid) else "INVALID"
            code = textwrap.indent(source_of(example).decode("utf-8", "replace"), "    | ")
            problems.append(f"{kind} example #{index}: {problem}\n{code}")
    if problems:
        raise AssertionError(f"{rule.CODE} {rule.NAME}:\n" + "\n".join(problems))

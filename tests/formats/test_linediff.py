"""The budgeted matcher: difflib's answer whenever it finishes, DiffTooLarge past the budget."""

from __future__ import annotations

import difflib
import random

import pytest

from driftscan.formats.linediff import Budget, BudgetedMatcher, DiffTooLarge, lines_changed, unified_diff_lines


def _pairs(count: int = 60):
    draw = random.Random(7)
    for _ in range(count):
        alphabet = [f"line {i}\n" for i in range(draw.choice([2, 5, 40, 400]))]
        a = [draw.choice(alphabet) for _ in range(draw.randrange(0, 300))]
        b = list(a)
        for _ in range(draw.randrange(0, 8)):
            at = draw.randrange(len(b) + 1)
            b[at:at + draw.randrange(0, 4)] = [draw.choice(alphabet) for _ in range(draw.randrange(0, 4))]
        if a and draw.random() < 0.2:
            a[-1] = a[-1].rstrip("\n")
        yield a, b


@pytest.mark.parametrize("autojunk", [True, False])
def test_the_matcher_answers_as_difflib_does(autojunk):
    for a, b in _pairs():
        ours = BudgetedMatcher(a, b, autojunk=autojunk).get_opcodes()
        assert ours == difflib.SequenceMatcher(None, a, b, autojunk=autojunk).get_opcodes()


def test_the_unified_diff_is_difflib_s_byte_for_byte():
    for a, b in _pairs():
        for n in (0, 3):
            assert unified_diff_lines(a, b, "a/x", "b/x", n) == list(difflib.unified_diff(a, b, "a/x", "b/x", n=n))


def test_past_the_budget_the_diff_is_too_large_with_bounds_on_the_lines_changed():
    a = [f"v{i % 7}\n" for i in range(200)]
    b = [line for i, old in enumerate(a) for line in (old, f"t{i}\n")]
    with pytest.raises(DiffTooLarge) as caught:
        BudgetedMatcher(a, b, autojunk=False, budget=Budget(a, b, steps=1000)).get_opcodes()
    assert caught.value.changed == (200, 598)
    assert str(caught.value).startswith("diff too large: 200 to 598 lines changed")


def test_lines_changed_bounds():
    assert lines_changed(["a\n", "b\n"], ["a\n", "b\n"]) == (0, 0)
    assert lines_changed(["a\n", "b\n", "c\n"], ["a\n", "c\n"]) == (1, 1)
    assert lines_changed(["a\n", "b\n"], ["b\n", "a\n"]) == (0, 4)

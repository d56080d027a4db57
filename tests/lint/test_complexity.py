"""The byte scan that decides whether a file is safe to hand to libcst: depth, chains, strings."""

from __future__ import annotations

import pytest

from driftscan.lint.complexity import DEEP_FREE, MAX_CHAIN, MAX_DEPTH, measure, refusal


def brackets(depth: int, open_: str = "(", close: str = ")") -> bytes:
    return f"x = {open_ * depth}1{close * depth}\n".encode()


def test_plain_code_is_shallow_and_accepted():
    m = measure(b"def f(a, b):\n    return [a, (b, {'k': 1})]\n")
    assert m.refused is None
    assert m.depth == 3


@pytest.mark.parametrize(("open_", "close"), [("(", ")"), ("[", "]"), ("{", "}")])
def test_depth_counts_every_bracket_kind(open_, close):
    assert measure(brackets(10, open_, close)).depth == 10


def test_the_depth_limit_is_inclusive():
    assert refusal(brackets(MAX_DEPTH)) is None
    assert refusal(brackets(MAX_DEPTH + 1)) is not None


def test_brackets_in_strings_and_comments_are_not_nesting():
    data = b"x = '((((('  # [[[[[[\ny = \"\"\"{{{{\n]]]]\"\"\"\n"
    assert measure(data).depth == 0


def test_an_escaped_quote_does_not_end_a_string():
    assert measure(b"x = 'it\\'s ((('\n").depth == 0


def test_fstring_replacement_fields_are_followed_into():
    m = measure(b"x = f'{(a, (b))}'\n")
    # The f-string, its field and the two parentheses inside.
    assert m.depth >= 3
    assert measure(b"x = '{(a, (b))}'\n").depth == 0


def test_a_long_chain_is_refused_and_a_short_one_accepted():
    short = ("x = " + "+".join(["a"] * 100) + "\n").encode()
    long = ("x = " + "+".join(["a"] * (MAX_CHAIN // 2 + 10)) + "\n").encode()
    assert refusal(short) is None
    assert measure(short).chain < MAX_CHAIN
    assert refusal(long) is not None


def test_commas_split_a_level_into_segments():
    # The same bytes as one chain would be refused; as a list of items they are not.
    items = ("x = [" + ", ".join(["a"] * 3000) + "]\n").encode()
    assert refusal(items) is None


def test_custom_limits_are_honoured():
    assert measure(brackets(5), max_depth=4).refused is not None
    assert measure(brackets(5), max_depth=5).refused is None


def test_code_nested_past_deep_free_is_accepted_when_small():
    assert refusal(brackets(DEEP_FREE + 5)) is None


def test_an_unterminated_string_ends_at_its_line():
    # A one-quote string cannot span lines: the brackets after it are code again.
    assert measure(b"x = 'abc\n((1))\n").depth == 2
    assert measure(b"x = '''abc\n((1))").depth == 0

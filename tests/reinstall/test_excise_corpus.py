"""Every shape of fixtures/debug_shapes.py: excise, on all the DBG1 rules' findings, gives the expected file."""

from __future__ import annotations

import ast

import pytest

from driftscan.reinstall.excise import excise
from driftscan.lint import inspect_source, load_rules, select_rules
from fixtures.debug_shapes import SHAPES, Shape

DEBUG_RULES = select_rules(load_rules(plugins=False), ["DBG1"])


def findings(text: str) -> list[tuple[int, int]]:
    return [(f.line, f.column) for f in inspect_source(text, "m.py", DEBUG_RULES) if f.code.startswith("DBG1")]


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_shape(shape: Shape):
    found = findings(shape.ours)
    assert found, "the rules find no debug code in the shape"
    assert not findings(shape.base), "the original holds debug code"
    result = excise(shape.base, shape.ours, found, keep_names=shape.keep_names)
    if shape.expected is None:
        assert result.text is None and shape.refused in (result.refused or ""), result
        return
    assert result.refused is None, result
    assert result.text == shape.expected, result
    ast.parse(result.text)
    assert findings(result.text) == [], "debug code left in the result"
    again = excise(shape.base, result.text, findings(result.text), keep_names=shape.keep_names)
    assert again.text == result.text and again.removed == (), again


def test_the_shapes_are_distinct_and_each_module_parses():
    assert len({s.name for s in SHAPES}) == len(SHAPES)
    for s in SHAPES:
        for text in (s.base, s.ours, s.expected):
            if text is not None:
                ast.parse(text)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_shape_with_crlf_lines(shape: Shape):
    base, ours = shape.base.replace("\n", "\r\n"), shape.ours.replace("\n", "\r\n")
    result = excise(base, ours, findings(ours), keep_names=shape.keep_names)
    assert result.text == (shape.expected.replace("\n", "\r\n") if shape.expected is not None else None), result

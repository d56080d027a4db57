"""Start positions of reported nodes: the same start libcst's PositionProvider gives."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from driftscan.lint.positions import node_starts

SOURCES = [
    "x = f(a, b)\n",
    "# comment\n\n\ndef g():\n    '''doc'''\n    return (\n        h(1)\n    )\n",
    "if a:\n    pass\nelif b:\n    y = [i for i in z]\nelse:\n    z = {'k': (lambda q: q)(2)}\n",
    "s = f'''\nline {x}\n''' + g(y)\nclass C(B):\n    @deco\n    def m(self): return self.n\n",
    "a = 1\r\nb = f(\r\n  2)\r\nc = 3\r\n",
    "x = 'é☃'; y = call(x)\n",
]


def wanted_nodes(module: cst.Module) -> list[cst.CSTNode]:
    nodes = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node):
            if isinstance(node, (cst.Call, cst.Name, cst.If, cst.FunctionDef, cst.ClassDef, cst.Assign,
                                 cst.SimpleString, cst.FormattedString, cst.Lambda)):
                nodes.append(node)
            return True

    module.visit(Collect())
    return nodes


@pytest.mark.parametrize("source", SOURCES)
def test_starts_agree_with_libcsts_position_provider(source):
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    nodes = wanted_nodes(module)
    assert nodes
    got = node_starts(module, nodes)
    for node in nodes:
        start = positions[node].start
        assert got[id(node)] == (start.line, start.column), cst.Module([]).code_for_node(node)


def test_only_the_asked_nodes_are_returned():
    module = cst.parse_module("a = f(1)\nb = g(2)\n")
    call = module.body[1].body[0].value
    assert node_starts(module, [call]) == {id(call): (2, 4)}


def test_no_nodes_gives_nothing():
    assert node_starts(cst.parse_module("x = 1\n"), []) == {}


def test_a_node_not_in_the_module_is_left_out():
    module = cst.parse_module("x = 1\n")
    assert node_starts(module, [cst.Name("elsewhere")]) == {}


def test_columns_count_code_points_not_bytes():
    module = cst.parse_module("s = 'é☃' + f(x)\n")
    call = module.body[0].body[0].value.right
    assert node_starts(module, [call]) == {id(call): (1, 11)}


def test_a_decorated_function_starts_at_def_after_its_decorators():
    module = cst.parse_module(textwrap.dedent("""
        @decorator
        def f():
            pass
    """))
    func = module.body[0]
    # The leading blank line, then the decorator: ``def`` is on line 3.
    assert node_starts(module, [func])[id(func)] == (3, 0)

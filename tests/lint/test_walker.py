"""The single walk that drives every rule: order of visits, the ancestor stack, skipped fields."""

from __future__ import annotations

import libcst as cst

from driftscan.lint import walker


class Recorder:
    def __init__(self, stack):
        self.stack = stack
        self.events = []

    def visit_Call(self, node):
        self.events.append(("visit", cst.Module([]).code_for_node(node.func), len(self.stack)))

    def leave_Call(self, node):
        self.events.append(("leave", cst.Module([]).code_for_node(node.func), len(self.stack)))

    def visit_Name(self, node):
        assert self.stack[-1] is node  # the visited node is last on the stack
        self.events.append(("name", node.value))


def test_visits_in_source_order_and_leaves_after_children():
    module = cst.parse_module("f(g(a))\nh(b)\n")
    stack = []
    rec = Recorder(stack)
    walker.walk(module, stack, [rec])
    kinds = [e[:2] for e in rec.events]
    assert kinds == [
        ("visit", "f"), ("name", "f"), ("visit", "g"), ("name", "g"), ("name", "a"), ("leave", "g"),
        ("leave", "f"), ("visit", "h"), ("name", "h"), ("name", "b"), ("leave", "h"),
    ]
    assert stack == []


def test_the_stack_holds_the_ancestors_when_a_node_is_visited():
    module = cst.parse_module("def f():\n    g(x)\n")
    stack = []
    seen = []

    class V:
        def visit_Call(self, node):
            seen.append([type(n).__name__ for n in stack])

    walker.walk(module, stack, [V()])
    (chain,) = seen
    assert chain[0] == "Module" and "FunctionDef" in chain and chain[-1] == "Call"


def test_several_visitors_are_called_in_order_for_each_node():
    module = cst.parse_module("x = 1\n")
    log = []

    class A:
        def visit_Assign(self, node):
            log.append("A")

    class B:
        def visit_Assign(self, node):
            log.append("B")

    walker.walk(module, [], [A(), B()])
    assert log == ["A", "B"]


def test_handler_table_only_takes_methods_named_after_a_node():
    class V:
        def visit_Call(self, node): ...
        def visit_helper(self): ...
        def leave_If(self, node): ...

    v = V()
    assert set(walker.handler_table([v], "visit_")) == {"Call"}
    assert set(walker.handler_table([v], "leave_")) == {"If"}


def test_whitespace_and_punctuation_fields_are_skipped():
    fields = walker.child_fields(cst.Call)
    assert "func" in fields and "args" in fields
    assert not any(f.startswith("whitespace") or f in ("lpar", "rpar") for f in fields)


def test_iter_children_yields_nodes_in_field_order():
    call = cst.parse_expression("f(a, b=c)")
    children = list(walker.iter_children(call))
    assert children[0] is call.func
    assert [type(c).__name__ for c in children[1:]] == ["Arg", "Arg"]


def test_a_deeply_nested_expression_does_not_exhaust_the_recursion_limit():
    expr = cst.Name("x")
    for _ in range(5000):
        expr = cst.UnaryOperation(operator=cst.Minus(), expression=expr)
    module = cst.Module([cst.SimpleStatementLine([cst.Expr(expr)])])
    names = []

    class V:
        def visit_Name(self, node):
            names.append(node.value)

    walker.walk(module, [], [V()])
    assert names == ["x"]

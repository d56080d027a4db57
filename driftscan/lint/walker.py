"""One walk over a parsed module that drives every rule at once.

libcst's own ``visit`` rebuilds each node from its visited children, which costs about as
much as parsing. Rules only read the tree, so this walker follows the dataclass fields
directly, skips the whitespace and punctuation fields no rule looks at, and dispatches
``visit_<Node>``/``leave_<Node>`` to every rule from one table — one traversal per file, as
with libcst's batched visitors, at a fraction of the cost. It is iterative, so deeply nested
expressions cannot exhaust Python's recursion limit.

The context's ``stack`` holds the ancestors of the node being visited (the node itself last).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import libcst as cst

# Fields that only hold whitespace, comments or punctuation.
_SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "leading_lines",
        "lines_after_decorators", "header", "footer", "comma", "semicolon",
        "trailing_whitespace", "newline", "colon", "equal", "dot",
        "asynchronous", "default_indent", "default_newline", "encoding",
        "has_trailing_newline", "indent", "empty_lines",
    }
)
_child_fields: dict[type, tuple[str, ...]] = {}


def child_fields(node_type: type) -> tuple[str, ...]:
    fields = _child_fields.get(node_type)
    if fields is None:
        fields = _child_fields[node_type] = tuple(
            f.name
            for f in dataclasses.fields(node_type)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        )
    return fields


# CSTNode is an ABC, so isinstance() on it is slow; the walk asks per type, once.
_is_node_type: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    t = type(value)
    flag = _is_node_type.get(t)
    if flag is None:
        flag = _is_node_type[t] = issubclass(t, cst.CSTNode)
    return flag


def iter_children(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """The children a rule can care about, in field order."""
    for name in child_fields(type(node)):
        value = getattr(node, name)
        if _is_node(value):
            yield value
        elif type(value) is tuple or type(value) is list:
            for item in value:
                if _is_node(item):
                    yield item


Handler = Callable[[Any], Any]


def handler_table(objects: Iterable[object], prefix: str) -> dict[str, list[Handler]]:
    """``{"Call": [rule1.visit_Call, ...]}`` for every ``<prefix><Node>`` method."""
    table: dict[str, list[Handler]] = {}
    for obj in objects:
        for attr in dir(type(obj)):
            if attr.startswith(prefix) and attr[len(prefix):][:1].isupper():
                table.setdefault(attr[len(prefix):], []).append(getattr(obj, attr))
    return table


_LEAVE = object()


def walk(module: cst.Module, stack: list[cst.CSTNode], visitors: Iterable[object]) -> None:
    """Walk ``module`` once, calling each visitor's ``visit_X``/``leave_X`` methods."""
    visitors = list(visitors)
    on_visit = handler_table(visitors, "visit_")
    on_leave = handler_table(visitors, "leave_")
    todo: list[object] = [module]
    fields_cache = _child_fields
    is_node = _is_node_type
    while todo:
        item = todo.pop()
        if item is _LEAVE:
            node = stack[-1]
            handlers = on_leave.get(type(node).__name__)
            if handlers:
                for handler in handlers:
                    handler(node)
            stack.pop()
            continue
        node = item  # type: ignore[assignment]  # not _LEAVE: a node
        stack.append(node)
        node_type = type(node)
        handlers = on_visit.get(node_type.__name__)
        if handlers:
            for handler in handlers:
                handler(node)
        todo.append(_LEAVE)
        fields = fields_cache.get(node_type)
        if fields is None:
            fields = child_fields(node_type)
        children: list[object] = []
        for name in fields:
            value = getattr(node, name)
            value_type = type(value)
            if value_type is tuple or value_type is list:
                for item in value:
                    flag = is_node.get(type(item))
                    if flag is None:
                        flag = _is_node(item)
                    if flag:
                        children.append(item)
            else:
                flag = is_node.get(value_type)
                if flag is None:
                    flag = _is_node(value)
                if flag:
                    children.append(value)
        children.reverse()
        todo.extend(children)

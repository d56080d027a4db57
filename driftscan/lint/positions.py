"""Start positions of a few nodes, computed only for files that have findings.

libcst's ``PositionProvider`` records a range for every node of the module, which costs about
twice the parse. A scan reports a handful of nodes in a small minority of files, so instead
this re-generates the code with a codegen state that only counts lines and columns and
records where the *reported* nodes start, stopping as soon as the last one is done.

The start is the same one ``PositionProvider`` gives (the syntactic start: after leading
blank lines and comments, after an opening parenthesis). Lines are 1-based; columns are
0-based code-point offsets here and made 1-based by the engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE_RE = re.compile(r"\r\n?|\n")


class _Done(Exception):
    pass


class _StartFinder(CodegenState):
    def __init__(self, module: cst.Module, targets: set[int]):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.targets = targets
        self.remaining = len(targets)
        self.line = 1
        self.column = 0
        self.syntactic: dict[int, tuple[int, int]] = {}
        self.inclusive: dict[int, tuple[int, int]] = {}

    # Only positions are tracked; the generated text itself is not kept.
    def add_token(self, value: str) -> None:
        if "\r" in value:
            parts = _NEWLINE_RE.split(value)
            if len(parts) > 1:
                self.line += len(parts) - 1
                self.column = len(parts[-1])
            else:
                self.column += len(value)
            return
        newlines = value.count("\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - value.rfind("\n") - 1
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def pop_trailing_newline(self) -> None:
        pass

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            self.inclusive.setdefault(id(node), (self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            self.remaining -= 1
            if self.remaining <= 0:
                raise _Done

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> Iterator[None]:
        if start_node is None and id(node) in self.targets:
            self.syntactic.setdefault(id(node), (self.line, self.column))
        yield


def node_starts(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int]]:
    """``{id(node): (line, column0)}`` for each of ``nodes`` found in ``module``.

    libcst's code generation is recursive; past an expression nested deeper than Python's
    recursion limit the remaining nodes are left out rather than crashing the scan."""
    targets = {id(n) for n in nodes}
    if not targets:
        return {}
    state = _StartFinder(module, targets)
    try:
        module._codegen(state)
    except _Done:
        pass
    except RecursionError:
        pass  # an absurdly nested expression: keep the positions found before it
    out = dict(state.inclusive)
    out.update(state.syntactic)
    return out

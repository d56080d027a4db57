"""Whether a patch's change and a new release's change to a Python file are the same code.

An upstream fix often lands as the patch's own change reformatted (a tuple split over lines, a
trailing comma added). Line by line that is a conflict; as a program it is not. A conflict block
is settled as the new release has it when the file with that block taken from the patch parses to
the same syntax tree as the file with it taken from the release, and no comment of the patch's
side is lost. Anything that does not parse, or is too large to parse cheaply, stays a conflict.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections import Counter
from collections.abc import Sequence

from ..formats.patch import MergePart, blocks, resolve

MAX_SOURCE = 1 << 20  # characters: a larger file keeps its conflicts (parsing it per block costs too much)
MAX_BLOCKS = 50  # conflict blocks tried per file; the rest stay conflicts
PARSE_BUDGET = 8 << 20  # characters parsed per file in all: a large file with many blocks tries fewer


def is_python(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


def _tree(text: str) -> str | None:
    try:
        return ast.dump(ast.parse(text), annotate_fields=True, include_attributes=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _comments(text: str) -> Counter[str] | None:
    try:
        return Counter(tok.string.strip() for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                       if tok.type == tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class ParseBudget:
    """The characters of source the check may still parse for one file, shared by every call made
    for it (each hunk alone, then the whole file): many conflicting hunks cost no more than one."""

    def __init__(self, chars: int | None = None) -> None:
        self.left = PARSE_BUDGET if chars is None else chars

    def take(self, text: str) -> bool:
        self.left -= len(text)
        return self.left >= 0


def same_code(parts: Sequence[MergePart], budget: ParseBudget | None = None) -> set[int]:
    """The conflict blocks (0-based) of a Python file's merge where the patch's side says what the
    release's side says: the whole file parses to the same syntax tree with either, and every
    comment of the patch's side is kept."""
    found = blocks(parts)
    theirs = resolve(parts, lambda i: False)
    budget = budget or ParseBudget()
    if not found or len(theirs) > MAX_SOURCE or not budget.take(theirs):
        return set()
    tree, comments = _tree(theirs), _comments(theirs)
    if tree is None or comments is None:
        return set()
    same = set()
    for number in range(min(len(found), MAX_BLOCKS)):
        ours = resolve(parts, lambda i, n=number: i == n)  # type: ignore[misc]
        if len(ours) > MAX_SOURCE or not budget.take(ours):
            break
        if _tree(ours) != tree:
            continue
        kept = _comments(ours)
        if kept is not None and not kept - comments:
            same.add(number)
    return same

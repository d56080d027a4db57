"""difflib's line matching within a stated budget of work.

``difflib.SequenceMatcher`` is exact but not linear: each ``find_longest_match`` walks, for every
line of its stretch of ``a``, every position of that line in ``b``, and an edit whose two sides
share many repeated lines but no runs of them (a line inserted after every line of a file drawn
from a few dozen distinct lines) calls it once per line. A 72 KB file edited that way took more
than a minute; a larger one hours. ``BudgetedMatcher`` gives the same answer as difflib whenever
it finishes, and counts that work before each call: past the budget it raises ``DiffTooLarge``
(the caller states "diff too large" instead of the diff), so a diff costs at most about a second.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence

from driftscan.core.errors import DriftscanError

__all__ = ["DIFF_BUDGET", "BudgetedMatcher", "DiffTooLarge", "lines_changed"]

# Steps (a line of ``a`` visited, or one position of it in ``b``) all matching of one diff may take:
# about a second of CPU at 0.3 µs a step. Real edits of source files stay far below it: the unique lines of an edit
# anchor the alignment, and difflib then only walks the stretches between them.
DIFF_BUDGET = 3_000_000
# Steps allowed per line of the two texts on top of the budget, so that a long file edited as
# people edit is not refused for its length alone.
PER_LINE_BUDGET = 100


def lines_changed(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """Bounds (at least, at most) on the lines a diff of ``a`` and ``b`` removes and adds, linear
    whatever the texts: lines one side has more copies of than the other; lines outside the
    common first and last lines."""
    left, right = Counter(a), Counter(b)
    low = sum((left - right).values()) + sum((right - left).values())
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    return low, len(a) + len(b) - 2 * (head + tail)


class DiffTooLarge(DriftscanError):
    """Matching two texts would take more work than the diff's budget."""

    def __init__(self, changed: tuple[int, int], budget: int) -> None:
        self.changed = changed
        self.budget = budget
        low, high = changed
        count = f"{low}" if low == high else f"{low} to {high}" if low else f"up to {high}"
        # render/text.py and render/markdown.py recognise a diff that is this message by its start.
        super().__init__(f"diff too large: {count} lines changed (matching them would take more than the "
                         f"{budget} steps a diff is given)")


class Budget:
    """Work left for one diff, shared by every matcher it runs."""

    def __init__(self, a: Sequence[str], b: Sequence[str], steps: int | None = None) -> None:
        self.a, self.b = a, b
        self.total = steps if steps is not None else DIFF_BUDGET + PER_LINE_BUDGET * (len(a) + len(b))
        self.left = self.total

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise DiffTooLarge(lines_changed(self.a, self.b), self.total)


class BudgetedMatcher(difflib.SequenceMatcher[str]):
    """``difflib.SequenceMatcher`` (no junk function) that charges each ``find_longest_match`` to a
    ``Budget`` before running it; DiffTooLarge when the budget runs out."""

    def __init__(self, a: Sequence[str], b: Sequence[str], autojunk: bool = True, budget: Budget | None = None) -> None:
        self._prefix: list[int] | None = None
        # set by difflib (typeshed does not declare them)
        self.a: Sequence[str]
        self.b2j: dict[str, list[int]]
        super().__init__(None, a, b, autojunk=autojunk)
        self.budget = budget if budget is not None else Budget(a, b)

    def set_seq1(self, a: Sequence[str]) -> None:
        self._prefix = None
        super().set_seq1(a)

    def set_seq2(self, b: Sequence[str]) -> None:
        self._prefix = None
        super().set_seq2(b)

    def find_longest_match(self, alo: int = 0, ahi: int | None = None, blo: int = 0,
                           bhi: int | None = None) -> difflib.Match:
        if ahi is None:
            ahi = len(self.a)
        if self._prefix is None:
            # prefix[i]: the positions in b of a[:i]'s lines, counted with what difflib keeps of b
            # (popular lines dropped): what a call over a[alo:ahi] walks at most.
            prefix = [0]
            b2j = self.b2j
            for line in self.a:
                prefix.append(prefix[-1] + len(b2j.get(line, ())) + 1)
            self._prefix = prefix
        self.budget.spend(self._prefix[ahi] - self._prefix[alo])
        return super().find_longest_match(alo, ahi, blo, bhi)


def _format_range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start if not length else start + 1},{length}"


def unified_diff_lines(a: Sequence[str], b: Sequence[str], fromfile: str, tofile: str, n: int = 3) -> list[str]:
    """``difflib.unified_diff(a, b, fromfile, tofile, n=n)`` as a list, byte for byte, with the
    matching under a ``Budget``; DiffTooLarge past it."""
    out: list[str] = []
    for group in BudgetedMatcher(a, b).get_grouped_opcodes(n):
        if not out:
            out += [f"--- {fromfile}\n", f"+++ {tofile}\n"]
        first, last = group[0], group[-1]
        out.append(f"@@ -{_format_range(first[1], last[2])} +{_format_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                out += ["-" + line for line in a[i1:i2]]
            if tag in ("replace", "insert"):
                out += ["+" + line for line in b[j1:j2]]
    return out

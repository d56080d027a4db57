"""``scan --statistics``: one line per rule code with its count, most frequent first (as ruff's)."""

from __future__ import annotations

from collections import Counter

from ..lint import ScanResult


def render_statistics(result: ScanResult) -> str:
    counts = Counter((f.code, f.name) for _, f in result.findings)
    if not counts:
        return "no findings\n"
    width = len(str(max(counts.values())))
    lines = [f"{n:>{width}}  {code}  {name}" for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(lines) + "\n"

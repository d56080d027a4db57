"""Counts and sizes as a reader says them: "1 file", "2 copies", "3.2 KB" (never "file(s)" or
"0.0 MB" for a few kilobytes). Every text renderer prints counts and sizes through these."""

from __future__ import annotations

_IRREGULAR = {"copy": "copies", "patch": "patches", "entry": "entries"}
_UNITS = (("KB", 1e3), ("MB", 1e6), ("GB", 1e9))  # decimal, as the sizes driftscan printed before


def plural(count: int, noun: str) -> str:
    """``noun`` for ``count`` of it: "file" → "files", "copy" → "copies", "patch" → "patches"."""
    if count == 1:
        return noun
    if noun in _IRREGULAR:
        return _IRREGULAR[noun]
    return noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")


def count(n: int, noun: str) -> str:
    """"1 file", "2 files", "1,234 copies"."""
    return f"{n:,} {plural(n, noun)}"


def size(n: float) -> str:
    """A size in bytes, readable at every scale: "512 bytes", "3.2 KB", "1.5 MB", "2.0 GB"."""
    if n < 1000:
        whole = int(n)
        return f"{whole} byte{'' if whole == 1 else 's'}"
    for unit, scale in _UNITS:
        if n / scale < 999.95 or unit == "GB":  # 999,999 bytes is "1.0 MB", not "1000.0 KB"
            return f"{n / scale:.1f} {unit}"
    raise AssertionError("unreachable")


def size_change(old: int, new: int) -> str:
    """A size that changed, readable: "1.2 KB → 3.4 KB"; bytes, when the readable sizes would read
    the same ("1,234 → 1,236 bytes", never "1.2 KB → 1.2 KB")."""
    before, after = size(old), size(new)
    return f"{before} → {after}" if before != after or old == new else f"{old:,} → {new:,} bytes"

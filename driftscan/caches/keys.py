"""The one way a cache or memo names what it remembers from several parts.

``cache_key(*parts)`` encodes the parts as canonical JSON (strings, numbers, booleans, None,
lists and tuples of them, dicts with string keys, sorted) and hashes that. No ``repr``: an
object whose repr changes between Python versions, or two objects that repr alike, cannot make
two different selections share a key; anything else is refused. A key written by an older
driftscan simply misses.
"""

from __future__ import annotations

import hashlib
import json

_VERSION = "driftscan-cache-key-1"  # changes every key when the encoding changes


def _checked(part: object) -> object:
    if part is None or isinstance(part, (str, bool, int, float)):
        return part
    if isinstance(part, (list, tuple)):
        return [_checked(p) for p in part]
    if isinstance(part, dict) and all(isinstance(k, str) for k in part):
        return {k: _checked(v) for k, v in part.items()}
    raise TypeError(f"a cache key part must be JSON data, not {type(part).__name__}")


def cache_key(*parts: object) -> str:
    """The sha256, in hex, of ``parts`` as canonical JSON."""
    text = json.dumps([_VERSION, _checked(list(parts))], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()

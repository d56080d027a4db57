"""cache_key: one name per set of parts, canonical and never built from repr."""

from __future__ import annotations

import sys

import pytest

from driftscan.caches.keys import cache_key

PARTS = ("audit", sys.version, list(sys.path), ["DBG1"], [], True, 65536, ["/a/b.py", "/a/\udcff.py"])


def test_the_same_parts_give_the_same_key():
    assert cache_key(*PARTS) == cache_key(*[list(p) if isinstance(p, list) else p for p in PARTS])
    assert cache_key("x", {"b": 1, "a": 2}) == cache_key("x", {"a": 2, "b": 1})  # dict order is not part of it
    assert len(cache_key(*PARTS)) == 64 and int(cache_key(*PARTS), 16) >= 0


@pytest.mark.parametrize("i", range(len(PARTS)))
def test_changing_any_part_changes_the_key(i):
    changed = list(PARTS)
    p = changed[i]
    changed[i] = (not p) if isinstance(p, bool) else p + 1 if isinstance(p, int) else \
        [*p, "more"] if isinstance(p, list) else p + "x"
    assert cache_key(*changed) != cache_key(*PARTS)


def test_parts_that_would_print_alike_stay_apart():
    assert cache_key("1") != cache_key(1)
    assert cache_key(True) != cache_key(1)
    assert cache_key(None) != cache_key("None")
    assert cache_key("a,b") != cache_key("a", "b")
    assert cache_key(["a", "b"]) != cache_key("a", "b")
    assert cache_key("a\0b") != cache_key("a", "b")


@pytest.mark.parametrize("part", [object(), {1: "x"}, b"bytes", {"a", "b"}])
def test_a_part_that_is_not_json_data_is_refused(part):
    with pytest.raises(TypeError, match="JSON data"):
        cache_key("x", part)
